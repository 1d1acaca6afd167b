//! The MCP Inspector CLI (npm `@modelcontextprotocol/inspector`, pinned by
//! `scripts/install-node-tools.sh`, run with Node 22) reaches every mode at
//! `/{mode}/mcp`: it lists the mode's tools and calls its main tool. The
//! Inspector picks Streamable HTTP only for paths that end in `/mcp`, which is
//! why the modes live there. The older `/mcp/{mode}` paths keep serving.

use crate::support;

use serde_json::Value;
use support::{QuiverDev, connect, node_tools, tool_names};

/// Runs `mcp-inspector --cli <url> <args>` and parses the JSON it prints.
fn inspector(url: &str, args: &[&str]) -> Value {
    let cli = node_tools::package_file("@modelcontextprotocol/inspector", "cli/build/cli.js");
    let output = node_tools::node_command(&cli)
        .args(["--cli", url])
        .args(args)
        .output()
        .expect("run the MCP Inspector CLI");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "inspector {url} {args:?} failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("inspector printed no JSON ({e}):\n{stdout}\n{stderr}"))
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// The text blocks of a `tools/call` result, joined; fails on an error result.
fn ok_text(result: &Value) -> String {
    assert_ne!(result["isError"], Value::Bool(true), "{result}");
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content in {result}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn inspector_lists_and_calls_tools_in_every_mode() {
    let dev = QuiverDev::start(&[]);

    eprintln!("--- passthrough: every demo tool, and a forwarded call");
    let url = dev.mode_url("passthrough");
    let listed = names(&inspector(&url, &["--method", "tools/list"]));
    assert_eq!(listed.len(), 16, "{listed:?}");
    assert!(listed.contains(&"weather__get_forecast".to_string()));
    let result = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "weather__get_forecast",
            "--tool-arg",
            "city=Lisbon",
            "days=2",
        ],
    );
    let answer: Value = serde_json::from_str(&ok_text(&result)).expect("JSON answer");
    assert_eq!(answer["tool"], "get_forecast");
    assert_eq!(answer["arguments"]["city"], "Lisbon");
    assert_eq!(answer["arguments"]["days"], 2);

    eprintln!("--- search: search_tools finds the forecast tool, call_tool calls it");
    let url = dev.mode_url("search");
    assert_eq!(
        names(&inspector(&url, &["--method", "tools/list"])),
        ["search_tools", "call_tool"]
    );
    let found = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "search_tools",
            "--tool-arg",
            "query=weather forecast for a city",
        ],
    );
    assert!(ok_text(&found).contains("weather__get_forecast"), "{found}");
    let called = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "call_tool",
            "--tool-arg",
            "name=weather__get_forecast",
            r#"arguments={"city":"Porto"}"#,
        ],
    );
    assert!(ok_text(&called).contains("Porto"), "{called}");

    eprintln!("--- code: the four meta-tools, and a script that calls a tool");
    let url = dev.mode_url("code");
    assert_eq!(
        names(&inspector(&url, &["--method", "tools/list"])),
        ["list", "search", "describe", "execute"]
    );
    let ran = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "execute",
            "--tool-arg",
            r#"code=const f = await tools.weather.get_forecast({ city: "Faro" }); return f.arguments.city;"#,
        ],
    );
    assert!(ok_text(&ran).contains("Faro"), "{ran}");

    eprintln!("--- /mcp serves the default mode (code)");
    assert_eq!(
        names(&inspector(&dev.url, &["--method", "tools/list"])),
        ["list", "search", "describe", "execute"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn older_mcp_mode_paths_keep_serving() {
    let dev = QuiverDev::start(&[]);
    for (mode, first) in [
        ("passthrough", "calendar__create_event"),
        ("search", "search_tools"),
        ("code", "list"),
    ] {
        let client = connect(&format!("{}/{mode}", dev.url)).await;
        let names = tool_names(&client).await;
        assert!(
            names.iter().any(|n| n == first),
            "/mcp/{mode} lists {names:?}"
        );
        client.cancel().await.expect("close");
    }
}
