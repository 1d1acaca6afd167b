//! `quiver dev` with no upstreams serves the built-in demo catalog in all three
//! modes, to a real rmcp client over Streamable HTTP.

use crate::support;

use serde_json::{Value, json};
use support::{QuiverDev, call, connect, text};

#[tokio::test(flavor = "multi_thread")]
async fn passthrough_lists_namespaced_tools_and_forwards_calls() {
    let dev = QuiverDev::start(&[]);
    assert!(
        dev.banner.contains("demo"),
        "startup line names the demo: {}",
        dev.banner
    );
    let client = connect(&dev.mode_url("passthrough")).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(tools.len(), 16, "{names:?}");
    assert!(
        names.contains(&"weather__get_forecast") && names.contains(&"github__create_issue"),
        "{names:?}"
    );
    assert!(names.iter().all(|n| {
        n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }));

    let result = call(
        &client,
        "weather__get_forecast",
        json!({"city": "Lisbon", "days": 2}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let answer: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        answer,
        json!({"server": "weather", "tool": "get_forecast", "arguments": {"city": "Lisbon", "days": 2}})
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn passthrough_rejects_bad_arguments_naming_every_field() {
    let dev = QuiverDev::start(&[]);
    let client = connect(&dev.mode_url("passthrough")).await;
    let result = call(
        &client,
        "weather__get_forecast",
        json!({"days": 12, "units": "kelvin", "colour": 1}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    let message = text(&result);
    for expected in ["city", "days", "units", "Valid fields", "nothing was sent"] {
        assert!(
            message.contains(expected),
            "`{expected}` missing from: {message}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn passthrough_unknown_tool_suggests_the_closest_names() {
    let dev = QuiverDev::start(&[]);
    let client = connect(&dev.mode_url("passthrough")).await;
    let mut params = rmcp::model::CallToolRequestParams::new("weather__get_forcast");
    params.arguments = Some(serde_json::Map::new());
    let error = client.call_tool(params).await.unwrap_err().to_string();
    assert!(error.contains("weather__get_forecast"), "{error}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn search_mode_exposes_two_tools_and_finds_then_calls() {
    let dev = QuiverDev::start(&[]);
    let client = connect(&dev.mode_url("search")).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search_tools", "call_tool"]);

    let found = call(
        &client,
        "search_tools",
        json!({"query": "open an issue in a repository", "limit": 3}),
    )
    .await;
    let results = found.structured_content.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!results.is_empty() && results.len() <= 3);
    assert_eq!(results[0]["name"], "github__create_issue", "{results:?}");
    for key in [
        "name",
        "server",
        "tool",
        "score",
        "description",
        "inputSchema",
    ] {
        assert!(results[0].get(key).is_some(), "result lacks {key}");
    }
    assert!(text(&found).contains("github__create_issue"));

    let called = call(
        &client,
        "call_tool",
        json!({"name": "github__create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}),
    )
    .await;
    assert_ne!(called.is_error, Some(true), "{}", text(&called));
    assert!(text(&called).contains("\"tool\":\"create_issue\""));

    // A discovered tool can also be called directly by its name.
    let direct = call(
        &client,
        "notes__search_notes",
        json!({"query": "groceries"}),
    )
    .await;
    assert_ne!(direct.is_error, Some(true), "{}", text(&direct));

    let unknown = call(
        &client,
        "call_tool",
        json!({"name": "github__create_isue", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text(&unknown).contains("github__create_issue"),
        "{}",
        text(&unknown)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn code_mode_discovers_progressively() {
    let dev = QuiverDev::start(&["--mode", "code"]);
    // /mcp serves the default mode, here code.
    let client = connect(&dev.url).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["list", "search", "describe", "execute"]);

    let servers = call(&client, "list", json!({})).await;
    let listed = servers.structured_content.as_ref().unwrap()["servers"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed.len(), 5);
    assert!(text(&servers).contains("weather"));

    let weather = call(&client, "list", json!({"path": "weather"})).await;
    let weather_tools = weather.structured_content.as_ref().unwrap()["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(weather_tools.len(), 3);
    assert!(
        text(&weather).contains("get_forecast("),
        "{}",
        text(&weather)
    );

    let found = call(
        &client,
        "search",
        json!({"query": "driving route between two addresses"}),
    )
    .await;
    let results = found.structured_content.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(results[0]["name"], "maps__get_directions", "{results:?}");
    for key in ["name", "server", "tool", "signature", "summary", "score"] {
        assert!(results[0].get(key).is_some(), "result lacks {key}");
    }

    let described = call(
        &client,
        "describe",
        json!({"names": ["maps__get_directions", "maps__nope"]}),
    )
    .await;
    let declaration = text(&described);
    assert!(
        declaration.contains("get_directions")
            && declaration.contains("origin")
            && declaration.contains("destination"),
        "{declaration}"
    );
    assert!(
        declaration.contains("unknown tool `maps__nope`"),
        "{declaration}"
    );

    let bad_server = call(&client, "list", json!({"path": "wether"})).await;
    assert_eq!(bad_server.is_error, Some(true));
    assert!(
        text(&bad_server).contains("weather"),
        "{}",
        text(&bad_server)
    );
    client.cancel().await.unwrap();
}

#[test]
fn tokens_measures_a_running_edge() {
    let dev = QuiverDev::start(&[]);
    let output = std::process::Command::new(support::quiver_bin())
        .args(["tokens", "--json", "--url", &dev.url])
        .output()
        .expect("run quiver tokens --url");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let modes = report["modes"].as_array().unwrap();
    let listed = |name: &str| {
        modes.iter().find(|m| m["mode"] == name).unwrap()["tools_listed"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        (listed("passthrough"), listed("search"), listed("code")),
        (16, 2, 4),
        "{report}"
    );
    let code = modes.iter().find(|m| m["mode"] == "code").unwrap();
    assert!(
        code["up_front"]["cl100k"].as_u64().unwrap() <= 450,
        "{code}"
    );
    assert!(
        code["search_limit_5"]["queries"].as_u64().unwrap() > 0,
        "{code}"
    );
}
