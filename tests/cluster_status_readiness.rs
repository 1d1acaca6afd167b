//! `quiver ctl cluster status` shows every edge and executor reporting in,
//! with its own readiness verdict and admin address, and `cluster verify`
//! adds a readiness column: what an operator checks before sending traffic.
//! After a leader change both still list every node (each reports to the
//! member it follows), and a member that does not answer is shown down.

use crate::support;

use serde_json::Value;
use support::{ExecutorProcess, QuiverDev, ctl, ctl_json, ctl_until, start_three_node_cluster};

/// The names of the edges and executors in a status or verification.
fn fleet_names(listing: &Value) -> Vec<String> {
    let mut names: Vec<String> = listing
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["node"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn status_and_verify_agree_after_a_leader_change_and_a_dead_member_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, endpoints) = start_three_node_cluster(dir.path());
    // The executor follows node 1 only: its reports go there.
    let _executor = ExecutorProcess::start(&[
        "--control-plane",
        &nodes[0].addr,
        "--node-name",
        "follows-node-1",
    ]);
    ctl_until(
        &endpoints,
        &["-o", "json", "cluster", "status"],
        |ok, out| ok && out.contains("follows-node-1"),
    );

    eprintln!("--- node 2 leads: its status still lists the executor, as verify does");
    let (ok, _, err) = ctl(&endpoints, &["cluster", "transfer-leader", "2"]);
    assert!(ok, "{err}");
    let status = ctl_json(&nodes[1].addr, &["cluster", "status"]);
    assert_eq!(status["leader"], 2, "{status}");
    let verify = ctl_json(&endpoints, &["cluster", "verify"]);
    assert_eq!(
        fleet_names(&status["fleet"]),
        ["follows-node-1"],
        "{status}"
    );
    assert_eq!(fleet_names(&status["fleet"]), fleet_names(&verify["nodes"]));
    let states: Vec<&str> = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(states, ["up", "up", "up"], "{status}");

    eprintln!("--- node 3 dies: it is down, not a follower like the others");
    nodes[2].kill();
    let status = ctl_json(&endpoints, &["cluster", "status"]);
    let member_3 = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == 3)
        .cloned()
        .unwrap_or_default();
    assert_eq!(member_3["state"], "down", "{status}");
    let (ok, table, err) = ctl(&endpoints, &["cluster", "status"]);
    assert!(ok, "{err}");
    let line = table
        .lines()
        .find(|l| l.starts_with('3'))
        .unwrap_or_else(|| panic!("no line for node 3: {table}"));
    assert!(line.contains("down"), "{table}");
}

#[test]
fn cluster_status_lists_the_edge_and_the_executor_as_ready_with_their_admin_listeners() {
    let dev = QuiverDev::start(&["--executor", "child"]);
    let executor_admin = dev
        .banner
        .split("executor-admin ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no executor admin address in: {}", dev.banner))
        .trim()
        .to_string();

    eprintln!("--- both nodes report ready (reports arrive every few seconds)");
    ctl_until(
        &dev.control_plane,
        &["-o", "json", "cluster", "status"],
        |ok, out| ok && out.matches("\"ready\": true").count() >= 2,
    );
    let status = ctl_json(&dev.control_plane, &["cluster", "status"]);
    let fleet = status["fleet"].as_array().expect("a fleet list");
    let executor = fleet
        .iter()
        .find(|n| n["role"] == "executor")
        .unwrap_or_else(|| panic!("no executor in {status}"));
    assert_eq!(executor["ready"], true, "{executor}");
    assert_eq!(executor["admin"], executor_admin.as_str(), "{executor}");
    assert_eq!(executor["verdict"], "ok", "{executor}");
    let edge = fleet
        .iter()
        .find(|n| n["role"] == "dev")
        .unwrap_or_else(|| panic!("no edge in {status}"));
    assert_eq!(edge["ready"], true, "{edge}");

    eprintln!("--- the tables say so too");
    let (ok, table, stderr) = support::ctl(&dev.control_plane, &["cluster", "status"]);
    assert!(ok, "{stderr}");
    assert!(
        table.contains("READY") && table.contains("ADMIN"),
        "{table}"
    );
    assert!(table.contains(&executor_admin), "{table}");
    let (ok, verify, stderr) = support::ctl(&dev.control_plane, &["cluster", "verify"]);
    assert!(ok, "{stderr}");
    let executor_line = verify
        .lines()
        .find(|l| l.contains("executor"))
        .unwrap_or_else(|| panic!("no executor line: {verify}"));
    assert!(executor_line.trim_end().ends_with("yes"), "{verify}");
}
