//! Graceful shutdown: `quiver dev` stopped with SIGTERM exits cleanly and
//! leaves no process behind: every stdio upstream (and whatever it started)
//! and every sandbox worker is gone, none orphaned to keep running.

#![cfg(target_os = "linux")]

use crate::support;

use std::time::{Duration, Instant};

use nix::{sys::signal::Signal, unistd::Pid};
use serde_json::{Value, json};
use support::{call, connect, quiver_bin, start_with_config, text};

fn stdio_upstream(id: &str, server: &str) -> String {
    format!(
        "[[upstream]]\nid = \"{id}\"\ntransport = \"stdio\"\ncommand = \"{bin}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"{server}\", \"--stdio\"]\n",
        bin = quiver_bin()
    )
}

/// A process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, PartialEq)]
struct Proc {
    pid: u32,
    parent: u32,
    /// One letter: R, S, D, Z (zombie: dead, waiting to be reaped), ...
    state: char,
    /// Start time in clock ticks since boot: tells a reused pid apart.
    started: u64,
    command: String,
}

fn read_proc(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default();
    Some(Proc {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        state: fields.first()?.chars().next()?,
        started: fields.get(19)?.parse().ok()?,
        command,
    })
}

/// Every living descendant of `root`.
fn descendants(root: u32) -> Vec<Proc> {
    let all: Vec<Proc> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(read_proc)
        .collect();
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for process in all.iter().filter(|p| p.parent == parent && p.state != 'Z') {
            parents.push(process.pid);
            found.push(process.clone());
        }
    }
    found
}

/// Whether `process` (the same one, not a reuse of its pid) still runs.
fn still_running(process: &Proc) -> bool {
    read_proc(process.pid).is_some_and(|now| now.started == process.started && now.state != 'Z')
}

/// Starts `quiver dev` with the `w` (weather) upstream and `notes_upstream`
/// (id `n`), calls a tool of each and runs a script, then SIGTERMs it. Checks
/// the clean exit and returns what it started that still runs 10 s later
/// (after killing those, so a failing run leaves nothing behind).
async fn stop_with_sigterm(notes_upstream: &str) -> Vec<Proc> {
    let config = format!("{}\n{notes_upstream}", stdio_upstream("w", "weather"));
    let (mut dev, _dir) = start_with_config(&config, &["--mode", "passthrough"]);

    tracing::info!("--- both upstreams answer, and code mode has run a script");
    let client = connect(&dev.url).await;
    for (tool, args) in [
        ("w__get_forecast", json!({"city": "Oslo"})),
        ("n__create_note", json!({"title": "t", "text": "x"})),
    ] {
        let result = call(&client, tool, args).await;
        let answer: Value = serde_json::from_str(&text(&result))
            .unwrap_or_else(|e| panic!("{tool}: not the mock's echo ({e}): {}", text(&result)));
        assert_eq!(answer["tool"], tool.split("__").nth(1).unwrap(), "{answer}");
    }
    client.cancel().await.expect("close");
    let code = connect(&dev.mode_url("code")).await;
    let ran = call(&code, "execute", json!({"code": "return 6 * 7;"})).await;
    assert_eq!(
        ran.structured_content.as_ref().map(|c| c["result"].clone()),
        Some(json!(42)),
        "{}",
        text(&ran)
    );
    code.cancel().await.expect("close");

    let children = descendants(dev.pid());
    for wanted in ["--server weather", "--server notes", "__worker"] {
        assert!(
            children.iter().any(|p| p.command.contains(wanted)),
            "no `{wanted}` process among: {children:#?}"
        );
    }

    tracing::info!("--- SIGTERM: a clean exit");
    nix::sys::signal::kill(Pid::from_raw(dev.pid() as i32), Signal::SIGTERM).expect("SIGTERM");
    let status = dev
        .wait_exit(Duration::from_secs(30))
        .expect("quiver dev exits after SIGTERM");
    assert!(status.success(), "a graceful shutdown exits 0: {status:?}");

    tracing::info!("--- nothing it started keeps running");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // What still runs, and whatever that has started since.
        let mut left: Vec<Proc> = children
            .iter()
            .filter(|p| still_running(p))
            .cloned()
            .collect();
        let later: Vec<Proc> = left.iter().flat_map(|p| descendants(p.pid)).collect();
        left.extend(later);
        if left.is_empty() || Instant::now() >= deadline {
            for process in &left {
                let _ = nix::sys::signal::kill(Pid::from_raw(process.pid as i32), Signal::SIGKILL);
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_quiver_dev_its_upstreams_and_its_workers() {
    let left = stop_with_sigterm(&stdio_upstream("n", "notes")).await;
    assert!(
        left.is_empty(),
        "still running after quiver dev exited: {left:#?}"
    );
}

/// A stdio upstream started through a wrapper (as `npx`/`uvx` do) that does
/// not end when its stdin closes: only an active stop ends it and its child.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_also_stops_an_upstream_that_ignores_end_of_input() {
    let wrapped = format!(
        "[[upstream]]\nid = \"n\"\ntransport = \"stdio\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"{bin} mock-upstream --demo --server notes --stdio; sleep 60\"]\n",
        bin = quiver_bin()
    );
    let left = stop_with_sigterm(&wrapped).await;
    assert!(
        left.is_empty(),
        "still running after quiver dev exited: {left:#?}"
    );
}
