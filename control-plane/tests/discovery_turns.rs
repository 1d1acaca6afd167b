//! Discovery lists at most its limit of upstreams at once. Forty stdio
//! upstreams whose process appends `s` to a shared file when it starts and
//! `e` just before it fails are all tried, and replaying the file (appends
//! land in the order they happen) never finds more processes running than
//! the limit.

use std::sync::Arc;

use quiver_control_plane::{Discovery, DiscoverySink};
use quiver_proto::{manifest::ServerEntry, upstream_config::UpstreamConfig};
use quiver_upstream::UpstreamSet;
use tokio_util::sync::CancellationToken;

/// Keeps nothing: these upstreams never list.
struct Nowhere;

impl DiscoverySink for Nowhere {
    fn discovered(&self, _entry: ServerEntry) {}
}

/// The most lines of `log` between an `s` and its `e`, and how many started.
fn most_at_once(log: &str) -> (usize, usize) {
    let (mut running, mut most, mut started) = (0usize, 0usize, 0usize);
    for line in log.lines() {
        match line.trim() {
            "s" => {
                running += 1;
                started += 1;
                most = most.max(running);
            }
            "e" => running = running.saturating_sub(1),
            _ => {}
        }
    }
    (most, started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_upstreams_are_tried_no_more_than_the_limit_at_once() {
    const LIMIT: usize = 6;
    const UPSTREAMS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let script = format!(
        "echo s >> '{0}'; sleep 0.2; echo e >> '{0}'; exit 1",
        log.display()
    );
    let configs: Vec<UpstreamConfig> = (0..UPSTREAMS)
        .map(|i| {
            UpstreamConfig::stdio(
                format!("failing-{i}"),
                "sh",
                vec!["-c".into(), script.clone()],
            )
        })
        .collect();
    let shutdown = CancellationToken::new();
    let discovery = Discovery::with_limit(
        Arc::new(UpstreamSet::new(Vec::new())),
        Arc::new(Nowhere),
        shutdown.clone(),
        LIMIT,
    );
    discovery.sync(configs).await;
    tokio::time::timeout(std::time::Duration::from_secs(120), discovery.first_round())
        .await
        .expect("every upstream was tried within two minutes");
    let stats = discovery.attempts();
    shutdown.cancel();
    let (most, started) = most_at_once(&std::fs::read_to_string(&log).unwrap());
    assert!(started >= UPSTREAMS, "only {started} processes started");
    assert!(most <= LIMIT, "{most} upstream processes ran at once");
    assert!(stats.peak <= LIMIT && stats.limit == LIMIT, "{stats:?}");
    // The limit is a bound, not a queue of one: several ran together.
    assert!(most > 1, "the upstreams were tried one at a time");
}

#[test]
fn the_replay_counts_overlaps() {
    assert_eq!(most_at_once("s\ns\ne\ns\ns\ne\ne\ne\n"), (3, 4));
    assert_eq!(most_at_once(""), (0, 0));
}
