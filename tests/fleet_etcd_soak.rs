//! Membership rides on etcd watches that must hold: an edge and an executor
//! started with `--etcd` against the etcd `scripts/install-deps.sh` installs
//! (Debian's 3.4) run for ten minutes (`QUIVER_SOAK_SECS` shortens it for a
//! local run), the edge serving calls throughout. Neither logs a single
//! "etcd unreachable", and the edge's `/status` says etcd is connected in
//! every sample. With keep-alive pings every second, etcd (which refuses
//! pings more often than every 5 s) closed the connection every 4 to 7 s.

use crate::support;

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::json;
use support::{
    QuiverDev, call, connect,
    etcd::{Etcd, ok_nodes},
    http, mcp_authority, quiver_bin, spawn_with_banner_logging, text,
};

/// How long the soak runs.
fn soak() -> Duration {
    let secs = std::env::var("QUIVER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// A process killed on drop.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `quiver <args>` with its log (at info) in `log`; its startup line.
fn start_logging(args: &[&str], log: &std::path::Path, what: &str) -> (Running, String) {
    let file = std::fs::File::create(log).expect("log file");
    let mut command = Command::new(quiver_bin());
    command.args(args).env("RUST_LOG", "info");
    let (child, banner) = spawn_with_banner_logging(&mut command, what, Stdio::from(file));
    (Running(child), banner)
}

/// The lines of `log` that say etcd could not be reached.
fn etcd_errors(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("etcd unreachable") || l.contains("etcd:"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_watches_hold_for_ten_minutes_against_the_installed_etcd() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--data", cp.to_str().unwrap()]);
    let key = cp.join("cluster.key");
    let executor_log = data.path().join("executor.log");
    let (_executor, _) = start_logging(
        &[
            "executor",
            "--listen",
            "127.0.0.1:0",
            "--control-plane",
            &dev.control_plane,
            "--etcd",
            &etcd.endpoint(),
            "--node-name",
            "soak-executor",
            "--cluster-key-file",
            key.to_str().unwrap(),
        ],
        &executor_log,
        "quiver executor",
    );
    let edge_log = data.path().join("edge.log");
    let (_edge, banner) = start_logging(
        &[
            "edge",
            "--listen",
            "127.0.0.1:0",
            "--control-plane",
            &dev.control_plane,
            "--etcd",
            &etcd.endpoint(),
        ],
        &edge_log,
        "quiver edge",
    );
    let authority = mcp_authority(&banner);
    let status = || async {
        http()
            .get(format!("http://{authority}/status"))
            .send()
            .await
            .expect("GET /status")
            .json::<serde_json::Value>()
            .await
            .expect("/status is JSON")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while ok_nodes(
        status().await["executors"]
            .as_array()
            .map_or(&[][..], Vec::as_slice),
    ) != ["soak-executor"]
    {
        assert!(Instant::now() < deadline, "the executor never took work");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Sample the edge every five seconds, and make a call through it.
    let client = connect(&format!("http://{authority}/code/mcp")).await;
    let (mut samples, mut disconnected, mut failed_calls) = (0, Vec::new(), Vec::new());
    let end = Instant::now() + soak();
    while Instant::now() < end {
        let now = status().await;
        samples += 1;
        if now["membership"]["etcd"]["connected"] != true {
            disconnected.push(now["membership"].clone());
        }
        let result = call(&client, "execute", json!({"code": "return 6 * 7"})).await;
        if result.is_error == Some(true) {
            failed_calls.push(text(&result));
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    client.cancel().await.unwrap();

    assert!(samples >= soak().as_secs() / 6, "{samples} samples");
    assert!(
        disconnected.is_empty(),
        "etcd disconnected in {} of {samples} samples: {disconnected:?}",
        disconnected.len()
    );
    assert!(failed_calls.is_empty(), "{failed_calls:?}");
    for (who, log) in [("edge", &edge_log), ("executor", &executor_log)] {
        let errors = etcd_errors(log);
        assert!(
            errors.is_empty(),
            "the {who} lost etcd {} times: {errors:?}",
            errors.len()
        );
    }
    drop(etcd);
}
