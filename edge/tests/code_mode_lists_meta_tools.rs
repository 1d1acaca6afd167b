//! Code mode lists `list`, `search` and `describe`, and `execute` only when
//! the edge has somewhere to run scripts; without one, `execute` is not a tool.

use crate::support;

use std::sync::Arc;

use quiver_contract::ScriptOutcome;
use quiver_edge::Mode;
use rmcp::model::ErrorCode;
use serde_json::json;
use support::{FakeExecutor, FakeScripts, call_refused, connect, tool_names};

#[tokio::test]
async fn without_scripts_execute_is_neither_listed_nor_callable() {
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), None).await;

    assert_eq!(tool_names(&client).await, ["list", "search", "describe"]);
    let error = call_refused(&client, "execute", json!({"code": "return 1"})).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
    assert!(
        error.message.contains("unknown tool `execute`"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn with_scripts_execute_is_listed_too() {
    let scripts = Arc::new(FakeScripts::answering(|| {
        Ok(ScriptOutcome {
            app_views: Vec::new(),
            result: None,
            error: None,
            logs: Vec::new(),
            truncated: false,
        })
    }));
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), Some(scripts)).await;

    assert_eq!(
        tool_names(&client).await,
        ["list", "search", "describe", "execute"]
    );
}
