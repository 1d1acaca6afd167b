//! A second process on a data directory another live process holds is told
//! the directory is in use, by which process, and to stop it or pick another
//! `--data`; never that its data is damaged or should be removed. The first
//! process keeps serving. Both for `quiver dev` and `quiver control-plane`.

use crate::support;

use std::process::Command;

use support::{ControlPlaneProcess, QuiverDev, connect, quiver_bin, tool_names};

/// Runs `quiver <args>` to completion; returns (success, stderr).
fn run_to_exit(args: &[&str]) -> (bool, String) {
    let output = Command::new(quiver_bin())
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run quiver");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_in_use_message(stderr: &str, holder: u32) {
    assert!(stderr.contains("raft.redb"), "names the file: {stderr}");
    assert!(stderr.contains("in use"), "says in use: {stderr}");
    assert!(
        stderr.contains(&format!("pid {holder}")),
        "names the holder: {stderr}"
    );
    assert!(
        stderr.contains("--data"),
        "suggests another --data: {stderr}"
    );
    for wrong in ["damaged", "remove", "restore"] {
        assert!(!stderr.contains(wrong), "`{wrong}` in: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_quiver_dev_on_one_data_directory_is_told_it_is_in_use() {
    let data = tempfile::tempdir().expect("temp dir");
    let data_arg = data.path().to_str().expect("utf-8 path");
    let mut first = QuiverDev::start(&["--data", data_arg]);

    eprintln!("--- a second dev on the same directory");
    let (ok, stderr) = run_to_exit(&[
        "dev",
        "--listen",
        "127.0.0.1:0",
        "--control-plane-listen",
        "127.0.0.1:0",
        "--data",
        data_arg,
    ]);
    assert!(!ok, "the second dev must not start: {stderr}");
    assert_in_use_message(&stderr, first.pid());

    eprintln!("--- the first one still serves");
    assert!(first.is_running());
    let client = connect(&first.mode_url("search")).await;
    assert_eq!(tool_names(&client).await, ["search_tools", "call_tool"]);
    client.cancel().await.expect("close");
}

#[test]
fn a_second_control_plane_node_on_one_data_directory_is_told_it_is_in_use() {
    let data = tempfile::tempdir().expect("temp dir");
    let first = ControlPlaneProcess::start(1, data.path(), &["--bootstrap"]);
    let holder = first.pid().expect("running");

    let (ok, stderr) = run_to_exit(&[
        "control-plane",
        "--node-id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--data",
        data.path().to_str().expect("utf-8 path"),
    ]);
    assert!(!ok, "the second node must not start: {stderr}");
    assert_in_use_message(&stderr, holder);
}
