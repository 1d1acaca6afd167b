//! Realistic scripts a model writes against the code-mode API. The validator
//! must accept every one of them: a rule that trips on ordinary data
//! processing costs a retry on every execution.

use quiver_executor::sandbox::validate::{ValidationLimits, validate};

/// `(name, code)`.
const BENIGN: &[(&str, &str)] = &[
    (
        "create an issue",
        r#"const issue = await tools.github.create_issue({
  owner: "acme",
  repo: "widgets",
  title: "Crash on start",
  body: "Steps to reproduce:\n1. start\n2. crash",
});
return { number: issue.number, url: issue.html_url };"#,
    ),
    (
        "call by exposed name",
        r#"const res = await tools.call("weather__forecast", { city: "Berlin", days: 3 });
return res;"#,
    ),
    (
        "parallel calls",
        r#"const cities = ["Paris", "Tokyo", "Lima"];
const results = await Promise.all(
  cities.map(async (city) => {
    const r = await tools.weather.current({ city });
    return { city, temp: r.temperature };
  }),
);
return results;"#,
    ),
    (
        "sequential for-of with accumulation",
        r#"let total = 0;
const pages = [];
for (const id of [1, 2, 3]) {
  const page = await tools.notion.get_page({ id });
  pages.push(page.title);
  total += page.word_count ?? 0;
}
return { pages, total };"#,
    ),
    (
        "map filter reduce",
        r#"const orders = await tools.shop.list_orders({ status: "paid" });
const revenue = orders
  .filter((o) => o.currency === "EUR")
  .map((o) => o.amount)
  .reduce((sum, x) => sum + x, 0);
return Math.round(revenue * 100) / 100;"#,
    ),
    (
        "JSON round trip with try/catch",
        r#"const raw = await tools.fs.read_file({ path: "config.json" });
let config;
try {
  config = JSON.parse(raw.text);
} catch (err) {
  console.log("bad json:", err.message);
  config = {};
}
return JSON.stringify(config, null, 2);"#,
    ),
    (
        "template strings",
        r#"const user = await tools.crm.get_user({ id: 7 });
const line = `${user.first} ${user.last} <${user.email}> — ${user.orders.length} orders`;
const multi = `Name: ${user.first}
Since: ${new Date(user.created).getFullYear()}`;
return [line, multi];"#,
    ),
    (
        "Chinese text in strings and comments",
        r#"// 查询天气并生成中文摘要
const r = await tools.weather.current({ city: "北京" });
const summary = `今天${r.city}的气温是${r.temperature}°C，${r.rain ? "有雨" : "晴"}。`;
console.log("结果：", summary);
return { "摘要": summary, "城市": r.city, first: r["名称"] };"#,
    ),
    (
        "class with constructor, getter, static and private",
        r#"class Counter {
  #count = 0;
  static created = 0;
  constructor(start) {
    this.#count = start;
    Counter.created += 1;
  }
  get value() {
    return this.#count;
  }
  increment(by = 1) {
    this.#count += by;
    return this;
  }
  static from(n) {
    return new Counter(n);
  }
}
return Counter.from(3).increment().increment(2).value;"#,
    ),
    (
        "destructuring ordinary objects",
        r#"const { data: { items = [], next_cursor: cursor } = {}, ...meta } =
  await tools.api.list({ limit: 50 });
const [first, second, ...rest] = items;
const { id, name: title = "untitled" } = first ?? {};
return { id, title, second, restCount: rest.length, cursor, meta };"#,
    ),
    (
        "try catch finally",
        r#"let attempts = 0;
try {
  attempts += 1;
  await tools.flaky.op({});
} catch (e) {
  if (e instanceof TypeError) throw e;
  return { ok: false, error: String(e) };
} finally {
  console.log("attempts", attempts);
}
return { ok: true };"#,
    ),
    (
        "regular expressions",
        r#"const text = (await tools.web.fetch_page({ url: "https://example.com" })).body;
const emails = text.match(/[\w.+-]+@[\w-]+\.[\w.]+/g) ?? [];
const dates = [...text.matchAll(/(?<y>\d{4})-(?<m>\d{2})-(?<d>\d{2})/g)].map((m) => m.groups.y);
const clean = text.replace(/\s+/g, " ").trim();
if (/error/i.test(clean)) console.log("page mentions an error");
return { emails, dates, length: clean.length };"#,
    ),
    (
        "search and describe",
        r#"const found = await search("weather", 5);
const docs = await describe("weather__forecast");
console.log(found.map((t) => t.name).join(", "));
return { found, docs };"#,
    ),
    (
        "stash",
        r#"const cached = await stash.get("report");
if (cached) return cached;
const report = await tools.analytics.weekly({});
await stash.set("report", report);
return report;"#,
    ),
    (
        "console.log",
        r#"console.log("starting", 1, { a: [1, 2] });
console.warn("careful");
console.error(new Error("shown, not thrown").message);
return null;"#,
    ),
    (
        "return an object with spread",
        r#"const base = { source: "crm", version: 2 };
const extra = await tools.crm.stats({});
return { ...base, ...extra, generated: Date.now() };"#,
    ),
    (
        "optional chaining and nullish",
        r#"const r = await tools.github.get_repo({ owner: "a", repo: "b" });
const license = r?.license?.spdx_id ?? "none";
const topics = r.topics?.slice(0, 3) ?? [];
const first = r.owner?.logins?.[0];
const fn = r.helpers?.format;
return { license, topics, first, formatted: fn?.(license) };"#,
    ),
    (
        "Object helpers",
        r#"const stats = await tools.db.table_stats({});
const names = Object.keys(stats);
const big = Object.entries(stats).filter(([, v]) => v.rows > 1000);
const totals = Object.values(stats).reduce((a, v) => a + v.rows, 0);
const byName = Object.fromEntries(big.map(([k, v]) => [k, v.rows]));
const copy = Object.assign({}, byName, { total: totals });
return { names, byName, frozen: Object.isFrozen(Object.freeze(copy)) };"#,
    ),
    (
        "Array helpers",
        r#"const ids = Array.from({ length: 10 }, (_, i) => i + 1);
const chunks = [];
for (let i = 0; i < ids.length; i += 3) chunks.push(ids.slice(i, i + 3));
const flat = chunks.flat().includes(4) && Array.isArray(chunks);
return { chunks, flat, last: ids.at(-1), idx: ids.indexOf(5), some: ids.some((x) => x > 9) };"#,
    ),
    (
        "Map and Set",
        r#"const events = await tools.log.query({ since: "1h" });
const byUser = new Map();
const seen = new Set();
for (const e of events) {
  seen.add(e.type);
  if (!byUser.has(e.user)) byUser.set(e.user, []);
  byUser.get(e.user).push(e);
}
return { users: [...byUser.keys()], types: Array.from(seen).sort(), n: byUser.size };"#,
    ),
    (
        "Math",
        r#"const xs = (await tools.sensors.read({})).values;
const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = Math.sqrt(xs.map((x) => (x - mean) ** 2).reduce((a, b) => a + b, 0) / xs.length);
return { mean, sd, max: Math.max(...xs), min: Math.min(...xs), r: Math.floor(Math.random() * 10) };"#,
    ),
    (
        "Date",
        r#"const now = new Date();
const weekAgo = new Date(now.getTime() - 7 * 24 * 3600 * 1000);
const iso = weekAgo.toISOString().slice(0, 10);
const events = await tools.calendar.list({ from: iso, to: now.toISOString() });
return events.map((e) => ({ ...e, day: new Date(e.start).toLocaleDateString("en-GB") }));"#,
    ),
    (
        "labelled loops",
        r#"const grid = await tools.game.board({});
let found = null;
outer: for (let y = 0; y < grid.length; y++) {
  for (let x = 0; x < grid[y].length; x++) {
    if (grid[y][x] === 0) continue;
    if (grid[y][x] === 9) {
      found = { x, y };
      break outer;
    }
  }
}
return found;"#,
    ),
    (
        "indexing data with variables",
        r#"const { rows, columns } = await tools.sheets.read({ id: "abc" });
const out = [];
for (let i = 0; i < rows.length; i++) {
  const row = rows[i];
  const record = {};
  for (const col of columns) record[col] = row[col];
  record.next = rows[i + 1]?.[columns[0]];
  record.prev = i > 0 ? rows[i - 1][columns[0]] : null;
  out.push(record);
}
const counts = {};
for (const r of out) counts[r.status] = (counts[r.status] || 0) + 1;
return { out, counts, last: out[out.length - 1] };"#,
    ),
    (
        "generators",
        r#"function* range(n) {
  for (let i = 0; i < n; i++) yield i;
}
async function* pages(cursor) {
  while (cursor) {
    const page = await tools.api.page({ cursor });
    yield page.items;
    cursor = page.next;
  }
}
const all = [];
for await (const items of pages("start")) all.push(...items);
return [...range(3), all.length];"#,
    ),
    (
        "sorting and strings",
        r#"const people = await tools.hr.list({});
people.sort((a, b) => a.last.localeCompare(b.last) || a.age - b.age);
const csv = people.map((p) => [p.first, p.last, String(p.age).padStart(3, "0")].join(",")).join("\n");
const initials = people.map((p) => p.first[0].toUpperCase() + p.last.charAt(0)).join("");
return { csv, initials, upper: csv.toUpperCase().split("\n").length };"#,
    ),
    (
        "recursion",
        r#"function flatten(node, depth = 0) {
  const out = [{ name: node.name, depth }];
  for (const child of node.children ?? []) out.push(...flatten(child, depth + 1));
  return out;
}
const tree = await tools.fs.tree({ path: "/" });
return flatten(tree).filter((n) => n.depth < 3);"#,
    ),
    (
        "switch",
        r#"const items = await tools.inbox.list({});
const labels = items.map((m) => {
  switch (m.kind) {
    case "bug":
    case "crash":
      return "engineering";
    case "invoice":
      return "finance";
    default:
      return "other";
  }
});
return labels;"#,
    ),
    (
        "pagination loop",
        r#"let cursor = null;
const all = [];
do {
  const page = await tools.github.list_issues({ repo: "a/b", cursor, per_page: 100 });
  all.push(...page.items);
  cursor = page.next_cursor;
} while (cursor && all.length < 500);
return all.length;"#,
    ),
    (
        "error subclass",
        r#"class NotFound extends Error {
  constructor(what) {
    super(`${what} not found`);
    this.name = "NotFound";
    this.what = what;
  }
}
const r = await tools.db.find({ id: 3 });
if (!r) throw new NotFound("record 3");
return r;"#,
    ),
    (
        "promise with timeout",
        r#"const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (p, ms) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), ms))]);
await sleep(10);
const settled = await Promise.allSettled([withTimeout(tools.slow.op({}), 1000), tools.fast.op({})]);
return settled.map((s) => s.status);"#,
    ),
    (
        "computed keys from variables and literals",
        r#"const prefix = "metric";
const out = {};
const stats = await tools.metrics.get({});
for (const [k, v] of Object.entries(stats)) {
  const key = `${prefix}_${k}`;
  out[key] = v;
  out[k.toLowerCase()] = v;
}
const o = { [prefix + "_total"]: 1, ["static"]: 2, [`${prefix}_avg`]: 3 };
return { out, o, first: out["metric_a"], n: out[0] };"#,
    ),
    (
        "type checks",
        r#"const v = await tools.kv.get({ key: "x" });
if (typeof v === "function") return "odd";
if (Array.isArray(v)) return v.length;
if (v instanceof Date) return v.toISOString();
if (v !== null && typeof v === "object" && Object.prototype.hasOwnProperty.call(v, "id")) return v.id;
return typeof globalThis === "undefined" ? "no global" : typeof v;"#,
    ),
    (
        "numbers",
        r#"const big = 12345678901234567890n;
const n = parseInt("42", 10) + parseFloat("3.5") + Number("7");
const ok = Number.isFinite(n) && !Number.isNaN(n);
return { n: n.toFixed(2), ok, big: (big * 2n).toString(), hex: 0xff, bin: 0b101, exp: 1e3, sep: 1_000_000 };"#,
    ),
    (
        "semicolon-less style",
        r#"const a = await tools.x.one({})
const b = await tools.x.two({})
let c = a.value
c += b.value
const d = -c
const e = !d
const list = [a, b]
  .map(x => x.value)
  .filter(Boolean)
return { c, d, e, list }"#,
    ),
    (
        "nested configuration literal",
        r#"const config = {
  server: { http: { port: 8080, tls: { enabled: true, cert: { path: "/c", reload: { every: "1h" } } } } },
  users: [{ name: "a", roles: [["admin", { scope: ["*"] }]] }],
};
return await tools.admin.apply({ config });"#,
    ),
    (
        "long else-if chain",
        r#"const score = (await tools.quiz.score({})).value;
let grade;
if (score > 95) grade = "A+";
else if (score > 90) grade = "A";
else if (score > 85) grade = "A-";
else if (score > 80) grade = "B+";
else if (score > 75) grade = "B";
else if (score > 70) grade = "B-";
else if (score > 65) grade = "C+";
else if (score > 60) grade = "C";
else if (score > 55) grade = "C-";
else if (score > 50) grade = "D";
else grade = "F";
return grade;"#,
    ),
    (
        "arguments object",
        r#"function sum() {
  let total = 0;
  for (const a of arguments) total += a;
  return total + arguments.length;
}
return sum(1, 2, 3);"#,
    ),
    (
        "tagged template and raw strings",
        r#"const tag = (strings, ...values) => strings.raw.map((s, i) => s + (values[i] ?? "")).join("");
const path = String.raw`C:\temp\new`;
return tag`a${1}b${2}c` + path;"#,
    ),
    (
        "class static block and accessors",
        r#"class Registry {
  static #items = new Map();
  static {
    this.#items.set("default", 1);
  }
  static get size() {
    return this.#items.size;
  }
  handler = () => this.constructorName;
  constructorName = "Registry";
}
return Registry.size + new Registry().handler().length;"#,
    ),
    (
        "URL helpers",
        r#"const q = encodeURIComponent("a b&c");
const params = new URLSearchParams({ q: "x", page: "2" });
const u = new URL("https://example.com/search?" + params.toString());
const clone = structuredClone({ a: [1, 2] });
return { q, href: u.href, host: u.host, clone, d: decodeURIComponent(q) };"#,
    ),
    (
        "string processing",
        r#"const doc = (await tools.docs.get({ id: 1 })).text;
const words = doc.toLowerCase().split(/\W+/).filter((w) => w.length > 3);
const freq = {};
for (const w of words) freq[w] = (freq[w] ?? 0) + 1;
const top = Object.entries(freq).sort((a, b) => b[1] - a[1]).slice(0, 10);
return top.map(([w, n]) => `${w}: ${n}`).join("\n");"#,
    ),
    (
        "regex literal after keywords and brackets",
        r#"const lines = (await tools.fs.read({ path: "a.log" })).split("\n");
const errors = lines.filter((l) => /ERROR|FATAL/.test(l));
const m = lines.map((l) => l.replace(/^\[(\d+)\]\s*/, "")).map((l) => l.split(/[,;]/));
if (errors.length) console.log(errors.length, "errors");
return typeof /x/ === "object" ? m : [];"#,
    ),
];

#[test]
fn ordinary_scripts_pass() {
    let limits = ValidationLimits::default();
    assert!(
        BENIGN.len() >= 30,
        "keep at least 30 benign scripts, have {}",
        BENIGN.len()
    );
    let failures: Vec<String> = BENIGN
        .iter()
        .filter_map(|&(name, code)| {
            validate(code, &limits)
                .err()
                .map(|errors| format!("{name}:\n{errors}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "benign scripts rejected:\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn a_large_ordinary_script_passes() {
    // Many copies of every benign script, each in its own block, up to the size limit.
    let limits = ValidationLimits::default();
    let mut code = String::new();
    'fill: loop {
        for &(_, body) in BENIGN {
            let block = format!("{{\n{}\n}}\n", body.replace("return ", "void "));
            if code.len() + block.len() > limits.max_code_bytes {
                break 'fill;
            }
            code.push_str(&block);
        }
    }
    if let Err(errors) = validate(&code, &limits) {
        panic!("a large script of benign blocks was rejected:\n{errors}");
    }
}
