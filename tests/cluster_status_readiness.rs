//! `quiver ctl cluster status` shows every edge and executor reporting in,
//! with its own readiness verdict and admin address, and `cluster verify`
//! adds a readiness column: what an operator checks before sending traffic.

use crate::support;

use support::{QuiverDev, ctl_json, ctl_until};

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
