//! An upstream's failure reaches the client redacted: a secret in the error
//! text never does, a location the upstream leaked is replaced, and what the
//! caller itself sent (here a path) stays so the model sees which value failed.

use crate::support;

use std::sync::Arc;

use quiver_contract::UpstreamError;
use quiver_edge::Mode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use support::{FakeExecutor, call, connect, text};

/// Looks like a GitHub token; no real secret.
const TOKEN: &str = "ghp_Zx81TqPl0aVb3Nc7Rd5Ke2Wm";
const CALLERS_PATH: &str = "/srv/share/notes.txt";
const UPSTREAMS_OWN_FILE: &str = "/etc/quiver/files-upstream.toml";

fn leaky_message() -> String {
    format!(
        "access denied for {CALLERS_PATH}: token {TOKEN} from {UPSTREAMS_OWN_FILE} lacks read scope"
    )
}

#[tokio::test]
async fn a_failed_call_is_redacted_but_keeps_what_the_caller_sent() {
    let executor = Arc::new(FakeExecutor::new().answering("files", "read_file", || {
        Err(UpstreamError::Remote {
            id: "files".into(),
            code: -32603,
            message: leaky_message(),
            data: None,
        })
    }));
    let client = connect(Mode::Passthrough, executor.clone(), None).await;

    let result = call(&client, "files__read_file", json!({"path": CALLERS_PATH})).await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let shown = text(&result);
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "upstream_error", "{error}");
    for what in [&shown, &error.to_string()] {
        assert!(
            !what.contains(TOKEN),
            "the token reached the client: {what}"
        );
        assert!(
            !what.contains(UPSTREAMS_OWN_FILE),
            "the upstream's path reached the client: {what}"
        );
        assert!(
            what.contains(CALLERS_PATH),
            "the caller's own path was removed: {what}"
        );
        assert!(
            what.contains("access denied for"),
            "the reason was lost: {what}"
        );
    }
    assert_eq!(executor.calls().len(), 1, "dispatched once, never retried");
}

#[tokio::test]
async fn an_error_result_is_redacted_the_same_way() {
    let executor = Arc::new(FakeExecutor::new().answering("files", "read_file", || {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            leaky_message(),
        )]))
    }));
    let client = connect(Mode::Search, executor, None).await;

    let result = call(
        &client,
        "call_tool",
        json!({"name": "files__read_file", "arguments": {"path": CALLERS_PATH}}),
    )
    .await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let shown = text(&result);
    assert!(
        !shown.contains(TOKEN),
        "the token reached the client: {shown}"
    );
    assert!(!shown.contains(UPSTREAMS_OWN_FILE), "{shown}");
    assert!(shown.contains(CALLERS_PATH), "{shown}");
}
