//! The adversarial suite: escape attempts run through real worker processes,
//! once through the full path (static validation, then the hardened runtime)
//! and once straight into the runtime (no validation) so each layer is shown to
//! hold on its own. An attempt "escapes" if it returns the marker `ESCAPED`, if
//! the host sees a call it should not, or if the executor is unhealthy after it.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use quiver_contract::{ExecuteError, Limits};
use quiver_executor::{
    ipc::HostError,
    pool::{Owner, PoolConfig, WorkerCommand, WorkerPool},
    script::{ScriptContext, ScriptRunner, StashOp},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Records what reached the host.
#[derive(Default)]
struct RecordingContext {
    calls: Mutex<Vec<(String, Value)>>,
    stash_keys: Mutex<Vec<String>>,
}

impl ScriptContext for RecordingContext {
    fn tool_names(&self) -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([("demo".to_string(), vec!["echo".to_string()])])
    }
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            self.calls
                .lock()
                .unwrap()
                .push((name.clone(), args.clone()));
            if name == "demo__echo" || name == "demo.echo" {
                Ok(json!({"echo": args}))
            } else {
                Err(format!("unknown tool `{name}`").into())
            }
        })
    }
    fn search(&self, _query: String, _limit: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(json!([{"name": "demo__echo"}])) })
    }
    fn describe(&self, _name: String) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async {
            Ok(json!(
                "declare function echo(args: object): Promise<unknown>;"
            ))
        })
    }
    fn stash(&self, op: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            if let StashOp::Set(key, _, _) | StashOp::Get(key) | StashOp::Delete(key) = &op {
                self.stash_keys.lock().unwrap().push(key.clone());
            }
            Ok(Value::Null)
        })
    }
}

const MARK: &str = "ESCAPED";

/// (name, code): each returns "ESCAPED" if it got out.
fn attacks() -> Vec<(String, String)> {
    let mut list: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, code: &str| list.push((name.to_string(), code.to_string()));

    // String-to-code paths: an escape is the string's code running (it yields 7331).
    for (name, expr) in [
        ("eval direct", "eval('7331')"),
        ("eval indirect comma", "(0, eval)('7331')"),
        ("eval via globalThis", "globalThis.eval('7331')"),
        (
            "eval via globalThis computed",
            "globalThis['ev' + 'al']('7331')",
        ),
        (
            "eval alias const",
            "(() => { const e = eval; return e('7331'); })()",
        ),
        (
            "eval destructured",
            "(() => { const { eval: e } = globalThis; return e('7331'); })()",
        ),
        (
            "eval array alias",
            "(() => { const [e] = [eval]; return e('7331'); })()",
        ),
        ("eval default param", "((e = eval) => e('7331'))()"),
        ("eval ternary", "(true ? eval : null)('7331')"),
        ("eval logical", "(eval || null)('7331')"),
        ("Function ctor", "Function('return 7331')()"),
        ("new Function", "new Function('return 7331')()"),
        (
            "Function alias",
            "(() => { const F = Function; return F('return 7331')(); })()",
        ),
        (
            "constructor chain",
            "(() => {}).constructor('return 7331')()",
        ),
        (
            "constructor constructor",
            "({}).constructor.constructor('return 7331')()",
        ),
        (
            "computed constructor",
            "(() => {})['constructor']('return 7331')()",
        ),
        (
            "concat constructor",
            "(() => {})['constr' + 'uctor']('return 7331')()",
        ),
        (
            "template constructor",
            "(() => {})[`constructor`]('return 7331')()",
        ),
        (
            "variable key constructor",
            "(() => { const k = 'constr' + 'uctor'; return (() => {})[k]('return 7331')(); })()",
        ),
        (
            "async function ctor",
            "(async function () {}).constructor('return 7331')()",
        ),
        (
            "generator ctor",
            "(function* () {}).constructor('yield 7331')().next().value",
        ),
        (
            "async generator ctor",
            "(async function* () {}).constructor('yield 7331')().next()",
        ),
        (
            "getPrototypeOf async",
            "Object.getPrototypeOf(async function () {}).constructor('return 7331')()",
        ),
        (
            "getPrototypeOf generator",
            "Object.getPrototypeOf(function* () {}).constructor('yield 7331')().next().value",
        ),
        (
            "variable key on proto",
            "(() => { const k = ['con', 'structor'].join(''); return Object.getPrototypeOf(async () => {})[k]('return 7331')(); })()",
        ),
        (
            "bound Function",
            "Function.prototype.bind.call(Function, null, 'return 7331')()()",
        ),
        ("Function apply", "Function.apply(null, ['return 7331'])()"),
        (
            "Reflect construct",
            "Reflect.construct(Function, ['return 7331'])()",
        ),
        (
            "Reflect apply",
            "Reflect.apply(Function, null, ['return 7331'])()",
        ),
        (
            "class extends Function",
            "(() => { class F extends Function {} return new F('return 7331')(); })()",
        ),
        (
            "setTimeout string",
            "new Promise(r => { globalThis.r = r; setTimeout('globalThis.r(7331)', 0); setTimeout(() => r(0), 50); })",
        ),
        (
            "dynamic import",
            "import('data:text/javascript,export default 7331').then(m => m.default)",
        ),
    ] {
        add(
            name,
            &format!(
                "const r = await {expr};\nreturn (r === 7331 || (r && r.value === 7331)) ? '{MARK}' : 'contained';"
            ),
        );
    }
    // Ambient authority: an escape is reaching the object at all.
    for (name, expr) in [
        ("require", "require('fs')"),
        ("Deno", "Deno.readTextFileSync('/etc/passwd')"),
        ("Deno core", "Deno.core.ops"),
        ("globalThis Deno computed", "globalThis['De' + 'no'].core"),
        ("WebAssembly", "WebAssembly.Module"),
        ("fetch", "fetch('http://127.0.0.1:1/')"),
        ("SharedArrayBuffer", "new SharedArrayBuffer(8)"),
        ("Atomics", "Atomics.wait"),
        ("process env", "process.env"),
        ("XMLHttpRequest", "new XMLHttpRequest()"),
    ] {
        add(
            name,
            &format!("const r = {expr};\nreturn r ? '{MARK}' : 'contained';"),
        );
    }
    // Rejected statically; harmless at run time (the runtime layer is checked for health only).
    for (name, expr) in [
        ("Proxy trap", "new Proxy({}, { get: () => 1 }).x"),
        (
            "with statement",
            "(() => { with ({ a: 1 }) { return a; } })()",
        ),
        (
            "__proto__ literal",
            "({ __proto__: { polluted: 1 } }).polluted",
        ),
        (
            "__proto__ assign",
            "(() => { const o = {}; o.__proto__.polluted = 1; return ({}).polluted; })()",
        ),
        ("defineGetter", "({}).__defineGetter__('x', () => 1)"),
        ("lookupGetter", "({}).__lookupGetter__('__proto__')"),
        (
            "prepareStackTrace",
            "(() => { Error.prepareStackTrace = (e, s) => s; return new Error().stack; })()",
        ),
        (
            "captureStackTrace",
            "(() => { const o = {}; Error.captureStackTrace(o); return o.stack; })()",
        ),
        (
            "arguments callee",
            "(function () { return arguments.callee; })()",
        ),
        ("import meta", "import.meta"),
    ] {
        add(name, &format!("const r = {expr};\nreturn 'contained';"));
    }

    // Prototype pollution of intrinsics and the API objects; checked by the next execution too.
    for (name, code) in [
        ("pollute Object.prototype", "Object.prototype.polluted = 1;"),
        (
            "pollute Array.prototype.map",
            "Array.prototype.map = function () { return 'hijacked'; };",
        ),
        (
            "pollute Promise.prototype.then",
            "Promise.prototype.then = function () { return 'hijacked'; };",
        ),
        (
            "pollute JSON.stringify",
            "JSON.stringify = () => 'hijacked';",
        ),
        ("pollute JSON.parse", "JSON.parse = () => 'hijacked';"),
        ("replace tools.call", "tools.call = () => 'hijacked';"),
        (
            "replace tools server",
            "tools.demo = { echo: () => 'hijacked' };",
        ),
        ("replace tools tool", "tools.demo.echo = () => 'hijacked';"),
        (
            "tools __proto__",
            "tools.__proto__.call = () => 'hijacked';",
        ),
        (
            "define on tools",
            "Object.defineProperty(tools, 'call', { value: () => 'hijacked' });",
        ),
        (
            "setPrototypeOf tools",
            "Object.setPrototypeOf(tools, { call: () => 'hijacked' });",
        ),
        ("replace stash.get", "stash.get = () => 'hijacked';"),
        ("replace console.log", "console.log = () => 'hijacked';"),
        ("replace search", "search = () => 'hijacked';"),
        (
            "pollute Function.prototype.call",
            "Function.prototype.call = () => 'hijacked';",
        ),
        (
            "pollute Symbol.iterator",
            "Array.prototype[Symbol.iterator] = function* () { yield 'hijacked'; };",
        ),
        ("pollute Object.keys", "Object.keys = () => ['hijacked'];"),
        (
            "pollute String.prototype",
            "String.prototype.toString = () => 'hijacked';",
        ),
        (
            "pollute Error",
            "globalThis.Error = function () { return 'hijacked'; };",
        ),
        ("global var leak", "globalThis.leaked = 'hijacked';"),
    ] {
        add(
            name,
            &format!(
                "try {{ {code} }} catch (e) {{}}\nconst r = await tools.call('demo__echo', {{ a: [1, 2].map(x => x) }});\nreturn (JSON.stringify(r).includes('hijacked') || String([1].map(x => x)) === 'hijacked') ? '{MARK}' : 'contained';"
            ),
        );
    }

    // Getter / toPrimitive tricks on what crosses to the host.
    for (name, args) in [
        ("getter args", "{ get x() { return globalThis; } }"),
        (
            "toPrimitive args",
            "{ x: { [Symbol.toPrimitive]() { return 'ESC'; } } }",
        ),
        ("toJSON args", "{ toJSON() { return { injected: true }; } }"),
        ("proxy-like args", "Object.create(null)"),
        ("function in args", "{ f: function () {} }"),
        ("symbol in args", "{ s: Symbol('x') }"),
        ("bigint in args", "{ n: 10n }"),
        (
            "cyclic args",
            "(() => { const o = {}; o.self = o; return o; })()",
        ),
        (
            "__proto__ args",
            "JSON.parse('{\"__proto__\": {\"admin\": true}}')",
        ),
        (
            "deep args",
            "(() => { let o = {}; for (let i = 0; i < 5000; i++) o = { o }; return o; })()",
        ),
        ("huge args", "{ s: 'x'.repeat(20 * 1024 * 1024) }"),
        (
            "sparse array args",
            "(() => { const a = []; a[1e9] = 1; return { a }; })()",
        ),
    ] {
        add(
            name,
            &format!(
                "let r;\ntry {{ r = await tools.call('demo__echo', {args}); }} catch (e) {{ return 'contained'; }}\nreturn ({{}}).admin === true ? '{MARK}' : 'contained';"
            ),
        );
    }

    // Resource exhaustion.
    for (name, code) in [
        ("infinite loop", "while (true) {}"),
        ("infinite for", "for (;;) {}"),
        ("infinite recursion", "function f() { return f(); } f();"),
        (
            "mutual recursion",
            "function a() { return b(); } function b() { return a(); } a();",
        ),
        (
            "deep recursion with args",
            "function f(n) { return f(n + 1) + 1; } f(0);",
        ),
        ("async infinite", "while (true) { await null; }"),
        (
            "promise flood",
            "const p = []; while (true) p.push(Promise.resolve(1));",
        ),
        (
            "catastrophic regex",
            "/^(a+)+$/.test('a'.repeat(40) + 'b');",
        ),
        ("catastrophic regex 2", "/(x+x+)+y/.test('x'.repeat(50));"),
        ("giant string", "let s = 'x'; while (true) s += s;"),
        (
            "giant array",
            "const a = []; while (true) a.push(new Array(1e6).fill(1));",
        ),
        ("giant typed array", "new Float64Array(1e10);"),
        (
            "giant map",
            "const m = new Map(); for (let i = 0; ; i++) m.set(i, 'x'.repeat(100));",
        ),
        ("string repeat huge", "'x'.repeat(2 ** 31);"),
        ("array length huge", "new Array(2 ** 32 - 1).fill(0);"),
        (
            "json bomb",
            "let s = '[]'; for (let i = 0; i < 30; i++) s = '[' + s + ',' + s + ']'; JSON.parse(s);",
        ),
        (
            "timer flood",
            "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1);",
        ),
        ("long timer", "await new Promise(r => setTimeout(r, 1e9));"),
        (
            "tool call flood",
            "await Promise.all(Array.from({ length: 1000 }, () => tools.call('demo__echo', {})));",
        ),
        ("log flood", "while (true) console.log('x'.repeat(1000));"),
        ("huge result", "return 'x'.repeat(50 * 1024 * 1024);"),
        (
            "deep result",
            "let o = {}; for (let i = 0; i < 100000; i++) o = { o }; return o;",
        ),
        ("cyclic result", "const o = {}; o.o = o; return o;"),
        ("unresolved promise", "await new Promise(() => {});"),
        (
            "error in toString",
            "throw { toString() { while (true) {} } };",
        ),
        (
            "throw deep object",
            "let o = {}; for (let i = 0; i < 100000; i++) o = { o }; throw o;",
        ),
    ] {
        add(name, &format!("{code}\nreturn 'contained';"));
    }

    // Stash key traversal and abuse.
    for (name, key) in [
        ("stash dotdot", "'../../etc/passwd'"),
        ("stash absolute", "'/etc/shadow'"),
        ("stash nul", "'a\\u0000b'"),
        ("stash huge key", "'k'.repeat(1e6)"),
        ("stash proto key", "'__proto__'"),
        ("stash constructor key", "'constructor'"),
        ("stash object key", "{ toString() { return 'x'; } }"),
        ("stash other session", "'session:other/key'"),
    ] {
        add(
            name,
            &format!(
                "try {{ await stash.set({key}, 1); await stash.get({key}); }} catch (e) {{}}\nreturn 'contained';"
            ),
        );
    }

    // Escapes via the API surface.
    for (name, code) in [
        ("call unknown tool", "await tools.call('../../etc', {});"),
        (
            "call with non-string name",
            "await tools.call({ toString() { return 'x'; } }, {});",
        ),
        ("call hidden server", "await tools.secret.read({});"),
        (
            "tools keys",
            "return Object.keys(tools).some(k => k.startsWith('_')) ? 'ESCAPED' : 'contained';",
        ),
        (
            "tools internals",
            "return Object.getOwnPropertyNames(tools.demo.echo).join(',').includes('op') ? 'ESCAPED' : 'contained';",
        ),
        (
            "describe traversal",
            "await describe('../../../etc/passwd');",
        ),
        ("search huge query", "await search('x'.repeat(1e6), 1e9);"),
        (
            "console object",
            "console.log({ get x() { return globalThis; } });",
        ),
        ("console cyclic", "const o = {}; o.o = o; console.log(o);"),
        (
            "this at top level",
            "return (typeof this === 'object' && this && this.Deno) ? 'ESCAPED' : 'contained';",
        ),
        (
            "globalThis keys",
            "return Object.getOwnPropertyNames(globalThis).some(k => /deno|core|ops/i.test(k)) ? 'ESCAPED' : 'contained';",
        ),
        (
            "Symbol registry",
            "return Object.getOwnPropertySymbols(globalThis).length > 5 ? 'ESCAPED' : 'contained';",
        ),
    ] {
        add(
            name,
            &format!("try {{ {code} }} catch (e) {{}}\nreturn 'contained';"),
        );
    }

    // Ambient authority: none of these may exist in the sandbox.
    for global in [
        "process",
        "module",
        "fetch",
        "WebSocket",
        "Worker",
        "importScripts",
        "navigator",
        "location",
        "document",
        "Bun",
        "__dirname",
        "Buffer",
        "setInterval",
        "setImmediate",
        "XMLHttpRequest",
        "SharedArrayBuffer",
    ] {
        add(
            &format!("ambient {global}"),
            &format!("return typeof {global} !== 'undefined' ? '{MARK}' : 'contained';"),
        );
    }
    add(
        "stack leaks host paths",
        &format!(
            "const s = String(new Error('x').stack || '');\nreturn /\\/(home|root|usr|work|tmp|proc)\\//.test(s) ? '{MARK}' : 'contained';"
        ),
    );
    add(
        "Symbol.species to globalThis",
        &format!(
            "class A extends Array {{ static get [Symbol.species]() {{ return function () {{ return globalThis; }}; }} }}\nconst r = new A(1, 2).map(x => x);\nreturn (r && r.Deno) ? '{MARK}' : 'contained';"
        ),
    );

    // Syntax-level tricks.
    for (name, code) in [
        (
            "unicode escape eval",
            "return \\u0065val('1') ? 'ESCAPED' : 'contained';",
        ),
        (
            "non-ascii identifier",
            "const еval = 1; return 'contained';",
        ),
        ("html comment", "<!-- x\nreturn 'contained';"),
        (
            "deep nesting",
            &format!("return {}1{};", "[".repeat(10_000), "]".repeat(10_000)),
        ),
        (
            "deep parens",
            &format!("return {}1{};", "(".repeat(10_000), ")".repeat(10_000)),
        ),
        (
            "break out of wrapper",
            "}); globalThis.x = 1; (async () => {",
        ),
        (
            "close wrapper with return",
            "return 1; }); eval('1'); (() => {",
        ),
        ("label abuse", "a: { break a; }\nreturn 'contained';"),
        ("debugger", "debugger;\nreturn 'contained';"),
        (
            "octal escape",
            "return '\\101' === 'A' ? 'contained' : 'contained';",
        ),
    ] {
        add(name, code);
    }
    list
}

fn pool() -> Arc<WorkerPool> {
    let mut config = PoolConfig::new(WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_quiver")),
        args: vec!["__worker".into()],
    });
    config.min_workers = 1;
    config.max_workers = 2;
    WorkerPool::start(config)
}

fn limits() -> Limits {
    Limits {
        wall_ms: 1_000,
        ..Limits::default()
    }
}

async fn assert_healthy(pool: &WorkerPool, after: &str) {
    let context = Arc::new(RecordingContext::default());
    let outcome = pool
        .run("const r = await tools.call('demo__echo', { ok: [1, 2, 3].map(x => x * 2) }); return [typeof eval, ({}).polluted, r.echo.ok];", limits(), context)
        .await
        .unwrap_or_else(|e| panic!("executor unhealthy after `{after}`: {e}"));
    assert_eq!(
        outcome.result,
        Some(json!(["undefined", null, [2, 4, 6]])),
        "state leaked or executor unhealthy after `{after}`: {outcome:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_escape_attempt_is_contained_by_each_layer() {
    let attacks = attacks();
    assert!(
        attacks.len() >= 150,
        "the suite has {} attempts",
        attacks.len()
    );
    let pool = pool();
    let runner = ScriptRunner::new(pool.clone(), limits());
    let mut rejected_statically = 0;
    for (name, code) in &attacks {
        tracing::info!("--- {name}");
        // Layer 1 + 2: the full path.
        let context = Arc::new(RecordingContext::default());
        match runner
            .execute(
                &Owner::new("tenant", "adversary"),
                code,
                context.clone(),
                CancellationToken::new(),
            )
            .await
        {
            Err(ExecuteError::Rejected(_)) => rejected_statically += 1,
            Err(e) => panic!("`{name}`: the executor failed instead of containing it: {e}"),
            Ok(outcome) => assert_ne!(
                outcome.result,
                Some(json!(MARK)),
                "`{name}` escaped through the full path"
            ),
        }
        // Layer 2 alone: the hardened runtime without static validation.
        let context = Arc::new(RecordingContext::default());
        let outcome = pool
            .run(code, limits(), context.clone())
            .await
            .unwrap_or_else(|e| {
                panic!("`{name}`: the runtime layer failed instead of containing it: {e}")
            });
        assert_ne!(
            outcome.result,
            Some(json!(MARK)),
            "`{name}` escaped the runtime layer: {outcome:?}"
        );
        for (tool, _) in context.calls.lock().unwrap().iter() {
            assert!(
                tool == "demo__echo"
                    || tool.starts_with("..")
                    || tool == "x"
                    || tool.starts_with("secret"),
                "`{name}` reached the host with `{tool}`"
            );
        }
        assert_healthy(&pool, name).await;
    }
    eprintln!(
        "{} attempts; {rejected_statically} rejected by static validation, all contained by the runtime alone",
        attacks.len()
    );
}
