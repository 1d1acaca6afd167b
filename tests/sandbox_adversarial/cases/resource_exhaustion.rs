//! Exhausting time, memory, stack, output, timers and host calls. Each stops
//! at the limit meant for it; the suite then checks that the pool still
//! serves the next script.

use quiver_contract::ScriptErrorKind::{HostCalls, Memory, Output, Timeout, ToolCalls};
use serde_json::json;

use crate::sandbox_adversarial::adversarial::{
    case::{Case, FullPath::Runs, fails, throws},
    recording_context::HostCall,
};

pub fn cases() -> Vec<Case> {
    const STACK: &str = "RangeError: Maximum call stack size exceeded";
    // The worker's watchdog and the host's backstop both name the limit.
    const TIME: &str = "1000 ms";
    const HEAP: &str = "the script used more than its memory limit of 67108864 bytes";
    let mut list: Vec<Case> = [
        ("infinite loop", "while (true) {}", fails(Timeout, TIME)),
        ("infinite for", "for (;;) {}", fails(Timeout, TIME)),
        ("infinite recursion", "function f() { return f(); } f();", throws(STACK)),
        ("mutual recursion", "function a() { return b(); } function b() { return a(); } a();", throws(STACK)),
        ("deep recursion with args", "function f(n) { return f(n + 1) + 1; } f(0);", throws(STACK)),
        ("async infinite", "while (true) { await null; }", fails(Timeout, TIME)),
        ("promise flood", "const p = []; while (true) p.push(Promise.resolve(1));", fails(Memory, HEAP)),
        ("catastrophic regex", "/^(a+)+$/.test('a'.repeat(40) + 'b');", fails(Timeout, TIME)),
        ("catastrophic regex 2", "/(x+x+)+y/.test('x'.repeat(50));", fails(Timeout, TIME)),
        ("giant string", "let s = 'x'; while (true) s += s;", throws("InternalError: string too long")),
        ("giant array", "const a = []; while (true) a.push(new Array(1e6).fill(1));", fails(Memory, HEAP)),
        ("giant typed array", "new Float64Array(1e10);", fails(Memory, HEAP)),
        ("giant map", "const m = new Map(); for (let i = 0; ; i++) m.set(i, 'x'.repeat(100));", fails(Memory, HEAP)),
        ("string repeat huge", "'x'.repeat(2 ** 31);", throws("RangeError: invalid repeat count")),
        ("array length huge", "new Array(2 ** 32 - 1).fill(0);", fails(Memory, HEAP)),
        ("json bomb", "let s = '[]'; for (let i = 0; i < 30; i++) s = '[' + s + ',' + s + ']'; JSON.parse(s);", throws("InternalError: string too long")),
        ("timer flood", "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1);", fails(Memory, HEAP)),
        ("long timer", "await new Promise(r => setTimeout(r, 1e9));", throws("RangeError: setTimeout: 1000000000 ms is longer than the script's 10000 ms time limit")),
        ("log flood", "while (true) console.log('x'.repeat(1000));", fails(Timeout, TIME)),
        ("huge result", "return 'x'.repeat(50 * 1024 * 1024);", fails(Memory, HEAP)),
        ("deep result", "let o = {}; for (let i = 0; i < 100000; i++) o = { o }; return o;", fails(Output, "the script's return value cannot be turned into JSON: RangeError: Maximum call stack size exceeded")),
        ("cyclic result", "const o = {}; o.o = o; return o;", fails(Output, "the script's return value cannot be turned into JSON: TypeError: circular reference")),
        ("unresolved promise", "await new Promise(() => {});", throws("the script awaited a promise that can never settle")),
        // The host describes a thrown object without calling into it.
        ("error in toString", "throw { toString() { while (true) {} } };", throws("Uncaught {\"toString\":\"[Function: toString]\"}")),
        ("throw deep object", "let o = {}; for (let i = 0; i < 100000; i++) o = { o }; throw o;", throws("Uncaught [object Object]")),
    ]
    .into_iter()
    .map(|(name, code, runtime)| {
        Case::new(name, &format!("{code}\nreturn 'contained';"), Runs, runtime)
    })
    .collect();

    // The host enforces the tool-call budget whatever the worker claims:
    // exactly the first 50 calls arrive, and the rest are refused…
    list.push(
        Case::new(
            "tool call flood",
            "await Promise.all(Array.from({ length: 1000 }, () => tools.call('demo__echo', {})));\nreturn 'contained';",
            Runs,
            fails(ToolCalls, "the script tried more than 50 tool calls; combine work into fewer calls"),
        )
        .reaching_host(vec![HostCall::echo(json!({})); 50]),
    );
    // …and the budget of host calls of any kind: exactly the first 500 arrive.
    list.push(
        Case::new(
            "host call flood",
            "await Promise.all(Array.from({ length: 600 }, () => search('x')));\nreturn 'contained';",
            Runs,
            fails(HostCalls, "the script made more than 500 host calls (tools, search, describe, stash); combine work into fewer calls"),
        )
        .reaching_host(vec![
            HostCall::Search {
                query: "x".into(),
                limit: 10,
            };
            500
        ]),
    );
    list
}
