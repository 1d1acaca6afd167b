//! `quiver ctl` from tests: run it, read its JSON, make tenants and upstreams
//! with it, wait for what it reports.

use std::{process::Command, time::Duration};

use serde_json::Value;

use super::quiver_bin;

/// Runs `quiver ctl <args>`; returns (success, stdout, stderr).
pub fn ctl(endpoints: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(quiver_bin())
        .args(["ctl", "--endpoints", endpoints])
        .args(args)
        .output()
        .expect("run quiver ctl");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `quiver ctl <args>` until `done(success, stdout + stderr)` holds (what
/// it waits for arrives with a periodic report), returning that output; fails
/// the test after 30 s.
pub fn ctl_until(endpoints: &str, args: &[&str], done: impl Fn(bool, &str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, stdout, stderr) = ctl(endpoints, args);
        let all = format!("{stdout}{stderr}");
        if done(ok, &all) {
            return all;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "quiver ctl {args:?} never got there: {all}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `ctl upstream add` flags that run one server of the demo catalogue as a
/// stdio demo upstream (`quiver mock-upstream`; `extra` go to it).
pub fn demo_upstream_flags(server: &str, extra: &[&str]) -> Vec<String> {
    upstream_flags(quiver_bin(), server, extra)
}

/// The same through the test kit's mock upstream, with its test hooks
/// (`quiver-test-kit mock-upstream`; `extra` go to it, e.g. `--stateless`).
pub fn hooks_upstream_flags(server: &str, extra: &[&str]) -> Vec<String> {
    upstream_flags(super::test_kit_bin(), server, extra)
}

/// `--command bin --arg mock-upstream --arg --demo …` for one demo server.
fn upstream_flags(bin: &str, server: &str, extra: &[&str]) -> Vec<String> {
    let mut flags = vec!["--command".to_string(), bin.to_string()];
    for arg in ["mock-upstream", "--demo", "--server", server]
        .iter()
        .chain(extra)
        .chain(&["--stdio"])
    {
        flags.push("--arg".into());
        flags.push((*arg).to_string());
    }
    flags
}

/// `ctl upstream add <id>` of the demo upstream `server` (`extra` go to
/// `mock-upstream`), repeated while the cluster cannot take it yet (a
/// cluster just started or restarted may still be electing; an attempt that
/// committed but lost its answer leaves it existing).
pub fn add_demo_upstream(endpoints: &str, id: &str, server: &str, extra: &[&str]) {
    add_upstream(endpoints, id, &demo_upstream_flags(server, extra));
}

/// [`add_demo_upstream`] through the test kit's mock, with its test hooks.
pub fn add_hooks_upstream(endpoints: &str, id: &str, server: &str, extra: &[&str]) {
    add_upstream(endpoints, id, &hooks_upstream_flags(server, extra));
}

/// `ctl upstream add <id> <flags>`, repeated as [`add_demo_upstream`] says.
fn add_upstream(endpoints: &str, id: &str, flags: &[String]) {
    let mut args = vec!["upstream", "add", id];
    args.extend(flags.iter().map(String::as_str));
    ctl_until(endpoints, &args, |ok, out| {
        ok || out.contains(&format!("upstream `{id}` already exists"))
    });
}

/// `quiver ctl -o json <args>`, parsed; panics with stderr on failure.
pub fn ctl_json(endpoints: &str, args: &[&str]) -> Value {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let (ok, stdout, stderr) = ctl(endpoints, &all);
    assert!(ok, "quiver ctl {args:?} failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// A tenant created with `quiver ctl tenant create ID --mode MODE`, and a
/// key issued for it.
pub fn tenant_with_key(endpoints: &str, id: &str, mode: &str) -> String {
    tenant_with_flags(endpoints, id, &["--mode", mode])
}

/// `quiver ctl tenant create <id> <flags>`, then a key of it, returned.
pub fn tenant_with_flags(endpoints: &str, id: &str, flags: &[&str]) -> String {
    let mut args = vec!["tenant", "create", id];
    args.extend_from_slice(flags);
    let (ok, _, err) = ctl(endpoints, &args);
    assert!(ok, "tenant create {id}: {err}");
    ctl_json(endpoints, &["key", "issue", id])["key"]
        .as_str()
        .expect("a key")
        .to_string()
}

/// Waits (30 s at most) until `quiver ctl upstream list` shows upstream
/// `id` with `tools` tools.
pub fn until_upstream_lists(endpoints: &str, id: &str, tools: u64) {
    ctl_until(endpoints, &["-o", "json", "upstream", "list"], |_, out| {
        let list = serde_json::from_str::<Value>(out).unwrap_or_default();
        let mut upstreams = list.as_array().into_iter().flatten();
        upstreams.any(|u| u["id"] == id && u["tools"] == tools)
    });
}
