//! Language features that reach engine internals or shared prototypes
//! (proxies, `with`, `__proto__`, the legacy accessors, V8's stack-trace
//! hooks, `arguments.callee`, `import.meta`). The validator refuses them; on
//! the runtime alone they either fail or touch only the script's own objects.

use serde_json::json;

use crate::sandbox_adversarial::adversarial::{
    case::{Case, rejected, returns, throws},
    recording_context::HostCall,
};

pub fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "Proxy trap",
            "const p = new Proxy(tools, { get: () => () => 'hijacked' });\nreturn [await tools.demo.echo({ a: 1 }), typeof p.demo];",
            rejected("proxy"),
            // `tools` is frozen: a proxy may not report other values for it.
            throws("TypeError: proxy: inconsistent get"),
        )
        .reaching_host(vec![HostCall::Tool {
            name: "demo.echo".into(),
            args: json!({ "a": 1 }),
        }]),
        Case::new(
            "with statement",
            "return (() => { with ({ a: 1 }) { return a; } })();",
            rejected("with"),
            throws("SyntaxError: invalid keyword: with"),
        ),
        Case::new(
            "__proto__ literal",
            "const o = { __proto__: { polluted: 1 } };\nreturn [o.polluted, ({}).polluted ?? null];",
            rejected("proto"),
            returns(json!([1, null])),
        ),
        Case::new(
            "__proto__ assign",
            "const o = {};\no.__proto__.polluted = 1;\nreturn ({}).polluted ?? null;",
            rejected("proto"),
            throws("TypeError: Cannot add property polluted, object is not extensible"),
        ),
        Case::new(
            "defineGetter on a shared prototype",
            "[].__defineGetter__.call(Array.prototype, 'polluted', () => 'hijacked');\nreturn [].polluted ?? null;",
            rejected("proto"),
            throws("TypeError: object is not extensible"),
        ),
        Case::new(
            "lookupGetter reaches Object.prototype",
            "const get = ({}).__lookupGetter__('__proto__');\nget.call({}).polluted = 1;\nreturn ({}).polluted ?? null;",
            rejected("proto"),
            throws("TypeError: Cannot add property polluted, object is not extensible"),
        ),
        Case::new(
            "prepareStackTrace",
            "Error.prepareStackTrace = (e, s) => s;\nreturn typeof new Error().stack;",
            rejected("stack-trace"),
            throws("TypeError: Cannot add property prepareStackTrace, object is not extensible"),
        ),
        Case::new(
            "captureStackTrace",
            "const o = {};\nError.captureStackTrace(o);\nreturn o.stack;",
            rejected("stack-trace"),
            throws("TypeError: Error.captureStackTrace is not a function"),
        ),
        Case::new(
            "arguments callee",
            "return (function () { return typeof arguments.callee; })();",
            rejected("caller"),
            throws("TypeError: invalid property access"),
        ),
        Case::new(
            "import meta",
            "return import.meta;",
            rejected("import-meta"),
            throws("SyntaxError: import.meta only valid in module code"),
        ),
    ]
}
