//! A whole control plane lost at once: every node of a three-node cluster is
//! `kill -9`ed while an executor watches it. The executor keeps serving the
//! manifest it holds; once the nodes restart from disk, the next manifest
//! change reaches it without a restart of its own.

use crate::support;

use std::time::{Duration, Instant};

use quiver_proto::pb::{self, executor_client::ExecutorClient};
use serde_json::Value;
use support::{ExecutorProcess, add_demo_upstream, ctl, ctl_until, start_three_node_cluster};
use tonic::{Code, transport::Channel};

/// Calls `server`'s `tool` on the executor with `arguments` (JSON).
async fn call(
    executor: &mut ExecutorClient<Channel>,
    server: &str,
    tool: &str,
    arguments: &str,
) -> Result<Value, tonic::Status> {
    let answer = executor
        .call_tool(pb::CallToolRequest {
            tenant: "t".into(),
            server: server.into(),
            tool: tool.into(),
            arguments_json: arguments.into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(serde_json::from_str(&answer.result_json).expect("the result is JSON"))
}

/// Repeats the call until the executor serves it (its view gains the tool
/// once its manifest does); fails the test after 60 s.
async fn served_eventually(
    executor: &mut ExecutorClient<Channel>,
    server: &str,
    tool: &str,
    arguments: &str,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match call(executor, server, tool, arguments).await {
            Ok(result) => return result,
            Err(status) => assert!(
                Instant::now() < deadline,
                "the executor never served {server}.{tool}: {status:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `ctl cluster verify` until the watcher reports the canonical manifest
/// at a version above `above`; returns that version.
fn watcher_holds_a_version_above(endpoints: &str, watcher: &str, above: u64) -> u64 {
    let report = ctl_until(
        endpoints,
        &["-o", "json", "cluster", "verify"],
        |ok, out| {
            let Some(report) = ok
                .then(|| serde_json::from_str::<Value>(out).ok())
                .flatten()
            else {
                return false;
            };
            report["manifest_version"].as_u64().unwrap_or(0) > above
                && report["nodes"].as_array().is_some_and(|nodes| {
                    nodes
                        .iter()
                        .any(|n| n["node"] == watcher && n["verdict"] == "ok")
                })
        },
    );
    let report: Value = serde_json::from_str(&report).expect("verify is JSON");
    report["manifest_version"].as_u64().expect("a version")
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watching_executor_survives_a_full_control_plane_outage_and_follows_it_after() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, endpoints) = start_three_node_cluster(dir.path());

    tracing::info!("--- an executor watches all three nodes and gets the weather upstream");
    let watcher = "outage-watcher";
    let executor = ExecutorProcess::start(&["--control-plane", &endpoints, "--node-name", watcher]);
    let mut client = ExecutorClient::connect(format!("http://{}", executor.addr))
        .await
        .expect("connect to the executor");
    add_demo_upstream(&endpoints, "weather", "weather", &[]);
    let forecast = r#"{"city":"Oslo"}"#;
    let before = served_eventually(&mut client, "weather", "get_forecast", forecast).await;
    assert!(text_of(&before).contains("Oslo"), "{before}");
    let held = watcher_holds_a_version_above(&endpoints, watcher, 0);

    tracing::info!("--- kill -9 every control-plane node (the watcher held version {held})");
    for node in &mut nodes {
        node.kill();
    }
    let (ok, _, err) = ctl(&endpoints, &["cluster", "status"]);
    assert!(!ok, "no node should answer: {err}");

    tracing::info!("--- the executor keeps serving what it held, and nothing more");
    let during = call(&mut client, "weather", "get_forecast", r#"{"city":"Lima"}"#)
        .await
        .expect("a tool of the held manifest is still served");
    assert!(text_of(&during).contains("Lima"), "{during}");
    let unknown = call(&mut client, "maps", "geocode", r#"{"address":"1 Main St"}"#)
        .await
        .expect_err("maps is not in the held manifest");
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");

    tracing::info!("--- restart all three from disk; a new upstream reaches the executor");
    for node in &mut nodes {
        node.restart();
    }
    add_demo_upstream(&endpoints, "maps", "maps", &[]);
    let geocoded =
        served_eventually(&mut client, "maps", "geocode", r#"{"address":"1 Main St"}"#).await;
    assert!(text_of(&geocoded).contains("1 Main St"), "{geocoded}");
    let now = watcher_holds_a_version_above(&endpoints, watcher, held);
    tracing::info!("--- the watcher holds version {now} (was {held})");
    let after = call(&mut client, "weather", "get_forecast", forecast)
        .await
        .expect("the upstream it held still serves");
    assert!(text_of(&after).contains("Oslo"), "{after}");
}
