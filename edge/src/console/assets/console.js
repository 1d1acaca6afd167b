// Quiver's web console: one page, no framework, nothing fetched from
// anywhere but this edge. Every value shown is set as text (never parsed as
// HTML), and every request that changes something carries the session's
// CSRF token.
"use strict";

(function () {
  const api = "/console/api";
  let me = null;
  let csrf = "";

  // ---- small helpers -------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const svgNs = "http://www.w3.org/2000/svg";
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(svgNs, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") el.textContent = v;
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat()) if (c) el.append(c);
    return el;
  }

  async function call(method, path, body) {
    const init = { method, headers: {}, credentials: "same-origin" };
    if (method !== "GET") init.headers["x-quiver-csrf"] = csrf;
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(api + path, init);
    let data = {};
    try { data = await response.json(); } catch (_) { data = {}; }
    if (response.status === 401 && path !== "/session") {
      showSignIn("Your session ended; sign in again.");
      throw new Error("signed out");
    }
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  function when(ms) {
    if (!ms) return "-";
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function table(id, headers, rows) {
    return h("table", { id },
      h("thead", {}, h("tr", {}, headers.map((t) => h("th", { text: t })))),
      h("tbody", {}, rows));
  }

  function errorBox(e) {
    return h("p", { class: "error", role: "alert", text: String(e.message || e) });
  }

  function view() { return document.getElementById("view"); }

  function render(...children) {
    const v = view();
    v.replaceChildren(...children);
  }

  // ---- sign-in -------------------------------------------------------------

  function showSignIn(message) {
    me = null;
    csrf = "";
    document.getElementById("signin").hidden = false;
    document.getElementById("sign-out").hidden = true;
    document.getElementById("nav").replaceChildren();
    document.getElementById("whoami").textContent = "";
    view().replaceChildren();
    document.getElementById("signin-error").textContent = message || "";
  }

  async function signIn(event) {
    event.preventDefault();
    const role = document.getElementById("role").value;
    const input = document.getElementById("credential");
    const error = document.getElementById("signin-error");
    error.textContent = "";
    try {
      await call("POST", "/session", { role, credential: input.value });
      input.value = "";
      await start();
    } catch (e) {
      error.textContent = e.message;
    }
  }

  async function signOut() {
    try { await call("DELETE", "/session"); } catch (_) { /* ended anyway */ }
    location.hash = "";
    showSignIn("Signed out.");
  }

  // ---- navigation ----------------------------------------------------------

  const tenantViews = {
    tools: ["Tools", showTools],
    playground: ["Playground", showPlayground],
    keys: ["Keys", showKeys],
    usage: ["Usage", showUsage],
    audit: ["Audit", showAudit],
    findings: ["Findings", showFindings],
  };
  const operatorViews = {
    tenants: ["Tenants", showTenants],
    upstreams: ["Upstreams", showUpstreams],
    drift: ["Drift", showDrift],
    "op-findings": ["Findings", showOperatorFindings],
    grants: ["Grants", showGrants],
    cluster: ["Cluster", showCluster],
    "op-audit": ["Audit", showOperatorAudit],
  };

  function views() { return me && me.role === "operator" ? operatorViews : tenantViews; }

  function route() {
    if (!me) return;
    const all = views();
    const wanted = location.hash.replace(/^#/, "").split("?")[0];
    const name = all[wanted] ? wanted : Object.keys(all)[0];
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("current", a.dataset.view === name);
    }
    render(h("p", { class: "loading", text: "Loading…" }));
    all[name][1]().catch((e) => { if (e.message !== "signed out") render(errorBox(e)); });
  }

  async function start() {
    try {
      me = await call("GET", "/session");
    } catch (e) {
      if (e.message !== "signed out") showSignIn("");
      return;
    }
    csrf = me.csrf;
    document.getElementById("signin").hidden = true;
    document.getElementById("sign-out").hidden = false;
    document.getElementById("whoami").textContent = me.role === "operator"
      ? "operator"
      : `tenant ${me.tenant} (${me.who}, ${me.mode} mode)`;
    const nav = document.getElementById("nav");
    nav.replaceChildren(...Object.entries(views()).map(([key, [title]]) =>
      h("a", { href: "#" + key, "data-view": key, text: title })));
    route();
  }

  // ---- tenant: tools and search --------------------------------------------

  const PAGE = 50;

  async function showTools() {
    const search = h("input", { id: "tool-search", type: "search", placeholder: `Search ${me.tools} tools as the model does…`, "aria-label": "Search tools" });
    const servers = h("select", { id: "tool-server", "aria-label": "Server" }, h("option", { value: "", text: "every server" }));
    const list = h("div", { id: "tool-list" });
    const pager = h("div", { id: "tool-pager", class: "pager" });
    const detail = h("div", { id: "tool-detail" });
    render(h("h1", { text: "Tools" }),
      h("p", { class: "hint", text: `What your clients see (manifest v${me.manifest_version}). Search ranks as the model's search_tools does.` }),
      h("div", { class: "toolbar" }, search, servers), h("div", { class: "split" }, h("div", {}, list, pager), detail));
    call("GET", "/servers").then((answer) => {
      for (const s of answer.servers) servers.append(h("option", { value: s.server, text: `${s.server} (${s.tools})` }));
    }).catch(() => {});
    let offset = 0;
    let timer = null;
    async function load() {
      const q = search.value.trim();
      const params = new URLSearchParams({ q, server: servers.value, offset: String(offset), limit: String(PAGE) });
      try {
        const answer = await call("GET", "/tools?" + params);
        list.replaceChildren(...answer.tools.map((t) =>
          h("button", { type: "button", class: "tool-row", "data-name": t.name, onclick: () => showTool(t.name, detail) },
            h("span", { class: "tool-name", text: t.name }),
            t.score !== undefined ? h("span", { class: "score", text: t.score.toFixed(3) }) : null,
            h("span", { class: "tool-desc", text: t.description }))));
        if (answer.tools.length === 0) list.append(h("p", { class: "hint", text: "No tool matches." }));
        pager.replaceChildren();
        if (!answer.search) {
          const last = Math.min(offset + PAGE, answer.total);
          pager.append(
            h("button", { type: "button", id: "page-prev", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load(); }, text: "‹ Previous" }),
            h("span", { id: "page-info", text: `${answer.total ? offset + 1 : 0}–${last} of ${answer.total}` }),
            h("button", { type: "button", id: "page-next", disabled: last >= answer.total, onclick: () => { offset += PAGE; load(); }, text: "Next ›" }));
        } else {
          pager.append(h("span", { id: "page-info", text: `${answer.total} best matches` }));
        }
      } catch (e) {
        if (e.message !== "signed out") list.replaceChildren(errorBox(e));
      }
    }
    search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { offset = 0; load(); }, 200); });
    servers.addEventListener("change", () => { offset = 0; load(); });
    await load();
  }

  async function showTool(name, into) {
    into.replaceChildren(h("p", { class: "loading", text: "Loading…" }));
    try {
      const t = await call("GET", "/tool?" + new URLSearchParams({ name }));
      into.replaceChildren(
        h("h2", { text: t.name }),
        h("p", { class: "hint", text: `server ${t.server}, tool ${t.tool}` }),
        h("p", { class: "desc", text: t.description }),
        t.app ? h("p", { id: "tool-app", class: "hint", text: `Renders an app view (${t.app}): call it below to see it.` }) : null,
        h("h3", { text: "TypeScript declaration" }),
        h("pre", { id: "declaration", text: t.declaration }),
        h("h3", { text: "Input schema" }),
        h("pre", { text: JSON.stringify(t.input_schema, null, 2) }),
        callForm(t));
    } catch (e) {
      into.replaceChildren(errorBox(e));
    }
  }

  // Calls the tool as the model would, and renders its app's view when it
  // links one (apps.js).
  function callForm(t) {
    const args = h("textarea", { id: "call-args", rows: 4, spellcheck: "false", "aria-label": "Arguments (JSON)" });
    args.value = "{}";
    const out = h("div", { id: "call-output" });
    const button = h("button", { type: "button", id: "tool-call", text: "Call ▶" });
    button.addEventListener("click", async () => {
      let parsed;
      try { parsed = JSON.parse(args.value || "{}"); } catch (e) {
        out.replaceChildren(errorBox(new Error(`the arguments are not JSON: ${e.message}`)));
        return;
      }
      button.disabled = true;
      out.replaceChildren(h("p", { class: "loading", text: "Calling…" }));
      try {
        const r = await call("POST", "/call", { name: t.name, arguments: parsed });
        const view = h("div", { id: "app-view" });
        const log = h("ul", { id: "app-log", class: "app-log" });
        out.replaceChildren(
          h("h3", { text: r.result.isError ? "Tool error" : "Result" }),
          h("pre", { id: "call-result", text: JSON.stringify(r.result, null, 2) }));
        if (r.app) {
          out.append(h("h3", { text: "App view" }),
            h("p", { class: "hint", text: `${r.app.uri}, from ${r.app.server}; sandboxed, reaching only what it declares; its calls go to ${r.app.server} only.` }),
            view, h("h3", { text: "Relayed" }), log);
          window.QuiverApps.render(view, r.app, parsed, r.result, (path, body) => call("POST", path, body), log);
        }
      } catch (e) {
        if (e.message !== "signed out") out.replaceChildren(errorBox(e));
      } finally {
        button.disabled = false;
      }
    });
    return h("div", { id: "tool-call-form" }, h("h3", { text: "Call it" }), args, h("div", { class: "toolbar" }, button), out);
  }

  // ---- tenant: playground --------------------------------------------------

  async function showPlayground() {
    if (!me.scripts) {
      render(h("h1", { text: "Playground" }), h("p", { class: "hint", text: "This edge runs no scripts." }));
      return;
    }
    const code = h("textarea", { id: "script", rows: 12, spellcheck: "false", "aria-label": "Script" });
    code.value = sessionStorage.getItem("quiver-script") || "const found = await search(\"weather\");\nconsole.log(`found ${found.length} tools`);\nreturn found.map((t) => t.name);";
    const out = h("div", { id: "run-output" });
    const run = h("button", { type: "button", id: "run", text: "Run ▶" });
    run.addEventListener("click", async () => {
      sessionStorage.setItem("quiver-script", code.value);
      run.disabled = true;
      out.replaceChildren(h("p", { class: "loading", text: "Running…" }));
      try {
        const r = await call("POST", "/execute", { code: code.value });
        const calls = h("div", { id: "run-calls" }, h("p", { class: "hint", text: "Looking for the calls it made in the audit log…" }));
        out.replaceChildren(
          h("h3", { text: r.error ? "Failed" : "Result" }),
          r.error
            ? h("pre", { id: "run-error", class: "error", text: `${r.error.kind}: ${r.error.message}${r.error.line ? ` (line ${r.error.line})` : ""}` })
            : h("pre", { id: "run-result", text: JSON.stringify(r.result, null, 2) }),
          h("p", { class: "hint", text: `${r.elapsed_ms} ms${r.truncated ? ", output truncated" : ""}` }),
          h("h3", { text: "Logs" }),
          h("pre", { id: "run-logs", text: r.logs.join("\n") || "(none)" }),
          appViews(r.app_views || []),
          h("h3", { text: "Calls" }), calls);
        followCalls(r, calls);
      } catch (e) {
        if (e.message !== "signed out") out.replaceChildren(errorBox(e));
      } finally {
        run.disabled = false;
      }
    });
    render(h("h1", { text: "Playground" }),
      h("p", { class: "hint", text: "Runs like the execute tool, on your view, with your limits; the runs and their calls are audited." }),
      code, h("div", { class: "toolbar" }, run), out);
  }

  // The views of the app tools a run called, each rendered as on a tool's
  // page (apps.js), with the call's arguments and result.
  function appViews(views) {
    if (views.length === 0) return null;
    const section = h("div", { id: "run-apps" }, h("h3", { text: "App views" }));
    for (const v of views) {
      const into = h("div", { class: "app-view" });
      const log = h("ul", { class: "app-log" });
      section.append(h("p", { class: "hint", text: `${v.tool}: ${v.uri}; its calls go to ${v.server} only.` }), into, log);
      window.QuiverApps.render(into, { server: v.server, uri: v.uri }, v.arguments, v.result, (path, body) => call("POST", path, body), log);
    }
    return section;
  }

  // The audit log takes the run's call records within a couple of seconds.
  async function followCalls(run, into) {
    for (let attempt = 0; attempt < 10; attempt++) {
      let answer;
      try {
        answer = await call("GET", "/calls?" + new URLSearchParams({ script: run.script_sha256, since: String(run.started_ms) }));
      } catch (e) {
        into.replaceChildren(errorBox(e));
        return;
      }
      if (answer.calls.length > 0) {
        into.replaceChildren(table("calls-table", ["when", "tool", "decision", "outcome", "ms"],
          answer.calls.map((c) => h("tr", { class: "call-row" },
            h("td", { text: when(c.at_ms) }), h("td", { text: c.tool || "" }), h("td", { text: c.decision }),
            h("td", { text: c.outcome }), h("td", { text: (c.latency_us / 1000).toFixed(1) })))));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
    into.replaceChildren(h("p", { class: "hint", text: "No tool calls recorded for this run." }));
  }

  // ---- tenant: keys --------------------------------------------------------

  async function showKeys() {
    const answer = await call("GET", "/keys");
    const shown = h("div", { id: "new-key-box" });
    const rows = answer.keys.map((k) => h("tr", { class: "key-row", "data-key": k.key_id },
      h("td", { text: k.key_id }), h("td", { text: when(k.created_ms) }),
      h("td", {}, k.current ? h("span", { class: "badge", text: "this session" })
        : answer.self_service ? h("button", { type: "button", class: "revoke", "data-key": k.key_id, onclick: () => revoke(k.key_id), text: "Revoke" }) : "")));
    const issue = answer.self_service
      ? h("button", { type: "button", id: "issue-key", onclick: issueKey, text: "Issue a key" })
      : h("p", { class: "hint", text: "Your operator manages your keys." });
    render(h("h1", { text: "API keys" }), issue, shown,
      table("keys-table", ["key id", "issued", ""], rows));

    async function issueKey() {
      try {
        const k = await call("POST", "/keys");
        await showKeys();
        document.getElementById("new-key-box").replaceChildren(
          h("p", { class: "notice", text: "Your new key, shown this once: copy it now." }),
          h("pre", { id: "new-key", text: k.key }));
      } catch (e) {
        if (e.message !== "signed out") shown.replaceChildren(errorBox(e));
      }
    }
    async function revoke(id) {
      try {
        await call("POST", "/keys/revoke", { key_id: id });
        await showKeys();
      } catch (e) {
        if (e.message !== "signed out") shown.replaceChildren(errorBox(e));
      }
    }
  }

  // ---- tenant: usage and charts -------------------------------------------

  function budgetChart(usage) {
    const width = 480, height = 44;
    const budget = usage.budget;
    const spent = usage.spent || 0;
    const svg = s("svg", { id: "budget-chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Spend against budget" });
    svg.append(s("rect", { x: 0, y: 8, width, height: 20, class: "track" }));
    if (budget && budget > 0) {
      const filled = Math.min(1, spent / budget) * width;
      svg.append(s("rect", { x: 0, y: 8, width: filled, height: 20, class: spent >= budget ? "over" : "spent" }));
    }
    svg.append(s("text", { x: 4, y: 42, class: "label", text: budget ? `${spent.toFixed(2)} of ${budget.toFixed(2)} spent` : `${spent.toFixed(2)} spent, no budget` }));
    return svg;
  }

  // Calls and errors per minute over the last hour, for one tool or all.
  function activityChart(records, tool) {
    const width = 600, height = 160, minutes = 60;
    const now = Date.now();
    const buckets = Array.from({ length: minutes }, () => ({ calls: 0, errors: 0 }));
    for (const r of records) {
      if (r.kind !== "call" || (tool && r.tool !== tool)) continue;
      const age = Math.floor((now - r.at_ms) / 60000);
      if (age < 0 || age >= minutes) continue;
      const b = buckets[minutes - 1 - age];
      b.calls += 1;
      if (r.outcome !== "ok") b.errors += 1;
    }
    const peak = Math.max(1, ...buckets.map((b) => b.calls));
    const bar = width / minutes;
    const svg = s("svg", { id: "activity-chart", viewBox: `0 0 ${width} ${height + 20}`, role: "img", "aria-label": "Calls and errors per minute" });
    buckets.forEach((b, i) => {
      const hCalls = (b.calls / peak) * height;
      const hErr = (b.errors / peak) * height;
      if (b.calls) svg.append(s("rect", { x: i * bar, y: height - hCalls, width: bar - 1, height: hCalls, class: "calls" }, s("title", { text: `${b.calls} calls, ${b.errors} errors` })));
      if (b.errors) svg.append(s("rect", { x: i * bar, y: height - hErr, width: bar - 1, height: hErr, class: "errors" }));
    });
    svg.append(s("text", { x: 0, y: height + 16, class: "label", text: "60 min ago" }));
    svg.append(s("text", { x: width - 30, y: height + 16, class: "label", text: "now" }));
    svg.append(s("text", { x: 0, y: 12, class: "label", text: `peak ${peak}/min` }));
    return svg;
  }

  async function showUsage() {
    const [usage, audit] = await Promise.all([call("GET", "/usage"), call("GET", "/audit?" + new URLSearchParams({ since: String(Date.now() - 3600000) }))]);
    const u = usage.usage;
    const tools = [...new Set(audit.records.filter((r) => r.kind === "call").map((r) => r.tool))].sort();
    const pick = h("select", { id: "activity-tool", "aria-label": "Tool" }, h("option", { value: "", text: "every tool" }), tools.map((t) => h("option", { value: t, text: t })));
    const chart = h("div", { class: "chart" }, activityChart(audit.records, ""));
    pick.addEventListener("change", () => chart.replaceChildren(activityChart(audit.records, pick.value)));
    const limits = Object.entries(usage.tool_rate_limits).map(([g, n]) => `${g}: ${n}/min`).join(", ");
    render(h("h1", { text: "Usage" }),
      h("dl", { id: "usage" },
        h("dt", { text: "Calls metered" }), h("dd", { id: "usage-calls", text: String(u.calls) }),
        h("dt", { text: "Spent" }), h("dd", { id: "usage-spent", text: u.spent.toFixed(2) }),
        h("dt", { text: "Budget" }), h("dd", { id: "usage-budget", text: u.budget === null ? "none" : u.budget.toFixed(2) }),
        h("dt", { text: "Rate limit" }), h("dd", { id: "usage-rate", text: usage.rate_limit_per_minute ? `${usage.calls_last_minute} of ${usage.rate_limit_per_minute} calls in the last minute` : `none (${usage.calls_last_minute} calls in the last minute)` }),
        h("dt", { text: "Per-tool limits" }), h("dd", { text: limits || "none" }),
        h("dt", { text: "Stash" }), h("dd", { text: `${u.stash_bytes} bytes, ${u.stash_keys} keys` })),
      h("h2", { text: "Spend against budget" }), h("div", { class: "chart" }, budgetChart(u)),
      h("h2", { text: "Calls and errors, last hour" }), pick, chart);
  }

  // ---- tenant and operator: audit -----------------------------------------

  function auditView(path, withTenant) {
    return async function () {
      const tool = h("input", { id: "audit-tool", placeholder: "tool contains…", "aria-label": "Tool" });
      const outcome = h("select", { id: "audit-outcome", "aria-label": "Outcome" }, ["", "ok", "tool_error", "error", "refused"].map((o) => h("option", { value: o, text: o || "any outcome" })));
      const kind = h("select", { id: "audit-kind", "aria-label": "Kind" }, ["", "call", "execute", "task"].map((k) => h("option", { value: k, text: k || "any kind" })));
      const tenant = withTenant ? h("input", { id: "audit-tenant", placeholder: "tenant", "aria-label": "Tenant" }) : null;
      const rows = h("div", { id: "audit-rows" });
      async function load() {
        const params = new URLSearchParams({ tool: tool.value.trim(), outcome: outcome.value, kind: kind.value });
        if (tenant) params.set("tenant", tenant.value.trim());
        try {
          const answer = await call("GET", path + "?" + params);
          rows.replaceChildren(table("audit-table", ["when", withTenant ? "tenant" : "caller", "kind", "tool", "decision", "outcome", "ms", "reason"],
            answer.records.slice(0, 500).map((r) => h("tr", { class: "audit-row" },
              h("td", { text: when(r.at_ms) }), h("td", { text: withTenant ? r.tenant : r.caller }), h("td", { text: r.kind }),
              h("td", { text: r.tool || "" }), h("td", { text: r.decision }), h("td", { text: r.outcome }),
              h("td", { text: (r.latency_us / 1000).toFixed(1) }), h("td", { text: r.reason || "" })))));
        } catch (e) {
          if (e.message !== "signed out") rows.replaceChildren(errorBox(e));
        }
      }
      const apply = h("button", { type: "button", id: "audit-apply", onclick: load, text: "Filter" });
      render(h("h1", { text: "Audit" }), h("div", { class: "toolbar" }, tenant, tool, outcome, kind, apply), rows);
      await load();
    };
  }
  function showAudit() { return auditView("/audit", false)(); }
  function showOperatorAudit() { return auditView("/op/audit", true)(); }

  // ---- findings ------------------------------------------------------------

  function findingsTable(tools, approve) {
    if (tools.length === 0) return h("p", { id: "findings-none", class: "hint", text: "Screening found nothing." });
    const headers = ["upstream", "tool", "status", "findings"];
    if (approve) headers.push("");
    return table("findings-table", headers,
      tools.map((t) => h("tr", { class: "finding-row" },
        h("td", { text: t.upstream }), h("td", { text: t.tool }), h("td", { class: "status-" + t.status, text: t.status }),
        h("td", {}, h("ul", {}, t.findings.map((f) => h("li", { text: `${f.severity}: ${f.rule} in ${f.field}: “${f.excerpt}”` })))),
        approve ? h("td", {}, t.status === "held"
          ? h("button", { type: "button", class: "approve-tool", "data-upstream": t.upstream, "data-tool": t.tool, onclick: () => approve(t.upstream, t.tool), text: "Approve" })
          : "") : null)));
  }

  async function showFindings() {
    const answer = await call("GET", "/findings");
    render(h("h1", { text: "Findings on your tools" }),
      h("p", { class: "hint", text: "What screening found in the definitions of tools you see, which your operator chose to serve." }),
      findingsTable(answer.tools, null));
  }

  async function showOperatorFindings(notice) {
    const answer = await call("GET", "/op/findings");
    const result = h("div", { id: "approve-result" }, notice ? h("p", { class: "notice", text: notice }) : null);
    async function approve(id, tool) {
      try {
        const r = await call("POST", "/op/approve", { id, tool });
        await showOperatorFindings(`Approved ${tool} of ${id} (manifest v${r.manifest_version}): it is served with its findings.`);
      } catch (e) {
        if (e.message !== "signed out") result.replaceChildren(errorBox(e));
      }
    }
    render(h("h1", { text: "Findings" }),
      h("p", { class: "hint", text: "Held tools are served to nobody until approved; an approved tool is served with its findings." }),
      result, findingsTable(answer.tools || [], approve));
  }

  // ---- operator ------------------------------------------------------------

  async function showTenants() {
    const tenants = await call("GET", "/op/tenants");
    const detail = h("div", { id: "tenant-usage" });
    render(h("h1", { text: "Tenants" }),
      table("tenants-table", ["id", "mode", "servers", "keys", "budget", "rate limit", "self-service keys", ""],
        tenants.map((t) => h("tr", { class: "tenant-row", "data-tenant": t.id },
          h("td", { text: t.id }), h("td", { text: t.mode || "-" }), h("td", { text: (t.servers || []).join(", ") || "all" }),
          h("td", { text: String((t.keys || []).length) }), h("td", { text: t.budget === null || t.budget === undefined ? "-" : String(t.budget) }),
          h("td", { text: t.rate_limit_per_minute ? `${t.rate_limit_per_minute}/min` : "-" }),
          h("td", { text: t.self_service_keys ? "yes" : "no" }),
          h("td", {}, h("button", { type: "button", onclick: () => tenantUsage(t.id), text: "Usage" }))))),
      detail);
    async function tenantUsage(id) {
      try {
        const u = await call("GET", "/op/usage?" + new URLSearchParams({ tenant: id }));
        detail.replaceChildren(h("h2", { text: `Usage of ${id}` }), h("div", { class: "chart" }, budgetChart(u)),
          h("p", { text: `${u.calls} calls metered, ${u.leased.toFixed(2)} leased` }));
      } catch (e) {
        if (e.message !== "signed out") detail.replaceChildren(errorBox(e));
      }
    }
  }

  async function showUpstreams() {
    const upstreams = await call("GET", "/op/upstreams");
    render(h("h1", { text: "Upstreams" }),
      table("upstreams-table", ["id", "transport", "state", "tools", "pending", "quarantine", "tags"],
        upstreams.map((u) => h("tr", { class: "upstream-row", "data-upstream": u.id },
          h("td", { text: u.id }), h("td", { text: u.transport }),
          h("td", { class: "state-" + String(u.state).split(" ")[0], text: typeof u.state === "string" ? u.state : JSON.stringify(u.state) }),
          h("td", { text: String(u.tools) }), h("td", { text: String(u.pending) }),
          h("td", { text: u.quarantine ? "yes" : "no" }), h("td", { text: (u.tags || []).join(", ") })))));
  }

  async function showDrift(notice) {
    const drift = await call("GET", "/op/drift");
    const pending = Object.entries(drift.pending || {});
    const result = h("div", { id: "approve-result" }, notice ? h("p", { class: "notice", text: notice }) : null);
    async function approve(id) {
      try {
        const r = await call("POST", "/op/approve", { id });
        await showDrift(`Approved the changes of ${id} (manifest v${r.manifest_version}).`);
      } catch (e) {
        if (e.message !== "signed out") result.replaceChildren(errorBox(e));
      }
    }
    render(h("h1", { text: "Drift and quarantine" }), result,
      h("h2", { text: "Waiting for approval" }),
      pending.length === 0 ? h("p", { id: "pending-none", class: "hint", text: "Nothing is waiting." })
        : table("pending-table", ["upstream", "changes", ""], pending.map(([id, changes]) => h("tr", { class: "pending-row", "data-upstream": id },
          h("td", { text: id }), h("td", {}, h("ul", {}, changes.map((c) => h("li", { text: c })))),
          h("td", {}, h("button", { type: "button", class: "approve", "data-upstream": id, onclick: () => approve(id), text: "Approve" }))))),
      h("h2", { text: "Events" }),
      table("drift-table", ["when", "upstream", "tool", "kind", "by", "message"],
        (drift.events || []).slice().reverse().slice(0, 200).map((e) => h("tr", {},
          h("td", { text: when(e.at_ms) }), h("td", { text: e.upstream }), h("td", { text: e.tool || "" }),
          h("td", { text: e.kind }), h("td", { text: e.actor || "" }), h("td", { text: e.message || "" })))));
  }

  async function showGrants() {
    const grants = await call("GET", "/op/grants");
    const list = Array.isArray(grants) ? grants : grants.grants || [];
    const upstream = h("input", { id: "grant-upstream", placeholder: "upstream", "aria-label": "Upstream" });
    const tenant = h("input", { id: "grant-tenant", placeholder: "tenant", "aria-label": "Tenant" });
    const link = h("div", { id: "grant-link" });
    async function authorize() {
      try {
        const r = await call("POST", "/op/authorize", { upstream: upstream.value.trim(), tenant: tenant.value.trim() });
        link.replaceChildren(h("p", { class: "notice", text: `Send this link to the person who grants ${r.upstream} to ${r.tenant} (valid ${Math.round(r.expires_in_s / 60)} min):` }),
          h("pre", { text: r.link }));
      } catch (e) {
        if (e.message !== "signed out") link.replaceChildren(errorBox(e));
      }
    }
    render(h("h1", { text: "OAuth grants" }),
      h("p", { class: "hint", text: "Tenants' grants of upstreams behind OAuth (never a token)." }),
      table("grants-table", ["tenant", "upstream", "scopes", "expires", "renewable"],
        list.map((g) => h("tr", {}, h("td", { text: g.tenant }), h("td", { text: g.upstream }),
          h("td", { text: (g.scopes || []).join(" ") }), h("td", { text: when(g.expires_at_ms) }), h("td", { text: g.renewable ? "yes" : "no" })))),
      h("h2", { text: "Authorize an upstream for a tenant" }),
      h("div", { class: "toolbar" }, upstream, tenant, h("button", { type: "button", id: "grant-start", onclick: authorize, text: "Get the link" })),
      link);
  }

  async function showCluster() {
    const c = await call("GET", "/op/cluster");
    const fleet = c.fleet || [];
    const agree = fleet.filter((n) => n.stub_hash === c.stub_hash).length;
    render(h("h1", { text: "Cluster" }),
      h("p", { id: "cluster-summary", text: `leader ${c.leader}, term ${c.term}, manifest v${c.manifest_version}; ${agree} of ${fleet.length} reporting nodes hold stub hash ${String(c.stub_hash).slice(0, 12)}…` }),
      h("h2", { text: "Control plane" }),
      table("members-table", ["id", "address", "role", "state", "matched"],
        (c.members || []).map((m) => h("tr", {}, h("td", { text: String(m.id) + (m.id === c.leader ? " (leader)" : "") }), h("td", { text: m.addr }),
          h("td", { text: m.role }), h("td", { text: typeof m.state === "string" ? m.state : JSON.stringify(m.state) }), h("td", { text: m.matched_index === null ? "-" : String(m.matched_index) })))),
      h("h2", { text: "Edges and executors" }),
      table("fleet-table", ["node", "role", "manifest", "stub hash", "verdict", "reported"],
        fleet.map((n) => h("tr", { class: "verdict-" + String(n.verdict) },
          h("td", { text: n.node }), h("td", { text: n.role }), h("td", { text: "v" + n.manifest_version }),
          h("td", { text: String(n.stub_hash).slice(0, 12) + "…" }), h("td", { text: String(n.verdict) }), h("td", { text: `${Math.round(n.age_ms / 1000)} s ago` })))),
      h("h2", { text: "Metrics" }),
      me.metrics.length ? h("ul", { id: "metrics-links" }, me.metrics.map((m) => h("li", {}, h("a", { href: m, rel: "noreferrer", text: m }))))
        : h("p", { class: "hint", text: "No metrics listener is configured on this edge (admin_listen)." }));
  }

  // ---- start ---------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("signin-form").addEventListener("submit", signIn);
    document.getElementById("sign-out").addEventListener("click", signOut);
    window.addEventListener("hashchange", route);
    start();
  });
})();
