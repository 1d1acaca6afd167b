//! Calling a tool the view does not have is a protocol error (invalid
//! params) that names the closest tools; nothing is dispatched.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use rmcp::model::ErrorCode;
use serde_json::json;
use support::{FakeExecutor, call_refused, connect};

#[tokio::test]
async fn a_misspelt_tool_is_refused_with_suggestions() {
    let executor = Arc::new(FakeExecutor::new());
    let client = connect(Mode::Passthrough, executor.clone(), None).await;

    let error = call_refused(&client, "files__read_fil", json!({"path": "/tmp/a.txt"})).await;

    assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
    assert!(
        error
            .message
            .contains("unknown tool `files__read_fil`; did you mean `files__read_file`"),
        "{}",
        error.message
    );
    let data = error.data.expect("the error carries its suggestions");
    assert_eq!(data["suggestions"][0], "files__read_file", "{data}");
    assert!(executor.calls().is_empty(), "{:?}", executor.calls());
}
