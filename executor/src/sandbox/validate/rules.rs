//! The rule tables: which names are blocked where, the built-ins scripts may
//! not modify, the calls that build strings, and the messages that explain each
//! rule. Data only; the visitor decides where a name appears.

/// The name is blocked as an identifier reference.
pub(crate) const REF: u8 = 1;
/// …as a declared name (variable, parameter, function, class, catch binding).
pub(crate) const BIND: u8 = 2;
/// …as a property name: member access, object literal key, destructuring key,
/// class member key.
pub(crate) const PROP: u8 = 4;
/// …as the exact value of a string literal (it would work as a computed key).
pub(crate) const STR: u8 = 8;

pub(crate) struct NameRule {
    name: &'static str,
    pub(crate) rule: &'static str,
    uses: u8,
    pub(crate) why: &'static str,
}

const fn blocked(name: &'static str, rule: &'static str, uses: u8, why: &'static str) -> NameRule {
    NameRule {
        name,
        rule,
        uses,
        why,
    }
}

const WHY_EVAL: &str = "scripts cannot evaluate strings as code";
const WHY_FUNCTION: &str = "the Function constructors evaluate strings as code; write ordinary \
                            functions (and test for them with `typeof x === \"function\"`)";
const WHY_REQUIRE: &str = "there is no module system in the sandbox; call tools through `tools`";
const WHY_PROXY: &str = "proxies can intercept and impersonate the sandbox's own objects";
const WHY_REFLECT: &str = "reflection reaches internals that ordinary property access cannot; use \
                           ordinary property access";
const WHY_WASM: &str = "WebAssembly is not available to scripts";
const WHY_DENO: &str = "the host runtime's API is not available to scripts";
const WHY_SAB: &str = "shared memory enables timing attacks; use `ArrayBuffer`";
const WHY_ATOMICS: &str = "atomics enable timing attacks and blocking waits";
const WHY_GLOBAL: &str = "the global object reaches every name these rules block; use the globals \
                          you need (`JSON`, `Math`, …) by name";
const WHY_CONSTRUCTOR: &str = "it leads from any value to the Function constructor, which \
                               evaluates strings as code; to check a type use `typeof`, \
                               `Array.isArray` or `instanceof`";
const WHY_PROTO: &str = "it reads and rewrites prototypes that the whole sandbox shares; use \
                         classes and plain objects";
const WHY_STACK: &str = "V8 stack-trace hooks expose the functions on the call stack";
const WHY_CALLER: &str = "`caller`/`callee` expose functions further up the call stack; to read \
                          a data field with that name use `Object.entries()`";
const WHY_REFLECTION: &str = "prototype and property-descriptor reflection reaches or rewrites \
                              hidden internals such as the Function constructor without naming \
                              them; use `Object.keys`/`Object.entries`";

/// Short names for the `uses` masks, to keep the table readable.
const ANY: u8 = REF | BIND | PROP;
const ANY_STR: u8 = REF | BIND | PROP | STR;

const NAME_RULES: &[NameRule] = &[
    blocked("eval", "eval", ANY, WHY_EVAL),
    blocked("Function", "function-constructor", ANY, WHY_FUNCTION),
    blocked("AsyncFunction", "function-constructor", ANY, WHY_FUNCTION),
    blocked(
        "GeneratorFunction",
        "function-constructor",
        ANY,
        WHY_FUNCTION,
    ),
    blocked(
        "AsyncGeneratorFunction",
        "function-constructor",
        ANY,
        WHY_FUNCTION,
    ),
    blocked("require", "require", ANY, WHY_REQUIRE),
    blocked("Proxy", "proxy", ANY, WHY_PROXY),
    blocked("Reflect", "reflect", ANY, WHY_REFLECT),
    blocked("WebAssembly", "webassembly", ANY, WHY_WASM),
    blocked("Deno", "deno", ANY, WHY_DENO),
    blocked("SharedArrayBuffer", "shared-memory", ANY, WHY_SAB),
    blocked("Atomics", "shared-memory", ANY, WHY_ATOMICS),
    blocked("globalThis", "global-alias", ANY, WHY_GLOBAL),
    blocked("window", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("self", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("global", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("constructor", "constructor-chain", ANY_STR, WHY_CONSTRUCTOR),
    blocked("__proto__", "proto", ANY_STR, WHY_PROTO),
    blocked("__defineGetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__defineSetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__lookupGetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__lookupSetter__", "proto", ANY_STR, WHY_PROTO),
    blocked(
        "prepareStackTrace",
        "stack-trace",
        REF | PROP | STR,
        WHY_STACK,
    ),
    blocked(
        "captureStackTrace",
        "stack-trace",
        REF | PROP | STR,
        WHY_STACK,
    ),
    blocked("caller", "caller", PROP, WHY_CALLER),
    blocked("callee", "caller", PROP, WHY_CALLER),
    blocked("getPrototypeOf", "reflection", PROP, WHY_REFLECTION),
    blocked("setPrototypeOf", "reflection", PROP, WHY_REFLECTION),
    blocked(
        "getOwnPropertyDescriptor",
        "reflection",
        PROP,
        WHY_REFLECTION,
    ),
    blocked(
        "getOwnPropertyDescriptors",
        "reflection",
        PROP,
        WHY_REFLECTION,
    ),
    blocked("getOwnPropertyNames", "reflection", PROP, WHY_REFLECTION),
    blocked("defineProperty", "reflection", PROP, WHY_REFLECTION),
    blocked("defineProperties", "reflection", PROP, WHY_REFLECTION),
];

pub(crate) fn name_rule(name: &str, use_: u8) -> Option<&'static NameRule> {
    NAME_RULES
        .iter()
        .find(|r| r.uses & use_ != 0 && r.name == name)
}

/// Names that denote the global object.
pub(crate) const GLOBAL_OBJECTS: &[&str] = &["globalThis", "window", "self", "global"];

/// Standard globals other code in the sandbox relies on: writing into them is
/// rejected, and so is computed access on them with a non-literal key.
pub(crate) const BUILTINS: &[&str] = &[
    "Object",
    "Array",
    "String",
    "Number",
    "Boolean",
    "Symbol",
    "BigInt",
    "Math",
    "JSON",
    "Date",
    "RegExp",
    "Promise",
    "Error",
    "TypeError",
    "RangeError",
    "SyntaxError",
    "ReferenceError",
    "EvalError",
    "URIError",
    "AggregateError",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "WeakRef",
    "FinalizationRegistry",
    "ArrayBuffer",
    "DataView",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
    "Intl",
    "Iterator",
    "console",
    "parseInt",
    "parseFloat",
    "isNaN",
    "isFinite",
    "encodeURI",
    "encodeURIComponent",
    "decodeURI",
    "decodeURIComponent",
    "structuredClone",
    "queueMicrotask",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "TextEncoder",
    "TextDecoder",
    "URL",
    "URLSearchParams",
    "atob",
    "btoa",
];

/// Calls whose result is a string assembled from pieces: as computed keys they
/// spell names the rules block.
pub(crate) const STRING_BUILDER_FUNCTIONS: &[&str] = &[
    "String",
    "atob",
    "btoa",
    "unescape",
    "escape",
    "decodeURI",
    "decodeURIComponent",
];
pub(crate) const STRING_BUILDER_METHODS: &[&str] = &[
    "fromCharCode",
    "fromCodePoint",
    "raw",
    "join",
    "concat",
    "repeat",
    "replace",
    "replaceAll",
    "padStart",
    "padEnd",
    "reverse",
];

/// Functions that evaluate a string first argument as code.
pub(crate) const STRING_TIMERS: &[&str] = &["setTimeout", "setInterval", "setImmediate"];

pub(crate) fn blocked_name_message(name: &str, use_: u8, why: &str) -> String {
    match use_ {
        BIND => {
            format!("`{name}` cannot be declared: it is a blocked name ({why}); pick another name")
        }
        STR => format!(
            "the string \"{name}\" is not allowed: as a computed key it reaches `{name}` ({why})"
        ),
        PROP if !why.contains("Object.entries") => format!(
            "`{name}` is not allowed: {why} (to read a data field with this name, iterate \
             `Object.entries()`)"
        ),
        _ => format!("`{name}` is not allowed: {why}"),
    }
}

/// Reported for `<!--` and `-->`.
pub(crate) const HTML_COMMENT_MESSAGE: &str = "HTML-style comments (`<!--`, `-->`) are not allowed: scripts \
                                    and modules parse them differently; use `//`";

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn eval_in_every_spelling() {
        assert_rule("eval('1')", "eval");
        assert_rule("(0, eval)('1')", "eval");
        assert_rule("const e = eval; e('1')", "eval");
        assert_rule("x.eval('1')", "eval");
        assert_rule("const { eval: e } = obj", "eval");
        assert_rule("let eval = 1", "eval");
        assert_rule("\\u0065val('1')", "eval");
        assert_rule("setTimeout('alert(1)', 0)", "eval");
    }

    #[test]
    fn function_constructors() {
        assert_rule("new Function('return 1')()", "function-constructor");
        assert_rule("const F = AsyncFunction", "function-constructor");
        assert_rule("function Function() {}", "function-constructor");
        assert_rule("(async function(){}).constructor('x')", "constructor-chain");
        assert_rule("x['constructor']", "constructor-chain");
        assert_rule("x[`constructor`]", "constructor-chain");
        assert_rule("const k = 'constructor'", "constructor-chain");
        assert_rule("(function(){})[k]", "constructor-chain");
        assert_rule("function f() {}\nf[k]", "constructor-chain");
        assert_rule("class A { static constructor() {} }", "constructor-chain");
    }

    #[test]
    fn modules_and_host() {
        assert_rule("await import('x')", "dynamic-import");
        assert_rule("import.meta.url", "import-meta");
        assert_rule("import fs from 'fs'", "import");
        assert_rule("export const a = 1", "export");
        assert_rule("require('fs')", "require");
        assert_rule("Deno.exit()", "deno");
        assert_rule("new Proxy({}, {})", "proxy");
        assert_rule("Reflect.ownKeys(x)", "reflect");
        assert_rule("WebAssembly.compile(b)", "webassembly");
        assert_rule("new SharedArrayBuffer(8)", "shared-memory");
        assert_rule("Atomics.wait(a, 0, 0)", "shared-memory");
        assert_rule("with (o) { x }", "with");
        assert_rule("debugger;", "debugger");
        assert_rule("__bootstrap.core", "internal-name");
        assert_ok("const __cache = {}; __cache.a = 1;");
    }

    #[test]
    fn globals_and_prototypes() {
        assert_rule("globalThis['ev' + 'al']", "global-computed");
        assert_rule("window[k]", "global-computed");
        assert_rule("const g = globalThis", "global-alias");
        assert_rule("self.x", "global-alias");
        assert_rule("x.__proto__ = y", "proto");
        assert_rule("({ __proto__: p })", "proto");
        assert_rule("o.__defineGetter__('a', f)", "proto");
        assert_rule("Object.setPrototypeOf(a, b)", "reflection");
        assert_rule("Array.prototype.map = f", "builtin-mutation");
        assert_rule("Math.random = () => 4", "builtin-mutation");
        assert_rule("delete Array.prototype.push", "builtin-mutation");
        assert_rule("JSON = {}", "builtin-mutation");
        assert_rule(
            "Object.assign(Object.prototype, { x: 1 })",
            "builtin-mutation",
        );
        assert_rule("Object[k]", "builtin-computed");
        assert_rule("Error.prepareStackTrace = f", "stack-trace");
        assert_rule("Error.captureStackTrace(o)", "stack-trace");
        assert_rule("function f() { return arguments.callee }", "caller");
        assert_rule("function f() { return this }", "this");
    }
}
