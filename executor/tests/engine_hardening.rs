//! Runtime hardening on its own (no static validator in front): no
//! string-to-code, no engine or host internals, frozen intrinsics and API, and
//! nothing a script does survives into the next runtime.

use std::{collections::BTreeMap, sync::Arc};

use futures::future::{BoxFuture, FutureExt};
use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    ipc::{HostError, HostRequest, ToolNames},
};
use serde_json::{Value, json};

struct EchoHost;

impl HostBridge for EchoHost {
    fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        async move { serde_json::to_value(request).map_err(|e| HostError::from(e.to_string())) }
            .boxed()
    }
}

async fn run(code: &str) -> ScriptOutcome {
    let limits = Limits::default();
    let tools: BTreeMap<_, _> = [("github".to_string(), vec!["search_issues".to_string()])].into();
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    runtime
        .execute(
            code,
            &limits,
            &ToolNames::complete(tools),
            Arc::new(EchoHost),
        )
        .await
}

/// Runs `expression` and returns its JSON value, failing on any error.
async fn value_of(expression: &str) -> Value {
    let outcome = run(&format!("return {expression};")).await;
    assert_eq!(outcome.error, None, "{expression}: {outcome:?}");
    outcome.result.unwrap()
}

/// Asserts that `code` throws at runtime.
async fn assert_throws(code: &str) -> String {
    let outcome = run(code).await;
    let error = outcome
        .error
        .unwrap_or_else(|| panic!("{code} did not throw: {:?}", outcome.result));
    assert_eq!(error.kind, "runtime", "{code}: {error:?}");
    error.message
}

#[tokio::test]
async fn code_generation_from_strings_is_unavailable() {
    for code in [
        "return eval('1');",
        "return (0, globalThis.eval)('1');",
        "return Function('return 1')();",
        "return new Function('return 1')();",
        "return Reflect.construct(Function, ['return 1'])();",
        "return (function () {}).constructor('return 1')();",
        "return ({}).constructor.constructor('return this')();",
        "return (async function () {}).constructor('return 1');",
        "return (async () => {}).constructor('return 1');",
        "return Object.getPrototypeOf(function* () {}).constructor('yield 1');",
        "return Object.getPrototypeOf(async function* () {}).constructor('yield 1');",
        "return Function.prototype.constructor('return 1')();",
        "return await import('data:text/javascript,export default 1');",
        "setTimeout('globalThis.pwned = 1', 0);",
    ] {
        let message = assert_throws(code).await;
        assert!(!message.is_empty(), "{code}");
    }
    // `instanceof` still works with the disabled constructors.
    assert_eq!(
        value_of("[(() => {}) instanceof Function, (async () => {}) instanceof Function, typeof Function]").await,
        json!([true, true, "function"])
    );
}

#[tokio::test]
async fn engine_and_host_internals_are_unreachable() {
    assert_eq!(
        value_of(
            "[typeof Deno, typeof __bootstrap, typeof WebAssembly, typeof fetch, typeof SharedArrayBuffer, \
             typeof Atomics, typeof WeakRef, typeof FinalizationRegistry, typeof ShadowRealm, typeof gc, \
             typeof performance, typeof eval, typeof require, typeof process]"
        )
        .await,
        json!(vec!["undefined"; 14])
    );
    assert_eq!(
        value_of("[typeof Error.prepareStackTrace, typeof Error.captureStackTrace]").await,
        json!(["undefined", "undefined"])
    );
    // Functions handed out by the API do not lead back to the bootstrap.
    for code in [
        "return String(tools.github.search_issues.caller);",
        "return String(console.log.arguments);",
        "return await new Promise((r) => setTimeout(function f() { r(String(f.caller)); }, 1));",
        "const d = Object.getOwnPropertyDescriptor(Object.prototype, 'toString'); return String(d.get.caller);",
    ] {
        assert_throws(code).await;
    }
}

#[tokio::test]
async fn the_global_scope_holds_only_standard_javascript_and_the_api() {
    let names = value_of("Reflect.ownKeys(globalThis).map(String)").await;
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for api in [
        "tools",
        "search",
        "describe",
        "stash",
        "resources",
        "console",
        "setTimeout",
    ] {
        assert!(names.contains(&api), "{api} missing from {names:?}");
    }
    for name in &names {
        assert!(
            !name.starts_with("__") && !name.starts_with("Symbol("),
            "unexpected global {name}"
        );
    }
}

#[tokio::test]
async fn intrinsics_and_the_api_are_frozen() {
    for code in [
        "Object.prototype.polluted = 1;",
        "Array.prototype.map = () => 'hijacked';",
        "Promise.prototype.then = () => 'hijacked';",
        "JSON.stringify = () => 'hijacked';",
        "tools.__proto__.y = 1;",
        "tools.github.search_issues = () => 'hijacked';",
        "tools.call = () => 'hijacked';",
        "tools.extra = {};",
        "console.log = () => {};",
        "stash.get = () => 'hijacked';",
        "globalThis.search = () => 'hijacked';",
        "globalThis.leaked = 1;",
        "delete globalThis.tools;",
        "Object.setPrototypeOf(Object.prototype, { polluted: 1 });",
        "Object.defineProperty(Array.prototype, 'polluted', { value: 1 });",
        // Breaking out of the async wrapper runs at the top level, which is no
        // more privileged.
        "return 1; })(); Object.defineProperty(globalThis, 'leaked', { value: 1 }); (async () => {",
    ] {
        assert_throws(code).await;
    }
    assert_eq!(
        value_of("[Object.isFrozen(globalThis), Object.isFrozen(tools), Object.isFrozen(tools.github), \
                  Object.isFrozen(stash), Object.isFrozen(console), Object.isFrozen(Object.prototype), \
                  Object.isFrozen(Object.getPrototypeOf(async function* () {}).prototype)]")
            .await,
        json!(vec![true; 7])
    );
}

#[tokio::test]
async fn ordinary_code_still_shadows_inherited_names() {
    // Frozen prototypes must not break assigning `toString`, `constructor`,
    // `name` or `message` on one's own objects.
    let code = r#"
        const counts = {};
        for (const word of ["constructor", "toString", "constructor"]) counts[word] = (counts[word] | 0) + 1;
        class NotFound extends Error { constructor(m) { super(m); this.name = "NotFound"; } }
        class BadInput extends TypeError { constructor(m) { super(m); this.name = "BadInput"; } }
        const e = new Error(); e.message = "set later";
        const o = Object.assign({}, { toString: 1, valueOf: 2 });
        return { counts, names: [new NotFound("x").name, new BadInput("y").name], message: e.message, o };
    "#;
    let outcome = run(code).await;
    assert_eq!(
        outcome.result,
        Some(json!({
            "counts": { "constructor": 2, "toString": 1 },
            "names": ["NotFound", "BadInput"],
            "message": "set later",
            "o": { "toString": 1, "valueOf": 2 },
        })),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn pollution_attempts_do_not_reach_a_second_runtime() {
    let attempt = r#"
        const attempts = [
            () => { Object.prototype.x = 1; },
            () => { tools.__proto__.y = 1; },
            () => { Array.prototype.map = () => "hijacked"; },
            () => { globalThis.state = "from the first run"; },
        ];
        let threw = 0;
        for (const f of attempts) { try { f(); } catch { threw++; } }
        return threw;
    "#;
    assert_eq!(run(attempt).await.result, Some(json!(4)));
    assert_eq!(
        value_of("[({}).x, 'y' in tools, [1, 2].map((n) => n * 2), typeof state]").await,
        json!([null, false, [2, 4], "undefined"])
    );
}

#[tokio::test]
async fn the_api_reveals_no_source_and_stacks_name_no_bootstrap_internals() {
    // Source text of API functions is not shown; the script's own is.
    for expression in [
        "String(search)",
        "String(stash.get)",
        "String(tools.call)",
        "String(tools.github.search_issues)",
        "String(console.log)",
        "Function.prototype.toString.call(setTimeout)",
        "String(Object.getOwnPropertyDescriptor(Object.prototype, 'toString').get)",
        "String(Function.prototype.toString)",
    ] {
        let shown = value_of(expression).await;
        let shown = shown.as_str().unwrap_or_default();
        assert!(
            shown.ends_with("() { [native code] }") && !shown.contains("request"),
            "{expression} showed {shown}"
        );
    }
    assert_eq!(
        value_of("String(function mine() { return 42; })").await,
        json!("function mine() { return 42; }")
    );

    // No stack names the bootstrap, whoever made the error.
    for code in [
        "try { tools.call(1); } catch (e) { return e.stack; }",
        "try { await search('x', -1); } catch (e) { return e.stack; }",
        "try { stash.set('k', 1, -1); } catch (e) { return e.stack; }",
        "try { await tools.call('github.search_issues', { q: 1n ** 1n }); return 'called'; } catch (e) { return e.stack; }",
        "return await new Promise((resolve) => setTimeout(() => resolve(new Error('in a timer').stack), 1));",
        "return await new Promise((resolve) => queueMicrotask(() => resolve(new Error('in a microtask').stack)));",
    ] {
        let outcome = run(code).await;
        assert_eq!(outcome.error, None, "{code}: {outcome:?}");
        let stack = outcome.result.unwrap_or_default().to_string();
        assert!(!stack.contains("bootstrap"), "{code}: {stack}");
    }

    // The stack depth cannot be changed; it is a plain frozen number.
    assert_eq!(
        value_of("(() => { try { Error.stackTraceLimit = 0; } catch {} return [typeof Error.stackTraceLimit, Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit').writable]; })()").await,
        json!(["number", false])
    );
}

#[tokio::test]
async fn parser_messages_are_our_own() {
    // A result nested past the serialiser's depth limit.
    let outcome = run("let v = 1; for (let i = 0; i < 200; i++) v = [v]; return v;").await;
    let error = outcome.error.expect("an output error");
    assert_eq!(error.kind, "output");
    assert!(
        error.message.contains("nested more than 128 levels")
            && !error.message.contains("recursion limit"),
        "{}",
        error.message
    );
}
