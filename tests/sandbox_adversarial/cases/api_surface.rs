//! Escapes through the script API itself (`tools`, `describe`, `search`,
//! `console`) and through what the sandbox lets a script see of itself: the
//! global object, `this`, stack traces, species constructors.

use serde_json::json;

use crate::sandbox_adversarial::adversarial::{
    case::{Case, FullPath::Runs, rejected, returns, throws},
    recording_context::HostCall,
};

pub fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "call unknown tool",
            "return await tools.call('../../etc', {});",
            Runs,
            throws("Error: unknown tool `../../etc`"),
        )
        .reaching_host(vec![HostCall::Tool {
            name: "../../etc".into(),
            args: json!({}),
        }]),
        Case::new(
            "call with non-string name",
            "return await tools.call({ toString() { return 'demo__echo'; } }, {});",
            Runs,
            throws(
                "TypeError: tools.call(name, args): name must be a string such as \"server.tool\"",
            ),
        ),
        Case::new(
            "call hidden server",
            "return await tools.secret.read({});",
            Runs,
            throws("TypeError: Cannot read properties of undefined (reading 'read')"),
        ),
        Case::new(
            "tools keys",
            "return Object.keys(tools);",
            Runs,
            returns(json!(["demo"])),
        ),
        Case::new(
            "tools internals",
            "return Object.getOwnPropertyNames(tools.demo.echo);",
            rejected("reflection"),
            returns(json!(["length", "name"])),
        ),
        Case::new(
            "tool source",
            "return String(tools.demo.echo) + ' ' + String(tools.call);",
            Runs,
            returns(json!(
                "function echo() { [native code] } function callTool() { [native code] }"
            )),
        ),
        Case::new(
            "describe traversal",
            "return await describe('../../../etc/passwd');",
            Runs,
            throws("Error: unknown tool `../../../etc/passwd`"),
        )
        .reaching_host(vec![HostCall::Describe {
            name: "../../../etc/passwd".into(),
        }]),
        Case::new(
            "search huge query",
            "return await search('x'.repeat(1e6), 1e9);",
            Runs,
            returns(json!([{ "name": "demo__echo" }])),
        )
        .reaching_host(vec![HostCall::Search {
            query: "x".repeat(1_000_000),
            limit: 1_000_000_000,
        }]),
        Case::new(
            "console object",
            "console.log({ get x() { return globalThis; } });\nreturn 'logged';",
            rejected("global-alias"),
            returns(json!("logged")),
        )
        // The global object shows no enumerable property at all.
        .logging(&[r#"{"x":{}}"#]),
        Case::new(
            "console cyclic",
            "const o = {};\no.o = o;\nconsole.log(o);\nreturn 'logged';",
            Runs,
            returns(json!("logged")),
        )
        .logging(&["[object Object]"]),
        Case::new(
            "this at top level",
            "return [typeof this?.Deno, typeof this?.tools, Object.isFrozen(this)];",
            rejected("this"),
            // The runtime's `this` here is the global object: frozen, and
            // stripped of every host name.
            returns(json!(["undefined", "object", true])),
        ),
        Case::new(
            "globalThis keys",
            "return Object.getOwnPropertyNames(globalThis).filter(k => /deno|core|ops|bootstrap|quiver/i.test(k));",
            rejected("global-alias"),
            returns(json!([])),
        ),
        Case::new(
            "Symbol registry",
            "return Object.getOwnPropertySymbols(globalThis).map(String);",
            rejected("global-alias"),
            returns(json!([])),
        ),
        Case::new(
            "stack leaks host paths",
            "return String(new Error('x').stack || '').split('\\n');",
            Runs,
            returns(json!([
                "Error: x",
                "    at quiver:script:1:42",
                "    at quiver:script:2:1"
            ])),
        ),
        Case::new(
            "Symbol.species to globalThis",
            "class A extends Array { static get [Symbol.species]() { return function () { return globalThis; }; } }\nconst r = new A(1, 2).map(x => x);\nreturn typeof r.Deno;",
            rejected("global-alias"),
            throws("TypeError: object is not extensible"),
        ),
    ]
}
