//! A three-node control plane of real processes on loopback, under a steady
//! write load: the leader, then a follower, then every node is `kill -9`ed and
//! restarted from disk. A client-side history of every write and read is
//! checked afterwards: no acknowledged write is lost and reads are
//! linearizable. Also: a node added late catches up by snapshot.

use crate::support;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use quiver_control_plane::{admin::AdminRequest, client::AdminClient, tenant::TenantPatch};
use serde_json::Value;
use support::{ControlPlaneProcess, ctl, ctl_json, start_three_node_cluster};

/// One operation of the history, with its real-time interval.
#[derive(Debug, Clone)]
enum Op {
    /// `tenant create <id>`; `acked` when the cluster answered success.
    Write {
        id: String,
        invoked: Instant,
        completed: Instant,
        acked: bool,
    },
    /// `tenant list`; the ids it returned.
    Read {
        invoked: Instant,
        completed: Instant,
        seen: BTreeSet<String>,
    },
}

struct History {
    ops: Mutex<Vec<Op>>,
    acked: tokio::sync::watch::Sender<usize>,
}

impl History {
    fn new() -> History {
        History {
            ops: Mutex::new(Vec::new()),
            acked: tokio::sync::watch::channel(0).0,
        }
    }

    fn acked(&self) -> usize {
        *self.acked.borrow()
    }

    /// Checks the history against a grow-only set:
    /// - a read sees every write acknowledged before the read began;
    /// - a read sees nothing that was not yet asked for when it ended;
    /// - a read never sees less than a read that ended before it began.
    fn check(&self, final_ids: &BTreeSet<String>) {
        let ops = self.ops.lock().unwrap().clone();
        let writes: Vec<(&String, Instant, Instant, bool)> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Write {
                    id,
                    invoked,
                    completed,
                    acked,
                } => Some((id, *invoked, *completed, *acked)),
                Op::Read { .. } => None,
            })
            .collect();
        let reads: Vec<(Instant, Instant, &BTreeSet<String>)> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Read {
                    invoked,
                    completed,
                    seen,
                } => Some((*invoked, *completed, seen)),
                Op::Write { .. } => None,
            })
            .collect();
        for (id, _, _, acked) in &writes {
            if *acked {
                assert!(final_ids.contains(*id), "acknowledged write {id} was lost");
            }
        }
        for (r_invoked, r_completed, seen) in &reads {
            for (id, w_invoked, w_completed, acked) in &writes {
                if *acked && w_completed < r_invoked {
                    assert!(
                        seen.contains(*id),
                        "a read began after {id} was acknowledged but did not see it (stale read)"
                    );
                }
                if seen.contains(*id) {
                    assert!(
                        w_invoked < r_completed,
                        "a read saw {id} before anyone asked for it"
                    );
                }
            }
            for (other_invoked, other_completed, other_seen) in &reads {
                if r_completed < other_invoked {
                    assert!(
                        seen.is_subset(other_seen),
                        "a later read ({other_invoked:?}..{other_completed:?}) saw less than an earlier one"
                    );
                }
            }
        }
        for id in final_ids {
            assert!(
                writes.iter().any(|(w, ..)| *w == id),
                "{id} appeared without being written"
            );
        }
    }
}

fn tenant_ids(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Writes `t-0`, `t-1`, … one at a time and reads the list after every few
/// writes, recording everything, until `stop` is set.
async fn load(
    endpoints: Vec<String>,
    history: Arc<History>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut client = AdminClient::new(endpoints, None).with_timeout(Duration::from_secs(3));
    let mut n = 0u64;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let id = format!("t-{n}");
        n += 1;
        let invoked = Instant::now();
        let result = client
            .call(&AdminRequest::TenantCreate {
                id: id.clone(),
                patch: TenantPatch::default(),
            })
            .await;
        let acked = result.is_ok();
        history.ops.lock().unwrap().push(Op::Write {
            id,
            invoked,
            completed: Instant::now(),
            acked,
        });
        if acked {
            history.acked.send_modify(|n| *n += 1);
        }
        if !acked {
            // The cluster is electing; the next attempt goes to whoever answers.
            tokio::task::yield_now().await;
        }
        if n.is_multiple_of(3) {
            let invoked = Instant::now();
            if let Ok(list) = client.call(&AdminRequest::TenantList).await {
                history.ops.lock().unwrap().push(Op::Read {
                    invoked,
                    completed: Instant::now(),
                    seen: tenant_ids(&list.to_json()),
                });
            }
        }
    }
}

/// Waits until `more` writes beyond the current count are acknowledged.
async fn acked_more(history: &History, more: usize, what: &str) {
    let target = history.acked() + more;
    let mut acked = history.acked.subscribe();
    let reached = tokio::time::timeout(Duration::from_secs(60), acked.wait_for(|n| *n >= target));
    assert!(
        reached.await.is_ok(),
        "no progress {what}: {} of {target} writes acknowledged",
        history.acked()
    );
}

fn leader_of(endpoints: &str) -> u64 {
    ctl_json(endpoints, &["cluster", "status"])["leader"]
        .as_u64()
        .expect("leader id")
}

/// Waits until every member's matched index equals the leader's last index.
async fn caught_up(endpoints: &str, node: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (ok, stdout, _) = ctl(endpoints, &["-o", "json", "cluster", "status"]);
        if ok {
            let status: Value = serde_json::from_str(&stdout).unwrap();
            let last = status["last_log_index"].as_u64();
            let member = status["members"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["id"].as_u64() == Some(node)).cloned());
            if let Some(member) = member
                && member["matched_index"].as_u64() == last
            {
                return;
            }
        }
        assert!(Instant::now() < deadline, "node {node} did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Three nodes (node 1 bootstrapped, 2 and 3 promoted) and their addresses.
fn three_node_cluster(dir: &std::path::Path) -> (Vec<ControlPlaneProcess>, Vec<String>) {
    let (nodes, _) = start_three_node_cluster(dir);
    let addrs = nodes.iter().map(|n| n.addr.clone()).collect();
    (nodes, addrs)
}

#[tokio::test(flavor = "multi_thread")]
async fn killing_nodes_loses_no_acknowledged_write_and_reads_stay_linearizable() {
    let dir = tempfile::tempdir().unwrap();

    tracing::info!("--- form a three-node cluster: bootstrap 1, add 2 and 3, promote them");
    let (mut nodes, addrs) = three_node_cluster(dir.path());
    let endpoints = addrs.join(",");
    let status = ctl_json(&endpoints, &["cluster", "status"]);
    let roles: Vec<&str> = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles.iter().filter(|r| **r == "leader").count(),
        1,
        "{status}"
    );
    assert_eq!(
        roles.iter().filter(|r| **r == "follower").count(),
        2,
        "{status}"
    );

    let history = Arc::new(History::new());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = tokio::spawn(load(addrs.clone(), history.clone(), stop.clone()));
    acked_more(&history, 20, "before any failure").await;

    tracing::info!("--- kill -9 the leader; a new one is elected and takes writes");
    let leader = leader_of(&endpoints);
    nodes[leader as usize - 1].kill();
    acked_more(&history, 20, "after killing the leader").await;
    let new_leader = leader_of(&endpoints);
    assert_ne!(new_leader, leader);

    tracing::info!("--- restart the old leader; it rejoins and catches up");
    nodes[leader as usize - 1].restart();
    acked_more(&history, 10, "after the old leader restarted").await;
    caught_up(&endpoints, leader).await;

    tracing::info!("--- kill -9 a follower, write on, restart it");
    let follower = (1..=3u64).find(|id| *id != leader_of(&endpoints)).unwrap();
    nodes[follower as usize - 1].kill();
    acked_more(&history, 20, "with a follower down").await;
    nodes[follower as usize - 1].restart();
    caught_up(&endpoints, follower).await;

    tracing::info!("--- kill -9 every node, restart them all from disk");
    for node in &mut nodes {
        node.kill();
    }
    for node in &mut nodes {
        node.restart();
    }
    acked_more(&history, 20, "after a full-cluster restart").await;

    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();

    tracing::info!("--- check the history");
    let final_ids = tenant_ids(&ctl_json(&endpoints, &["tenant", "list"]));
    assert!(
        history.acked() >= 90,
        "only {} acknowledged writes",
        history.acked()
    );
    history.check(&final_ids);
    for id in 1..=3 {
        caught_up(&endpoints, id).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_added_late_catches_up_by_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let leader = ControlPlaneProcess::start(
        1,
        &dir.path().join("n1"),
        &["--bootstrap", "--snapshot-every", "20"],
    );
    let first = leader.addr.clone();

    tracing::info!("--- 60 writes on a one-node cluster that snapshots every 20 entries");
    let mut client = AdminClient::new(vec![first.clone()], None);
    for n in 0..60 {
        client
            .call(&AdminRequest::TenantCreate {
                id: format!("early-{n}"),
                patch: TenantPatch::default(),
            })
            .await
            .unwrap();
    }
    let status = ctl_json(&first, &["cluster", "status"]);
    let purged = status["purged"].as_u64().unwrap_or(0);
    assert!(
        purged > 1,
        "the log was not purged behind a snapshot: {status}"
    );

    tracing::info!(
        "--- add node 2: the entries it needs are gone, so it must install the snapshot"
    );
    let late = ControlPlaneProcess::start(2, &dir.path().join("n2"), &["--snapshot-every", "20"]);
    let addrs = [first.clone(), late.addr.clone()];
    let (ok, _, err) = ctl(
        &first,
        &[
            "cluster",
            "add-learner",
            "--node-id",
            "2",
            "--addr",
            &addrs[1],
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = ctl(&first, &["cluster", "promote", "2"]);
    assert!(ok, "{err}");
    let endpoints = addrs.join(",");
    caught_up(&endpoints, 2).await;

    tracing::info!("--- hand leadership to node 2 and read everything back from it");
    let (ok, _, err) = ctl(&endpoints, &["cluster", "transfer-leader", "2"]);
    assert!(ok, "{err}");
    assert_eq!(leader_of(&addrs[1]), 2);
    let ids = tenant_ids(&ctl_json(&addrs[1], &["tenant", "list"]));
    for n in 0..60 {
        assert!(
            ids.contains(&format!("early-{n}")),
            "node 2 lacks early-{n}"
        );
    }
}

#[test]
fn a_damaged_data_directory_stops_the_node_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("raft.redb"), vec![0xA5u8; 4096]).unwrap();
    let output = std::process::Command::new(support::quiver_bin())
        .args([
            "control-plane",
            "--node-id",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--data",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "a damaged data file must not start"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("raft.redb") && stderr.contains("damaged"),
        "the error should name the file: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_certificates_nodes_and_ctl_speak_mutual_tls_only() {
    let dir = tempfile::tempdir().unwrap();
    let ca = support::TestCa::new();
    let issue = |name: &str| {
        let (cert, key) = ca.issue("127.0.0.1");
        let cert_path = support::write_file(dir.path(), &format!("{name}.pem"), &cert);
        let key_path = support::write_file(dir.path(), &format!("{name}.key"), &key);
        (cert_path, key_path)
    };
    let ca_path = support::write_file(dir.path(), "ca.pem", &ca.pem);
    let tls_flags = |(cert, key): &(std::path::PathBuf, std::path::PathBuf)| -> Vec<String> {
        vec![
            "--tls-ca".into(),
            ca_path.to_str().unwrap().into(),
            "--tls-cert".into(),
            cert.to_str().unwrap().into(),
            "--tls-key".into(),
            key.to_str().unwrap().into(),
        ]
    };
    let n1 = tls_flags(&issue("node1"));
    let n2 = tls_flags(&issue("node2"));
    let operator = tls_flags(&issue("operator"));
    let mut flags1: Vec<&str> = n1.iter().map(String::as_str).collect();
    flags1.push("--bootstrap");
    let a = ControlPlaneProcess::start(1, &dir.path().join("n1"), &flags1);
    let flags2: Vec<&str> = n2.iter().map(String::as_str).collect();
    let b = ControlPlaneProcess::start(2, &dir.path().join("n2"), &flags2);
    let addrs = [a.addr.clone(), b.addr.clone()];

    tracing::info!("--- with the operator's certificate: form the cluster and write");
    let endpoints = addrs.join(",");
    let with_tls = |args: &[&str]| {
        let mut all: Vec<&str> = operator.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        ctl(&endpoints, &all)
    };
    let (ok, _, err) = with_tls(&[
        "cluster",
        "add-learner",
        "--node-id",
        "2",
        "--addr",
        &addrs[1],
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = with_tls(&["cluster", "promote", "2"]);
    assert!(ok, "{err}");
    let (ok, _, err) = with_tls(&["tenant", "create", "secure"]);
    assert!(ok, "{err}");
    let (ok, out, err) = with_tls(&["-o", "json", "cluster", "status"]);
    assert!(ok, "{err}");
    let status: Value = serde_json::from_str(&out).unwrap();
    let matched: Vec<Option<u64>> = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["matched_index"].as_u64())
        .collect();
    assert_eq!(matched.len(), 2);
    assert!(
        matched.iter().all(Option::is_some),
        "node 2 replicates over mTLS: {status}"
    );

    tracing::info!("--- an executor follows the TLS cluster with its own certificate");
    let (exec_cert, exec_key) = issue("executor");
    let (ca_arg, cert_arg, key_arg) = (
        ca_path.to_str().unwrap(),
        exec_cert.to_str().unwrap(),
        exec_key.to_str().unwrap(),
    );
    let _executor = support::ExecutorProcess::start(&[
        "--control-plane",
        &endpoints,
        "--node-name",
        "tls-executor",
        "--control-plane-tls-ca",
        ca_arg,
        "--control-plane-tls-cert",
        cert_arg,
        "--control-plane-tls-key",
        key_arg,
    ]);
    let mut verify: Vec<&str> = operator.iter().map(String::as_str).collect();
    verify.extend(["cluster", "verify"]);
    support::ctl_until(&endpoints, &verify, |ok, out| {
        ok && out.contains("tls-executor")
    });

    tracing::info!("--- without a certificate: refused");
    let (ok, _, err) = ctl(&endpoints, &["tenant", "list"]);
    assert!(!ok, "a plaintext client must not be served");
    assert!(err.contains("cluster unreachable"), "{err}");
    for addr in &addrs {
        let refusal = support::tls_refusal(addr, "127.0.0.1", &ca.pem, None);
        assert!(refusal.contains("CertificateRequired"), "{addr}: {refusal}");
    }

    tracing::info!("--- a certificate from an impostor CA (same name, other key): refused");
    let impostor = support::TestCa::new();
    let (cert, key) = impostor.issue("127.0.0.1");
    for addr in &addrs {
        let refusal = support::tls_refusal(addr, "127.0.0.1", &ca.pem, Some((&cert, &key)));
        assert!(refusal.contains("DecryptError"), "{addr}: {refusal}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn losing_the_majority_is_reported_and_a_returning_node_restores_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, addrs) = three_node_cluster(dir.path());
    let endpoints = addrs.join(",");

    tracing::info!("--- kill -9 both followers: the leader cannot commit and says why");
    let leader = leader_of(&endpoints);
    for id in (1..=3u64).filter(|id| *id != leader) {
        nodes[id as usize - 1].kill();
    }
    let (ok, _, err) = ctl(&endpoints, &["tenant", "create", "during-outage"]);
    assert!(!ok, "a write without a majority must not be acknowledged");
    assert!(
        err.contains("majority"),
        "the error should say a majority is missing: {err}"
    );

    tracing::info!("--- one follower returns: a majority again, writes go through");
    let back = (1..=3u64).find(|id| *id != leader).unwrap();
    nodes[back as usize - 1].restart();
    let (ok, _, err) = ctl(&endpoints, &["tenant", "create", "after-outage"]);
    assert!(ok, "{err}");
    let ids = tenant_ids(&ctl_json(&endpoints, &["tenant", "list"]));
    assert!(ids.contains("after-outage"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watching_executor_resumes_on_another_node_when_its_node_dies() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, addrs) = three_node_cluster(dir.path());
    let endpoints = addrs.join(",");

    tracing::info!("--- an executor watches node 1 first (all three are its endpoints)");
    let _executor = support::ExecutorProcess::start(&[
        "--control-plane",
        &endpoints,
        "--node-name",
        "watching-executor",
    ]);

    tracing::info!("--- kill -9 node 1, then change the manifest through the others");
    nodes[0].kill();
    let mut add = vec!["upstream", "add", "weather"];
    let flags = support::demo_upstream_flags("weather", &[]);
    add.extend(flags.iter().map(String::as_str));
    let (ok, _, err) = ctl(&endpoints, &add);
    assert!(ok, "{err}");

    tracing::info!("--- the executor resumes on another node and holds the new version");
    support::ctl_until(
        &endpoints,
        &["-o", "json", "cluster", "verify"],
        |ok, out| {
            let Some(report) = ok
                .then(|| serde_json::from_str::<Value>(out).ok())
                .flatten()
            else {
                return false;
            };
            report["manifest_version"].as_u64().unwrap_or(0) >= 1
                && report["nodes"].as_array().is_some_and(|n| {
                    n.iter()
                        .any(|n| n["node"] == "watching-executor" && n["verdict"] == "ok")
                })
        },
    );
}

#[test]
fn a_config_file_can_say_what_the_flags_say_and_a_wrong_key_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("n7");
    let config = format!(
        "[control_plane]\nnode_id = 7\nlisten = \"127.0.0.1:0\"\ndata = \"{}\"\nbootstrap = true\n",
        data.display()
    );
    let path = support::write_file(dir.path(), "cp.toml", &config);
    let mut command = std::process::Command::new(support::quiver_bin());
    command.args(["control-plane", "--config"]).arg(&path);
    let (mut child, banner) = support::spawn_with_banner(&mut command, "quiver control-plane");
    assert!(banner.contains("node 7 serving"), "{banner}");
    let addr = support::serving_addr(&banner);
    let status = ctl_json(&addr, &["cluster", "status"]);
    assert_eq!(status["leader"], 7);
    let _ = child.kill();
    let _ = child.wait();

    let bad = support::write_file(dir.path(), "bad.toml", "[control_plane]\nnode_idd = 7\n");
    let output = std::process::Command::new(support::quiver_bin())
        .args(["control-plane", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("node_idd") && stderr.contains("bad.toml"),
        "{stderr}"
    );
}
