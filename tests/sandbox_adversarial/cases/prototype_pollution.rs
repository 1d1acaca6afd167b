//! Rewriting intrinsics and the script API. After each attempt the script
//! calls the echo tool and maps an array: the host must receive exactly the
//! arguments the script meant, and the script must see the values it would
//! have seen untouched. The last column is the error the runtime raises at
//! the attempt (none where it only changes the script's own binding).

use serde_json::{Value, json};

use crate::sandbox_adversarial::adversarial::{
    case::{Case, FullPath::Runs, MARK, rejected, returns},
    recording_context::HostCall,
};

pub fn cases() -> Vec<Case> {
    [
        ("pollute Object.prototype", "Object.prototype.polluted = 1;", rejected("builtin-mutation"), Some("TypeError: Cannot add property polluted, object is not extensible")),
        ("pollute Array.prototype.map", "Array.prototype.map = function () { return 'hijacked'; };", rejected("builtin-mutation"), Some("TypeError: 'map' is read-only")),
        ("pollute Promise.prototype.then", "Promise.prototype.then = function () { return 'hijacked'; };", rejected("builtin-mutation"), Some("TypeError: Cannot assign to read only property 'then' of object '#<Object>'")),
        ("pollute JSON.stringify", "JSON.stringify = () => 'hijacked';", rejected("builtin-mutation"), Some("TypeError: Cannot assign to read only property 'stringify' of object '#<Object>'")),
        ("pollute JSON.parse", "JSON.parse = () => 'hijacked';", rejected("builtin-mutation"), Some("TypeError: Cannot assign to read only property 'parse' of object '#<Object>'")),
        ("replace tools.call", "tools.call = () => 'hijacked';", Runs, Some("TypeError: Cannot assign to read only property 'call' of object '#<Object>'")),
        ("replace tools server", "tools.demo = { echo: () => 'hijacked' };", Runs, Some("TypeError: Cannot assign to read only property 'demo' of object '#<Object>'")),
        ("replace tools tool", "tools.demo.echo = () => 'hijacked';", Runs, Some("TypeError: Cannot assign to read only property 'echo' of object '#<Object>'")),
        ("tools __proto__", "tools.__proto__.call = () => 'hijacked';", rejected("proto"), Some("TypeError: Cannot set properties of undefined (setting 'call')")),
        ("define on tools", "Object.defineProperty(tools, 'call', { value: () => 'hijacked' });", rejected("reflection"), Some("TypeError: property is not configurable")),
        ("setPrototypeOf tools", "Object.setPrototypeOf(tools, { call: () => 'hijacked' });", rejected("reflection"), Some("TypeError: object is not extensible")),
        ("replace stash.get", "stash.get = () => 'hijacked';", Runs, Some("TypeError: Cannot assign to read only property 'get' of object '#<Object>'")),
        ("replace console.log", "console.log = () => 'hijacked';", rejected("builtin-mutation"), Some("TypeError: Cannot assign to read only property 'log' of object '#<Object>'")),
        ("replace search", "search = () => 'hijacked';", Runs, Some("TypeError: Cannot assign to read only property 'search' of object '#<Object>'")),
        ("pollute Function.prototype.call", "Function.prototype.call = () => 'hijacked';", rejected("function-constructor"), Some("TypeError: 'call' is read-only")),
        ("pollute Symbol.iterator", "Array.prototype[Symbol.iterator] = function* () { yield 'hijacked'; };", rejected("builtin-mutation"), Some("TypeError: 'Symbol.iterator' is read-only")),
        ("pollute Object.keys", "Object.keys = () => ['hijacked'];", rejected("builtin-mutation"), Some("TypeError: 'keys' is read-only")),
        ("pollute String.prototype", "String.prototype.toString = () => 'hijacked';", rejected("builtin-mutation"), Some("TypeError: 'toString' is read-only")),
        ("pollute Error", "globalThis.Error = function () { return 'hijacked'; };", rejected("global-alias"), Some("TypeError: Cannot assign to read only property 'Error' of object '#<Object>'")),
        ("global var leak", "globalThis.leaked = 'hijacked';", rejected("global-alias"), Some("TypeError: Cannot add property leaked, object is not extensible")),
    ]
    .into_iter()
    .map(|(name, attempt, full_path, refused)| {
        Case::new(
            name,
            &format!(
                "let refused = null;\ntry {{ {attempt} }} catch (e) {{ refused = String(e); }}\nconst r = await tools.call('demo__echo', {{ a: [1, 2].map(x => x) }});\nconst seen = {{ refused, echoed: JSON.stringify(r), mapped: String([1].map(x => x)), polluted: ({{}}).polluted ?? null, leaked: typeof leaked }};\nreturn (seen.echoed.includes('hijacked') || seen.mapped === 'hijacked') ? '{MARK}' : seen;"
            ),
            full_path,
            returns(untouched(refused)),
        )
        .reaching_host(vec![HostCall::echo(json!({ "a": [1, 2] }))])
    })
    .collect()
}

/// What the script sees when the attempt changed nothing shared.
fn untouched(refused: Option<&str>) -> Value {
    json!({
        "refused": refused,
        "echoed": r#"{"echo":{"a":[1,2]}}"#,
        "mapped": "1",
        "polluted": null,
        "leaked": "undefined",
    })
}
