//! Tricks on what crosses to the host as tool arguments: getters, coercion
//! hooks, values JSON cannot hold, prototype keys, sizes. Either the host
//! receives plain data (exactly the listed arguments) or the call is refused
//! inside the sandbox and nothing reaches the host.

use quiver_contract::ScriptErrorKind::Timeout;
use serde_json::{Value, json};

use crate::sandbox_adversarial::adversarial::{
    case::{Case, Expected, FullPath::Runs, MARK, fails, rejected, returns},
    recording_context::HostCall,
};

/// What becomes of a call's arguments.
enum Crossing {
    /// The host receives exactly this.
    Arrives(Value),
    /// The sandbox refuses the call with this error text.
    Refused(&'static str),
    /// A limit stops the script before the call is made.
    Stopped(Expected),
}
use Crossing::{Arrives, Refused, Stopped};

pub fn cases() -> Vec<Case> {
    [
        ("getter args", "{ get x() { return globalThis; } }", rejected("global-alias"), Arrives(json!({ "x": {} }))),
        ("toPrimitive args", "{ x: { [Symbol.toPrimitive]() { return 'ESC'; } } }", Runs, Arrives(json!({ "x": {} }))),
        ("toJSON args", "{ toJSON() { return { injected: true }; } }", Runs, Arrives(json!({ "injected": true }))),
        ("null prototype args", "Object.create(null)", Runs, Arrives(json!({}))),
        ("function in args", "{ f: function () {} }", Runs, Arrives(json!({}))),
        ("symbol in args", "{ s: Symbol('x') }", Runs, Arrives(json!({}))),
        ("bigint in args", "{ n: 10n }", Runs, Arrives(json!({ "n": "10" }))),
        ("cyclic args", "(() => { const o = {}; o.self = o; return o; })()", Runs, Refused("TypeError: circular reference")),
        // A `__proto__` key inside JSON text is data: only the runtime sees it.
        ("__proto__ args", "JSON.parse('{\"__proto__\": {\"admin\": true}}')", Runs, Arrives(json!({ "__proto__": { "admin": true } }))),
        ("deep args", "(() => { let o = {}; for (let i = 0; i < 5000; i++) o = { o }; return o; })()", Runs, Refused("RangeError: Maximum call stack size exceeded")),
        ("huge args", "{ s: 'x'.repeat(20 * 1024 * 1024) }", Runs, Refused("Error: the request is over 1048576 bytes; a script may send at most 1048576 bytes at once")),
        // Serialising a billion holes outlasts the time limit (the memory
        // limit would take over twice as long to reach).
        ("sparse array args beyond the time limit", "(() => { const a = []; a[1e9] = 1; return { a }; })()", Runs, Stopped(fails(Timeout, "1000 ms"))),
        ("sparse array args", "(() => { const a = []; a[3e5] = 1; return { a }; })()", Runs, Refused("Error: the request is over 1048576 bytes; a script may send at most 1048576 bytes at once")),
    ]
    .into_iter()
    .map(|(name, args, full_path, crossing)| {
        let code = format!(
            "let r;\ntry {{ r = await tools.call('demo__echo', {args}); }} catch (e) {{ return {{ refused: String(e) }}; }}\nreturn ({{}}).admin === true ? '{MARK}' : {{ echoed: r, admin: ({{}}).admin ?? null }};"
        );
        match crossing {
            Arrives(args) => Case::new(
                name,
                &code,
                full_path,
                returns(json!({ "echoed": { "echo": args }, "admin": null })),
            )
            .reaching_host(vec![HostCall::echo(args)]),
            Refused(error) => Case::new(name, &code, full_path, returns(json!({ "refused": error }))),
            Stopped(runtime) => Case::new(name, &code, full_path, runtime),
        }
    })
    .collect()
}
