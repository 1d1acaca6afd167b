//! Search mode lists only `search_tools` and `call_tool`; `search_tools`
//! answers the best-matching tools with everything needed to call one:
//! name, server, tool, signature, summary, score, description and input schema.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, call, connect, manifest, text, tool_names};

#[tokio::test]
async fn search_mode_lists_its_two_tools() {
    let client = connect(Mode::Search, Arc::new(FakeExecutor::new()), None).await;

    assert_eq!(tool_names(&client).await, ["search_tools", "call_tool"]);
}

#[tokio::test]
async fn a_query_finds_the_tool_with_its_schema() {
    let executor = Arc::new(FakeExecutor::new());
    let client = connect(Mode::Search, executor.clone(), None).await;

    let result = call(
        &client,
        "search_tools",
        json!({"query": "weather forecast for a city", "limit": 2}),
    )
    .await;

    assert_ne!(result.is_error, Some(true), "{result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structured results");
    let results = structured["results"].as_array().expect("a results list");
    assert!(!results.is_empty() && results.len() <= 2, "{structured}");
    let best = &results[0];
    let expected = manifest::tool_of(&manifest::two_servers(), "weather__get_forecast");
    assert_eq!(best["name"], "weather__get_forecast", "{structured}");
    assert_eq!(best["server"], "weather");
    assert_eq!(best["tool"], "get_forecast");
    // The server is its own field, so the signature starts at the tool.
    let from_the_tool = expected
        .stub
        .signature
        .strip_prefix("weather.")
        .expect("a stub signature names its server");
    assert_eq!(best["signature"], from_the_tool);
    assert_eq!(best["summary"], expected.stub.summary.as_str());
    assert!(best["score"].as_f64().is_some_and(|s| s > 0.0), "{best}");
    assert_eq!(
        best["description"],
        "Get the weather forecast for a city. Covers up to ten days."
    );
    assert_eq!(best["inputSchema"], expected.def.input_schema);
    // The text a model reads names the tool and how to call it.
    let shown = text(&result);
    assert!(shown.starts_with("weather__get_forecast — "), "{shown}");
    assert!(shown.contains("call_tool"), "{shown}");
    assert!(executor.calls().is_empty(), "searching dispatches nothing");
}
