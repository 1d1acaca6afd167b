//! Every request a session answers is timed in `mcp.server.operation.duration`
//! by method, tool, outcome, protocol version and mode (never by tenant or
//! by a tool name a client made up), and a session that ends is timed in
//! `mcp.server.session.duration`. One test, so only its sessions count.

use crate::support;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use quiver_edge::Mode;
use quiver_telemetry::metrics::render_prometheus;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;
use support::{FakeExecutor, call, call_refused, connect};

/// The label sets and counts of `family`'s `_count` series.
fn counts(family: &str) -> Vec<(BTreeMap<String, String>, u64)> {
    let prefix = format!("{family}_count{{");
    render_prometheus()
        .lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (labels, value) = rest.split_once("} ")?;
            let labels = labels
                .split("\",")
                .filter_map(|pair| {
                    let (key, value) = pair.split_once("=\"")?;
                    Some((key.to_string(), value.trim_end_matches('"').to_string()))
                })
                .collect();
            Some((labels, value.trim().parse().ok()?))
        })
        .collect()
}

/// The count of the series whose labels include every one of `wanted`.
fn count_where(family: &str, wanted: &[(&str, &str)]) -> u64 {
    counts(family)
        .into_iter()
        .filter(|(labels, _)| {
            wanted
                .iter()
                .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, n)| n)
        .sum()
}

const OPERATIONS: &str = "mcp_server_operation_duration_seconds";
const SESSIONS: &str = "mcp_server_session_duration_seconds";

#[tokio::test]
async fn requests_and_sessions_are_timed_with_bounded_labels() {
    let executor = FakeExecutor::new().answering("files", "read_file", || {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "contents",
        )]))
    });
    let client = connect(Mode::Passthrough, Arc::new(executor), None).await;

    eprintln!("--- a call of a listed tool is timed under its name and the mode");
    let result = call(&client, "files__read_file", json!({"path": "/tmp/a.txt"})).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let called = [
        ("mcp_method_name", "tools/call"),
        ("gen_ai_tool_name", "files__read_file"),
        ("quiver_mode", "passthrough"),
    ];
    assert_eq!(
        count_where(OPERATIONS, &called),
        1,
        "{}",
        render_prometheus()
    );

    eprintln!("--- a made-up tool is timed as a failed call, without its name");
    call_refused(&client, "files__made_up_name", json!({})).await;
    assert_eq!(
        count_where(
            OPERATIONS,
            &[("mcp_method_name", "tools/call"), ("error_type", "-32602")]
        ),
        1
    );
    let exported = render_prometheus();
    assert!(!exported.contains("files__made_up_name"), "{exported}");
    assert!(!exported.contains("quiver_tenant"), "{exported}");
    assert!(!exported.contains("/tmp/a.txt"), "{exported}");
    assert!(
        count_where(OPERATIONS, &[("mcp_method_name", "initialize")]) >= 1,
        "{exported}"
    );

    eprintln!("--- the session's end is timed");
    client.cancel().await.expect("the client closes");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while count_where(SESSIONS, &[("quiver_mode", "passthrough")]) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no session duration after the session ended: {}",
            render_prometheus()
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
