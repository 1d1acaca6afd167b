//! Search mode's `call_tool {name, arguments}` forwards the named tool's call
//! to its upstream with the arguments given, and returns the upstream's answer.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use support::{FakeExecutor, call, connect, text};

#[tokio::test]
async fn call_tool_reaches_the_named_tools_upstream() {
    let executor = Arc::new(
        FakeExecutor::new().answering("weather", "get_forecast", || {
            Ok(CallToolResult::success(vec![ContentBlock::text(
                "Oslo: rain, then sun",
            )]))
        }),
    );
    let client = connect(Mode::Search, executor.clone(), None).await;

    let result = call(
        &client,
        "call_tool",
        json!({"name": "weather__get_forecast", "arguments": {"city": "Oslo", "days": 3}}),
    )
    .await;

    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "Oslo: rain, then sun");
    let calls = executor.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].server.as_str(), calls[0].tool.as_str()),
        ("weather", "get_forecast")
    );
    assert_eq!(
        calls[0].arguments.clone().map(Value::Object),
        Some(json!({"city": "Oslo", "days": 3}))
    );
}

#[tokio::test]
async fn call_tool_checks_the_arguments_before_forwarding() {
    let executor = Arc::new(FakeExecutor::new());
    let client = connect(Mode::Search, executor.clone(), None).await;

    let result = call(
        &client,
        "call_tool",
        json!({"name": "weather__get_forecast", "arguments": {"city": "Oslo", "days": 30}}),
    )
    .await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "invalid_arguments", "{error}");
    assert_eq!(error["problems"][0]["field"], "days", "{error}");
    assert!(executor.calls().is_empty(), "{:?}", executor.calls());
}
