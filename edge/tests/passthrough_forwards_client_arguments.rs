//! Passthrough forwards a call to the upstream that owns the tool, under the
//! tool's own name and with exactly the arguments the client sent, and
//! returns the upstream's answer.

use crate::support;

use std::sync::Arc;

use quiver_contract::DEFAULT_TENANT;
use quiver_edge::Mode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use support::{FakeExecutor, call, connect, text};

#[tokio::test]
async fn a_call_reaches_its_upstream_with_the_clients_arguments() {
    let executor = Arc::new(FakeExecutor::new().answering("files", "write_file", || {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "wrote 12 bytes",
        )]))
    }));
    let client = connect(Mode::Passthrough, executor.clone(), None).await;

    let result = call(
        &client,
        "files__write_file",
        json!({"path": "/srv/share/notes.txt", "content": "hello, world"}),
    )
    .await;

    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "wrote 12 bytes");
    let calls = executor.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].tenant, DEFAULT_TENANT);
    assert_eq!(calls[0].server, "files");
    assert_eq!(calls[0].tool, "write_file");
    assert_eq!(
        calls[0].arguments.clone().map(serde_json::Value::Object),
        Some(json!({"path": "/srv/share/notes.txt", "content": "hello, world"}))
    );
}
