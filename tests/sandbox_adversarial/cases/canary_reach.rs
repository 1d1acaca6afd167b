//! Attempts on the secrets planted outside the sandbox (see `canaries`): the
//! test process's environment, a file on disk, and a loopback TCP listener.
//! Each must fail at the layer listed; the suite also checks from outside
//! that no output carried a secret and that the listener saw no connection.

use serde_json::json;

use crate::sandbox_adversarial::adversarial::{
    canaries::{Canaries, ENV_NAME},
    case::{Case, FullPath::Runs, rejected, returns, throws},
    recording_context::HostCall,
};

pub fn cases(canaries: &Canaries) -> Vec<Case> {
    let file = canaries.file_path.display().to_string();
    let url = format!("http://127.0.0.1:{}/", canaries.port);
    let port = canaries.port;
    let mut list = vec![
        // The environment.
        Case::new(
            "env via process.env",
            &format!("return process.env.{ENV_NAME};"),
            Runs,
            throws("ReferenceError: process is not defined"),
        ),
        Case::new(
            "env via Deno.env",
            &format!("return Deno.env.get('{ENV_NAME}');"),
            rejected("deno"),
            throws("ReferenceError: Deno is not defined"),
        ),
        Case::new(
            "env via a computed global",
            &format!("return globalThis['proc' + 'ess']?.env?.{ENV_NAME} ?? 'absent';"),
            rejected("global-computed"),
            returns(json!("absent")),
        ),
        Case::new(
            "env via Deno ops",
            &format!(
                "const ops = globalThis['De' + 'no']?.core?.ops ?? {{}};\nreturn Object.keys(ops).filter(k => /env/.test(k)).map(k => ops[k]('{ENV_NAME}'));"
            ),
            rejected("global-computed"),
            returns(json!([])),
        ),
        // The file.
        Case::new(
            "file via Deno.readTextFileSync",
            &format!("return Deno.readTextFileSync({file:?});"),
            rejected("deno"),
            throws("ReferenceError: Deno is not defined"),
        ),
        Case::new(
            "file via fetch",
            &format!("return await (await fetch('file://' + {file:?})).text();"),
            Runs,
            throws("ReferenceError: fetch is not defined"),
        ),
        Case::new(
            "file via dynamic import",
            &format!("return await import({file:?});"),
            rejected("dynamic-import"),
            throws("TypeError: invalid URL"),
        ),
        Case::new(
            "file via dynamic import of a file URL",
            &format!("return await import('file://' + {file:?});"),
            rejected("dynamic-import"),
            throws("TypeError: Module loading is not supported."),
        ),
        Case::new(
            "file via static import",
            &format!("import secret from {file:?};\nreturn secret;"),
            rejected("import"),
            throws("SyntaxError: Unexpected identifier 'secret'"),
        ),
        Case::new(
            "file via require",
            &format!("return require('fs').readFileSync({file:?}, 'utf8');"),
            rejected("require"),
            throws("ReferenceError: require is not defined"),
        ),
        Case::new(
            "file via XMLHttpRequest",
            &format!(
                "const x = new XMLHttpRequest();\nx.open('GET', 'file://' + {file:?}, false);\nx.send();\nreturn x.responseText;"
            ),
            Runs,
            throws("ReferenceError: XMLHttpRequest is not defined"),
        ),
        Case::new(
            "file via Worker",
            &format!("new Worker('file://' + {file:?});\nreturn 'started';"),
            Runs,
            throws("ReferenceError: Worker is not defined"),
        ),
        Case::new(
            "file via WebAssembly streaming",
            &format!("return await WebAssembly.compileStreaming('file://' + {file:?});"),
            rejected("webassembly"),
            throws("ReferenceError: WebAssembly is not defined"),
        ),
        // The file's path handed to each host call: the host treats it as a
        // name, never as a path.
        Case::new(
            "file via tools.call",
            &format!("return await tools.call({file:?}, {{}});"),
            Runs,
            throws(format!("Error: unknown tool `{file}`")),
        )
        .reaching_host(vec![HostCall::Tool {
            name: file.clone(),
            args: json!({}),
        }]),
        Case::new(
            "file via describe",
            &format!("return await describe({file:?});"),
            Runs,
            throws(format!("Error: unknown tool `{file}`")),
        )
        .reaching_host(vec![HostCall::Describe { name: file.clone() }]),
        Case::new(
            "file via stash key",
            &format!("return [await stash.get({file:?})];"),
            Runs,
            returns(json!([null])),
        )
        .reaching_host(vec![HostCall::Stash(
            quiver_executor::script::StashOp::Get(file.clone()),
        )]),
    ];

    // The loopback listener.
    list.extend([
        Case::new(
            "loopback via fetch",
            &format!("return await (await fetch('{url}')).text();"),
            Runs,
            throws("ReferenceError: fetch is not defined"),
        ),
        Case::new(
            "loopback via WebSocket",
            &format!(
                "const ws = new WebSocket('ws://127.0.0.1:{port}/');\nreturn await new Promise((resolve, reject) => {{ ws.onopen = () => resolve('open'); ws.onerror = reject; }});"
            ),
            Runs,
            throws("ReferenceError: WebSocket is not defined"),
        ),
        Case::new(
            "loopback via XMLHttpRequest",
            &format!(
                "const x = new XMLHttpRequest();\nx.open('GET', '{url}', false);\nx.send();\nreturn x.status;"
            ),
            Runs,
            throws("ReferenceError: XMLHttpRequest is not defined"),
        ),
        Case::new(
            "loopback via dynamic import",
            &format!("return await import('{url}module.js');"),
            rejected("dynamic-import"),
            throws("TypeError: Module loading is not supported."),
        ),
        Case::new(
            "loopback via Deno.connect",
            &format!(
                "const conn = await Deno.connect({{ hostname: '127.0.0.1', port: {port} }});\nreturn conn.rid;"
            ),
            rejected("deno"),
            throws("ReferenceError: Deno is not defined"),
        ),
        Case::new(
            "loopback via EventSource",
            &format!("new EventSource('{url}');\nreturn 'opened';"),
            Runs,
            throws("ReferenceError: EventSource is not defined"),
        ),
        Case::new(
            "loopback via sendBeacon",
            &format!("return navigator.sendBeacon('{url}', 'x');"),
            Runs,
            throws("ReferenceError: navigator is not defined"),
        ),
        Case::new(
            "loopback via tools.call",
            &format!("return await tools.call('{url}', {{}});"),
            Runs,
            throws(format!("Error: unknown tool `{url}`")),
        )
        .reaching_host(vec![HostCall::Tool {
            name: url.clone(),
            args: json!({}),
        }]),
    ]);
    list
}
