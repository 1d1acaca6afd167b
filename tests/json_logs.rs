//! `QUIVER_LOG_FORMAT=json`: every line a role writes to stderr is one JSON
//! object (time, level, message); a bad value stops the start and names the
//! variable.

use crate::support;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Duration,
};

use serde_json::Value;

/// Starts a one-node control plane with `format`, waits for its startup
/// line, stops it, and returns what it wrote to stderr and its exit status.
fn control_plane_stderr(format: &str) -> (Vec<String>, bool) {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(support::quiver_bin())
        .args(["control-plane", "--bootstrap", "--node-id", "1"])
        .args(["--listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .env("RUST_LOG", "info")
        .env("QUIVER_LOG_FORMAT", format)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn quiver control-plane");
    let stderr = child.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    let started = stdout.read_line(&mut banner).unwrap_or(0) > 0;
    if started {
        // Ask for a graceful stop so the shutdown line is logged too.
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
    }
    let exited_cleanly = exit_within(&mut child, Duration::from_secs(20));
    (lines.join().unwrap(), started && exited_cleanly)
}

/// Whether `child` exited successfully within `limit` (killed otherwise).
fn exit_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_stderr_line_is_a_json_object_with_time_level_and_message() {
    let (lines, stopped_cleanly) = control_plane_stderr("json");
    assert!(
        stopped_cleanly,
        "the node did not start and stop: {lines:?}"
    );
    assert!(
        lines.len() >= 2,
        "expected the startup and shutdown lines at info: {lines:?}"
    );
    for line in &lines {
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            value["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        assert!(value["level"].as_str().is_some(), "{line}");
        assert!(value["message"].as_str().is_some(), "{line}");
    }
    assert!(
        lines.iter().any(|l| l.contains("shutting down")),
        "the shutdown line is logged: {lines:?}"
    );
}

#[test]
fn an_unknown_log_format_stops_the_start_and_names_the_variable() {
    let (lines, started) = control_plane_stderr("yaml");
    assert!(!started, "a bad QUIVER_LOG_FORMAT must stop the start");
    let all = lines.join("\n");
    assert!(
        all.contains("QUIVER_LOG_FORMAT") && all.contains("yaml"),
        "the error names the variable and the value: {all}"
    );
}
