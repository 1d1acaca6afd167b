//! `quiver ctl` against the one-node control plane inside `quiver dev`:
//! tenants, upstreams, `cluster verify` (green for dev and a synced executor,
//! naming an executor whose manifest differs), and state surviving a restart.

use crate::support;

use std::time::{Duration, Instant};

use support::{
    ExecutorProcess, QuiverDev, connect_watching, ctl, ctl_json, hooks_upstream_flags, quiver_bin,
    tool_names, write_file,
};

/// `cluster verify` until `done(success, output)` holds.
fn verify_until(endpoint: &str, done: impl Fn(bool, &str) -> bool) -> String {
    support::ctl_until(endpoint, &["cluster", "verify"], done)
}

#[tokio::test(flavor = "multi_thread")]
async fn ctl_manages_tenants_and_upstreams_of_quiver_dev_and_verify_names_a_diverging_node() {
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap().to_string();
    let dev = QuiverDev::start(&["--mode", "passthrough", "--data", &data_arg]);
    let cp = dev.control_plane.clone();
    assert!(
        !cp.is_empty(),
        "no control plane address in: {}",
        dev.banner
    );

    tracing::info!("--- cluster status: one node, leading");
    let status = ctl_json(&cp, &["cluster", "status"]);
    assert_eq!(status["leader"], 1);
    assert!(status["term"].as_u64().unwrap() >= 1);
    assert_eq!(status["members"][0]["role"], "leader");
    assert!(status["members"][0]["addr"].is_string());

    tracing::info!("--- tenants: create, list as JSON, refuse a duplicate with advice");
    let (ok, _, err) = ctl(&cp, &["tenant", "create", "acme", "--mode", "code"]);
    assert!(ok, "{err}");
    let tenants = ctl_json(&cp, &["tenant", "list"]);
    let list = tenants.as_array().expect("a JSON array");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], "acme");
    assert_eq!(list[0]["mode"], "code");
    let (ok, _, err) = ctl(&cp, &["tenant", "create", "acme"]);
    assert!(!ok);
    assert!(
        err.contains("already exists") && err.contains("tenant update"),
        "{err}"
    );
    let key = ctl_json(&cp, &["key", "issue", "acme"]);
    let secret = key["key"].as_str().unwrap();
    let shown = ctl_json(&cp, &["tenant", "show", "acme"]).to_string();
    assert!(!shown.contains(secret), "the key must be shown only once");

    tracing::info!("--- cluster verify is green for quiver dev");
    let out = verify_until(&cp, |ok, _| ok);
    assert!(out.contains("dev-"), "{out}");

    tracing::info!("--- an executor following the control plane agrees");
    let _synced =
        ExecutorProcess::start(&["--control-plane", &cp, "--node-name", "synced-executor"]);
    let out = verify_until(&cp, |ok, out| ok && out.contains("synced-executor"));
    assert!(out.contains("ok"), "{out}");

    tracing::info!("--- an executor serving its own, different catalogue is named");
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[[upstream]]\nid = \"weather\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n",
        quiver_bin()
    );
    let path = write_file(dir.path(), "rogue.toml", &config);
    let _rogue = ExecutorProcess::start(&[
        "--config",
        path.to_str().unwrap(),
        "--control-plane",
        &cp,
        "--node-name",
        "rogue-executor",
    ]);
    let out = verify_until(&cp, |ok, out| !ok && out.contains("rogue-executor"));
    assert!(
        out.contains("stub hashes disagree on: rogue-executor"),
        "{out}"
    );
    assert!(!out.contains("disagree on: synced-executor"), "{out}");

    tracing::info!("--- an upstream added with ctl reaches the edge's tool list");
    let (client, mut changed) = connect_watching(&dev.url).await;
    let before = tool_names(&client).await;
    assert!(!before.iter().any(|n| n.starts_with("extra__")));
    let mut add = vec!["upstream", "add", "extra"];
    let flags = hooks_upstream_flags("notes", &[]);
    add.extend(flags.iter().map(String::as_str));
    let (ok, _, err) = ctl(&cp, &add);
    assert!(ok, "{err}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::timeout(Duration::from_secs(30), changed.recv())
            .await
            .expect("tools/list_changed after adding an upstream");
        if tool_names(&client)
            .await
            .iter()
            .any(|n| n.starts_with("extra__"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "extra__ tools never appeared");
    }
    let upstreams = ctl_json(&cp, &["upstream", "list"]);
    assert!(
        upstreams
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["id"] == "extra")
    );
    let (ok, _, err) = ctl(&cp, &["upstream", "remove", "nope"]);
    assert!(!ok && err.contains("unknown upstream `nope`"), "{err}");

    tracing::info!("--- the upstream grows a tool: a drift event and a manifest diff record it");
    let before = ctl_json(&cp, &["manifest", "hash"])["version"]
        .as_u64()
        .unwrap();
    support::call(
        &client,
        "extra__quiver_test_add_tool",
        serde_json::json!({"name": "fresh"}),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !tool_names(&client)
        .await
        .iter()
        .any(|n| n == "extra__fresh")
    {
        tokio::time::timeout(Duration::from_secs(30), changed.recv())
            .await
            .expect("tools/list_changed after the upstream added a tool");
        assert!(Instant::now() < deadline, "extra__fresh never appeared");
    }
    let drift = ctl_json(&cp, &["upstream", "drift", "extra"]);
    assert!(
        drift["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["tool"] == "fresh" && e["message"].as_str().unwrap().contains("appeared")),
        "{drift}"
    );
    let after = ctl_json(&cp, &["manifest", "hash"])["version"]
        .as_u64()
        .unwrap();
    let diff = ctl_json(
        &cp,
        &["manifest", "diff", &before.to_string(), &after.to_string()],
    );
    assert_eq!(diff["added"], serde_json::json!(["extra/fresh"]), "{diff}");
    drop(client);

    tracing::info!("--- restart quiver dev on the same data directory: tenants survive");
    drop(dev);
    let dev = QuiverDev::start(&["--mode", "passthrough", "--data", &data_arg]);
    let tenants = ctl_json(&dev.control_plane, &["tenant", "list"]);
    assert_eq!(tenants[0]["id"], "acme");
    assert_eq!(tenants[0]["keys"].as_array().map(Vec::len), Some(1));
}

#[test]
fn ctl_says_what_to_do_when_the_cluster_is_unreachable() {
    // A port held (bound, not listening) for the whole test: connections are refused.
    let nobody = support::HeldPort::new();
    let (ok, _, err) = ctl(&nobody.addr.to_string(), &["tenant", "list"]);
    assert!(!ok);
    assert!(
        err.contains("cluster unreachable") && err.contains("--endpoints"),
        "{err}"
    );
}
