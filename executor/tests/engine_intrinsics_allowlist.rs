//! Everything a script can reach from the global scope, enumerated in a fresh
//! runtime and compared with `tests/data/intrinsics.txt`: every own property
//! of `globalThis`, of every object reachable from it (values, accessors,
//! prototypes) and of the intrinsics only syntax reaches. Anything new (a shim
//! the engine layer adds, a property a deno_core upgrade brings) fails the
//! test until it is reviewed; nothing may be writable or configurable, and
//! the only setters are the bootstrap's own and the language's poison pills.
//!
//! After a reviewed change: `QUIVER_BLESS=1 cargo test -p quiver-executor
//! --test integration engine_intrinsics_allowlist` rewrites the file.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use futures::future::{BoxFuture, FutureExt};
use quiver_contract::Limits;
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    ipc::{HostError, HostRequest, ToolNames},
};
use serde_json::Value;

struct NoHost;

impl HostBridge for NoHost {
    fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        futures::future::ready(Err("no host".into())).boxed()
    }
}

const ENUMERATE: &str = r#"
const seen = new Set();
const out = [];
const queue = [[globalThis, "globalThis"]];
const syntaxOnly = {
  "%Function.prototype%": Object.getPrototypeOf(function () {}),
  "%AsyncFunction.prototype%": Object.getPrototypeOf(async function () {}),
  "%GeneratorFunction.prototype%": Object.getPrototypeOf(function* () {}),
  "%AsyncGeneratorFunction.prototype%": Object.getPrototypeOf(async function* () {}),
  "%GeneratorPrototype%": Object.getPrototypeOf(Object.getPrototypeOf((function* () {})())),
  "%AsyncGeneratorPrototype%": Object.getPrototypeOf(Object.getPrototypeOf((async function* () {})())),
  "%ArrayIteratorPrototype%": Object.getPrototypeOf([][Symbol.iterator]()),
  "%StringIteratorPrototype%": Object.getPrototypeOf(""[Symbol.iterator]()),
  "%MapIteratorPrototype%": Object.getPrototypeOf(new Map()[Symbol.iterator]()),
  "%SetIteratorPrototype%": Object.getPrototypeOf(new Set()[Symbol.iterator]()),
  "%RegExpStringIteratorPrototype%": Object.getPrototypeOf(/x/[Symbol.matchAll]("")),
};
for (const name of Object.keys(syntaxOnly)) queue.push([syntaxOnly[name], name]);
for (let i = 0; i < queue.length; i++) {
  const [object, path] = queue[i];
  if (seen.has(object)) continue;
  seen.add(object);
  const proto = Object.getPrototypeOf(object);
  if (proto !== null) queue.push([proto, path + ".[[Prototype]]"]);
  for (const key of Reflect.ownKeys(object)) {
    const name = typeof key === "symbol" ? "[" + key.description + "]" : key;
    const d = Object.getOwnPropertyDescriptor(object, key);
    let kind;
    if ("value" in d) {
      kind = d.writable ? "data writable" : "data";
      if ((typeof d.value === "object" && d.value !== null) || typeof d.value === "function") {
        queue.push([d.value, path + "." + name]);
      }
    } else {
      kind = d.set ? "accessor with setter" : "accessor";
      if (d.get) queue.push([d.get, path + "." + name + ".get"]);
      if (d.set) queue.push([d.set, path + "." + name + ".set"]);
    }
    out.push(path + "." + name + ": " + kind + (d.configurable ? " configurable" : ""));
  }
  out.push(path + ": " + (Object.isFrozen(object) ? "frozen" : "NOT FROZEN"));
}
return out;
"#;

fn allowlist_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/intrinsics.txt")
}

#[tokio::test]
async fn everything_reachable_is_known_frozen_and_without_foreign_setters() {
    let limits = Limits {
        output_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let tools: BTreeMap<_, _> = [("demo".to_string(), vec!["echo".to_string()])].into();
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    let outcome = runtime
        .execute(
            ENUMERATE,
            &limits,
            &ToolNames::complete(tools),
            Arc::new(NoHost),
        )
        .await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert!(!outcome.truncated, "the enumeration was cut");
    let lines: Vec<String> =
        serde_json::from_value(outcome.result.expect("a result")).expect("a list of lines");

    tracing::info!("--- nothing writable, configurable or unfrozen");
    for line in &lines {
        assert!(
            !line.contains("writable")
                && !line.contains("configurable")
                && !line.contains("NOT FROZEN"),
            "reachable and changeable: {line}"
        );
    }

    tracing::info!("--- setters: only the bootstrap's own and the poison pills");
    let mut unreviewed = Vec::new();
    for line in lines.iter().filter(|l| l.ends_with("accessor with setter")) {
        let path = line.trim_end_matches(": accessor with setter");
        let key = match path.strip_suffix(']') {
            Some(_) => path.rfind('[').map_or(path, |at| &path[at..]),
            None => path.rsplit('.').next().unwrap_or_default(),
        };
        let ours = [
            "__proto__",
            "caller",
            "arguments",
            "toString",
            "toLocaleString",
            "valueOf",
            "hasOwnProperty",
            "isPrototypeOf",
            "propertyIsEnumerable",
            "constructor",
            "__defineGetter__",
            "__defineSetter__",
            "__lookupGetter__",
            "__lookupSetter__",
            "name",
            "message",
            // Iterator.prototype's spec accessors: their setters define the
            // property on the receiver and refuse the prototype itself.
            "[Symbol.toStringTag]",
            // The engine's `stack` on Error.prototype: its setter defines
            // `stack` on the receiver (a frozen prototype refuses it).
            "stack",
        ];
        if !ours.contains(&key) {
            unreviewed.push(line);
        }
    }
    assert!(
        unreviewed.is_empty(),
        "accessors with setters nobody reviewed: {unreviewed:#?}"
    );

    tracing::info!("--- the list matches the reviewed one");
    let path = allowlist_path();
    let actual = lines.join("\n") + "\n";
    if std::env::var_os("QUIVER_BLESS").is_some() {
        std::fs::write(&path, &actual).expect("write the allowlist");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; create it with QUIVER_BLESS=1 after review",
            path.display()
        )
    });
    let expected: std::collections::BTreeSet<&str> = expected.lines().collect();
    let actual: std::collections::BTreeSet<&str> = lines.iter().map(String::as_str).collect();
    let new: Vec<_> = actual.difference(&expected).collect();
    let gone: Vec<_> = expected.difference(&actual).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "reachable surface changed; review, then QUIVER_BLESS=1 to accept.\nnew: {new:#?}\ngone: {gone:#?}"
    );
}
