//! Names a host runtime offers that the sandbox must not: reaching the object
//! at all is an escape.

use serde_json::json;

use crate::sandbox_adversarial::adversarial::case::{
    Case, FullPath::Runs, MARK, rejected, returns, throws,
};

pub fn cases() -> Vec<Case> {
    let mut list: Vec<Case> = [
        (
            "require",
            "require('fs')",
            rejected("require"),
            throws("ReferenceError: require is not defined"),
        ),
        (
            "Deno",
            "Deno.readTextFileSync('/etc/passwd')",
            rejected("deno"),
            throws("ReferenceError: Deno is not defined"),
        ),
        (
            "Deno core",
            "Deno.core.ops",
            rejected("deno"),
            throws("ReferenceError: Deno is not defined"),
        ),
        (
            "globalThis Deno computed",
            "globalThis['De' + 'no'].core",
            rejected("global-computed"),
            throws("TypeError: Cannot read properties of undefined (reading 'core')"),
        ),
        (
            "WebAssembly",
            "WebAssembly.Module",
            rejected("webassembly"),
            throws("ReferenceError: WebAssembly is not defined"),
        ),
        (
            "fetch",
            "fetch('http://127.0.0.1:1/')",
            Runs,
            throws("ReferenceError: fetch is not defined"),
        ),
        (
            "SharedArrayBuffer",
            "new SharedArrayBuffer(8)",
            rejected("shared-memory"),
            throws("ReferenceError: SharedArrayBuffer is not defined"),
        ),
        (
            "Atomics",
            "Atomics.wait",
            rejected("shared-memory"),
            throws("ReferenceError: Atomics is not defined"),
        ),
        (
            "process env",
            "process.env",
            Runs,
            throws("ReferenceError: process is not defined"),
        ),
        (
            "XMLHttpRequest",
            "new XMLHttpRequest()",
            Runs,
            throws("ReferenceError: XMLHttpRequest is not defined"),
        ),
    ]
    .into_iter()
    .map(|(name, expr, full_path, runtime)| {
        Case::new(
            name,
            &format!("const r = {expr};\nreturn r ? '{MARK}' : 'contained';"),
            full_path,
            runtime,
        )
    })
    .collect();

    // None of these exists in the sandbox; the validator blocks only the
    // names that are dangerous even in a sandbox that defines them.
    for (global, full_path) in [
        ("process", Runs),
        ("module", Runs),
        ("fetch", Runs),
        ("WebSocket", Runs),
        ("Worker", Runs),
        ("importScripts", Runs),
        ("navigator", Runs),
        ("location", Runs),
        ("document", Runs),
        ("Bun", Runs),
        ("__dirname", rejected("internal-name")),
        ("Buffer", Runs),
        ("setInterval", Runs),
        ("setImmediate", Runs),
        ("XMLHttpRequest", Runs),
        ("SharedArrayBuffer", rejected("shared-memory")),
    ] {
        list.push(Case::new(
            &format!("ambient {global}"),
            &format!("return typeof {global};"),
            full_path,
            returns(json!("undefined")),
        ));
    }
    list
}
