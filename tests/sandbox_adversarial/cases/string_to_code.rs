//! Every way to turn a string into running code. The string's code would
//! yield 7331; the script returns the marker if it ever sees that number.

use crate::sandbox_adversarial::adversarial::case::{Case, MARK, rejected, throws};

pub fn cases() -> Vec<Case> {
    const DISABLED: &str = "code generation from strings is disabled in Quiver scripts";
    [
        ("eval direct", "eval('7331')", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval indirect comma", "(0, eval)('7331')", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval via globalThis", "globalThis.eval('7331')", rejected("eval"), throws("TypeError: globalThis.eval is not a function")),
        ("eval via globalThis computed", "globalThis['ev' + 'al']('7331')", rejected("global-computed"), throws("TypeError: globalThis is not a function")),
        ("eval alias const", "(() => { const e = eval; return e('7331'); })()", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval destructured", "(() => { const { eval: e } = globalThis; return e('7331'); })()", rejected("eval"), throws("TypeError: e is not a function")),
        ("eval array alias", "(() => { const [e] = [eval]; return e('7331'); })()", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval default param", "((e = eval) => e('7331'))()", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval ternary", "(true ? eval : null)('7331')", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("eval logical", "(eval || null)('7331')", rejected("eval"), throws("ReferenceError: eval is not defined")),
        ("Function ctor", "Function('return 7331')()", rejected("function-constructor"), throws(DISABLED)),
        ("new Function", "new Function('return 7331')()", rejected("function-constructor"), throws(DISABLED)),
        ("Function alias", "(() => { const F = Function; return F('return 7331')(); })()", rejected("function-constructor"), throws(DISABLED)),
        ("constructor chain", "(() => {}).constructor('return 7331')()", rejected("constructor-chain"), throws(DISABLED)),
        ("constructor constructor", "({}).constructor.constructor('return 7331')()", rejected("constructor-chain"), throws(DISABLED)),
        ("computed constructor", "(() => {})['constructor']('return 7331')()", rejected("constructor-chain"), throws(DISABLED)),
        ("concat constructor", "(() => {})['constr' + 'uctor']('return 7331')()", rejected("computed-key"), throws(DISABLED)),
        ("template constructor", "(() => {})[`constructor`]('return 7331')()", rejected("constructor-chain"), throws(DISABLED)),
        // A key held in a variable: the validator cannot know its value, and
        // refuses any non-literal key on a function instead.
        ("variable key constructor", "(() => { const k = 'constr' + 'uctor'; return (() => {})[k]('return 7331')(); })()", rejected("constructor-chain"), throws(DISABLED)),
        ("async function ctor", "(async function () {}).constructor('return 7331')()", rejected("constructor-chain"), throws(DISABLED)),
        ("generator ctor", "(function* () {}).constructor('yield 7331')().next().value", rejected("constructor-chain"), throws(DISABLED)),
        ("async generator ctor", "(async function* () {}).constructor('yield 7331')().next()", rejected("constructor-chain"), throws(DISABLED)),
        ("getPrototypeOf async", "Object.getPrototypeOf(async function () {}).constructor('return 7331')()", rejected("reflection"), throws(DISABLED)),
        ("getPrototypeOf generator", "Object.getPrototypeOf(function* () {}).constructor('yield 7331')().next().value", rejected("reflection"), throws(DISABLED)),
        ("variable key on proto", "(() => { const k = ['con', 'structor'].join(''); return Object.getPrototypeOf(async () => {})[k]('return 7331')(); })()", rejected("reflection"), throws(DISABLED)),
        ("bound Function", "Function.prototype.bind.call(Function, null, 'return 7331')()()", rejected("function-constructor"), throws(DISABLED)),
        ("Function apply", "Function.apply(null, ['return 7331'])()", rejected("function-constructor"), throws(DISABLED)),
        ("Reflect construct", "Reflect.construct(Function, ['return 7331'])()", rejected("reflect"), throws(DISABLED)),
        ("Reflect apply", "Reflect.apply(Function, null, ['return 7331'])()", rejected("reflect"), throws(DISABLED)),
        ("class extends Function", "(() => { class F extends Function {} return new F('return 7331')(); })()", rejected("function-constructor"), throws(DISABLED)),
        ("setTimeout string", "new Promise((resolve) => { setTimeout('resolve(7331)', 0); setTimeout(() => resolve(0), 50); })", rejected("eval"), throws("TypeError: setTimeout(callback, ms): callback must be a function")),
        ("dynamic import", "import('data:text/javascript,export default 7331').then(m => m.default)", rejected("dynamic-import"), throws("TypeError: Module loading is not supported.")),
    ]
    .into_iter()
    .map(|(name, expr, full_path, runtime)| {
        Case::new(
            name,
            &format!(
                "const r = await {expr};\nreturn (r === 7331 || (r && r.value === 7331)) ? '{MARK}' : 'contained';"
            ),
            full_path,
            runtime,
        )
    })
    .collect()
}
