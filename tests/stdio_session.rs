//! `quiver dev --stdio` serves one MCP session on stdin/stdout to a real rmcp client.

use crate::support;

use rmcp::{ServiceExt, transport::TokioChildProcess};
use serde_json::json;
use support::{call, quiver_bin, text, tool_names};

#[tokio::test(flavor = "multi_thread")]
async fn stdio_session_lists_and_calls() {
    let data = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(quiver_bin());
    command
        .args(["dev", "--stdio", "--mode", "search"])
        .args(["--control-plane-listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .env("RUST_LOG", "warn");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let names = tool_names(&client).await;
    assert_eq!(names, ["search_tools", "call_tool"]);
    let found = call(
        &client,
        "search_tools",
        json!({"query": "weather forecast"}),
    )
    .await;
    assert!(
        text(&found).contains("weather__get_forecast"),
        "{}",
        text(&found)
    );
    let called = call(
        &client,
        "call_tool",
        json!({"name": "weather__get_forecast", "arguments": {"city": "Paris"}}),
    )
    .await;
    assert!(text(&called).contains("Paris"), "{}", text(&called));
    client.cancel().await.unwrap();
}
