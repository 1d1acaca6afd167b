//! A node given `--backup-dir` writes a backup there every period while it
//! leads, keeps only the newest few, and says when the last one was written
//! on `/metrics`; each file reads back as a backup holding what was
//! acknowledged before it.

use std::time::Duration;

use quiver_control_plane::{
    ControlPlaneNode, NodeConfig,
    backup::{self, BackupSchedule},
    command::Command,
};
use quiver_telemetry::metrics::render_prometheus;
use tokio_util::sync::CancellationToken;

use crate::wait;

#[tokio::test(flavor = "multi_thread")]
async fn the_leader_writes_backups_on_schedule_and_keeps_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    let shutdown = CancellationToken::new();
    let (node, _) = ControlPlaneNode::start(
        NodeConfig {
            backups: Some(BackupSchedule {
                dir: backups.clone(),
                every: Duration::from_secs(1),
                keep: 2,
            }),
            ..crate::one_node(dir.path().join("data"))
        },
        shutdown.clone(),
    )
    .await
    .unwrap();
    assert_eq!(node.wait_for_leader(Duration::from_secs(10)).await, Some(1));
    let committed = node
        .write(
            "test",
            Command::CreateTenant {
                id: "acme".into(),
                patch: Default::default(),
            },
        )
        .await
        .unwrap();

    eprintln!("--- a backup holding the tenant appears");
    let list = || backup::list_backups(&backups).unwrap_or_default();
    wait::wait_for_or(
        "a backup taken after the write",
        || {
            list().last().is_some_and(|newest| {
                backup::read(newest).is_ok_and(|b| b.header.raft_index >= committed.log_index)
            })
        },
        render_prometheus,
    )
    .await;
    let newest = backup::read(list().last().unwrap()).unwrap();
    assert!(newest.state.tenants.contains_key("acme"));
    assert_eq!(newest.header.counts.tenants, 1);

    eprintln!("--- older ones go: at most two are kept");
    let first = list()[0].clone();
    wait::wait_for_or(
        "the first backup removed",
        || !list().contains(&first) && !list().is_empty(),
        render_prometheus,
    )
    .await;
    assert!(list().len() <= 2, "{:?}", list());
    // No partial file is left behind.
    let names: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");

    eprintln!("--- /metrics says when the last one was written, and how many");
    let metrics = render_prometheus();
    let last =
        quiver_telemetry::metrics::sample("quiver_control_plane_backup_last_success_seconds", "");
    assert!(last.is_some_and(|s| s > 1.7e9), "{metrics}");
    let ok =
        quiver_telemetry::metrics::sample("quiver_control_plane_backups_total", "outcome=\"ok\"");
    assert!(ok.is_some_and(|n| n >= 2.0), "{metrics}");
    shutdown.cancel();
    node.shutdown().await;
}
