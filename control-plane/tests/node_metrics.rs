//! What a one-node control plane measures about itself, read back from the
//! process's Prometheus rendering: Raft term and leadership, the leader
//! change it saw, a write's commit time, the manifest version it serves, and
//! an executor reporting to it (its watch lag and its state in the fleet).
//! One node in this process, so its gauges are the only ones reported.

use std::time::Duration;

use quiver_control_plane::{
    ControlPlaneNode, ManifestStore,
    command::Command,
    node_role::NodeRole,
    watcher::{WatchConfig, spawn_reporter},
};
use quiver_telemetry::metrics::render_prometheus;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The value of the sample `name{labels}` (`name` alone without labels).
fn sample(name: &str, labels: &str) -> Option<f64> {
    quiver_telemetry::metrics::sample(name, labels)
}

use crate::wait;

/// Waits for `condition`, showing the process's metrics if it never holds.
async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    wait::wait_for_or(what, condition, render_prometheus).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_node_cluster_reports_its_raft_state_and_its_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let shutdown = CancellationToken::new();
    let (node, addr) =
        ControlPlaneNode::start(crate::one_node(dir.path().join("data")), shutdown.clone())
            .await
            .unwrap();

    eprintln!("--- the node elects itself");
    assert_eq!(node.wait_for_leader(Duration::from_secs(10)).await, Some(1));
    assert!(sample("quiver_raft_term", "").is_some_and(|t| t >= 1.0));
    assert_eq!(sample("quiver_raft_is_leader", ""), Some(1.0));
    wait_for("one leader change counted", || {
        sample("quiver_raft_leader_changes_total", "") == Some(1.0)
    })
    .await;

    eprintln!("--- a write commits, is timed and applied");
    let commits = || sample("quiver_raft_commit_duration_seconds_count", "").unwrap_or(0.0);
    let before = commits();
    node.write("test", Command::AppendAudit { records: vec![] })
        .await
        .unwrap();
    assert_eq!(commits() - before, 1.0);
    wait_for("nothing left to apply", || {
        sample("quiver_raft_apply_lag", "") == Some(0.0)
    })
    .await;
    let version = node.shared().manifest().version as f64;
    assert_eq!(
        sample("quiver_manifest_version", "quiver_role=\"control-plane\""),
        Some(version)
    );

    eprintln!("--- an executor holding the canonical manifest reports in");
    // The empty store holds the same (empty) manifest as the fresh cluster.
    let store = Arc::new(ManifestStore::new());
    spawn_reporter(
        WatchConfig {
            endpoints: vec![addr.to_string()],
            tls: None,
            node: "metrics-executor".into(),
            role: NodeRole::Executor,
            health: Default::default(),
            contact: Default::default(),
            grpc: None,
            mcp: None,
        },
        store,
        shutdown.clone(),
    );
    wait_for("the executor is counted", || {
        sample(
            "quiver_fleet_members",
            "quiver_role=\"executor\",state=\"ok\"",
        ) == Some(1.0)
    })
    .await;
    assert_eq!(
        sample("quiver_watch_lag", "quiver_node=\"metrics-executor\""),
        Some(0.0)
    );
    assert_eq!(
        sample("quiver_fleet_members", "quiver_role=\"edge\",state=\"ok\""),
        Some(0.0)
    );
    assert_eq!(
        sample("quiver_manifest_version", "quiver_role=\"executor\""),
        Some(version)
    );

    eprintln!("--- a stopped node reports no gauges");
    node.shutdown().await;
    assert_eq!(sample("quiver_raft_is_leader", ""), None);
}
