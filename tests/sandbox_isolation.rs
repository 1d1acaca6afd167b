//! The OS layers under the JavaScript sandbox, checked on real `quiver
//! __worker` processes from outside: the seccomp filter kills a worker that
//! makes a forbidden call (the hidden `--test-forbidden-syscall` flag makes one
//! right after the lock-down, as a compromised engine would), file opens fail,
//! and a pooled worker runs with `no_new_privs`, seccomp, its resource limits
//! and namespaces of its own.
#![cfg(target_os = "linux")]

use crate::support;

use std::{
    os::unix::process::ExitStatusExt,
    process::{Command, Stdio},
    sync::Arc,
};

use futures::future::BoxFuture;
use quiver_executor::{
    ipc::HostError,
    pool::{PoolConfig, WorkerCommand, WorkerPool},
    script::{ScriptContext, StashOp},
    worker::isolation::{PROBE_REFUSED_EXIT, PROBE_SUCCEEDED_EXIT},
};
use serde_json::Value;

/// A script host with no tools: every request is refused.
struct NoTools;

impl ScriptContext for NoTools {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        server.is_none().then(Vec::new)
    }
    fn call_tool(&self, _: String, _: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Err("no tools".into()) })
    }
    fn search(&self, _: String, _: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Err("no tools".into()) })
    }
    fn describe(&self, _: String) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Err("no tools".into()) })
    }
    fn stash(&self, _: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Err("no stash".into()) })
    }
}

/// Starts a worker that attempts `probe` once locked down; returns how it ended.
fn probe(probe: &str) -> std::process::ExitStatus {
    let mut child = Command::new(support::quiver_bin())
        .args(["__worker", "--test-forbidden-syscall", probe])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a worker");
    // The worker exits (or is killed) by itself; its stdin stays open
    // meanwhile (`wait` would close it, and the worker would just stop).
    let stdin = child.stdin.take();
    let status = child.wait().expect("wait for the worker");
    drop(stdin);
    status
}

#[test]
fn forbidden_calls_after_the_lock_down_kill_the_worker() {
    const SIGSYS: i32 = 31;
    for call in ["socket", "execve", "fork"] {
        let status = probe(call);
        assert_eq!(
            status.signal(),
            Some(SIGSYS),
            "{call}: the worker was not killed by the seccomp filter ({status:?}; exit {PROBE_SUCCEEDED_EXIT} means the call went through)"
        );
    }
}

#[test]
fn opening_a_file_after_the_lock_down_is_refused() {
    let status = probe("open");
    assert_eq!(
        status.code(),
        Some(PROBE_REFUSED_EXIT),
        "open was not refused with EACCES: {status:?}"
    );
}

fn proc_field(pid: u32, file: &str, name: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_else(|e| panic!("read /proc/{pid}/{file}: {e}"));
    text.lines()
        .find(|line| line.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/{file}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn pooled_workers_run_locked_down_in_namespaces_of_their_own() {
    let pool = WorkerPool::start(PoolConfig {
        min_workers: 1,
        ..PoolConfig::new(WorkerCommand {
            program: support::quiver_bin().into(),
            args: vec!["__worker".into()],
        })
    });
    pool.warm_up().await.expect("a warm worker");
    let pid = pool.idle_pids()[0];

    tracing::info!("--- seccomp filter and no_new_privs");
    assert_eq!(proc_field(pid, "status", "Seccomp:"), "Seccomp:\t2");
    assert_eq!(proc_field(pid, "status", "NoNewPrivs:"), "NoNewPrivs:\t1");

    tracing::info!("--- resource limits");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let soft = |name: &str| -> String {
        limits
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line[name.len()..].split_whitespace().next())
            .unwrap_or_else(|| panic!("no {name} limit"))
            .to_string()
    };
    assert_eq!(soft("Max core file size"), "0");
    assert_eq!(soft("Max file size"), "0");
    assert_eq!(soft("Max open files"), "64");
    assert_ne!(soft("Max data size"), "unlimited");
    assert_ne!(soft("Max cpu time"), "unlimited");

    tracing::info!("--- namespaces of its own");
    for ns in ["net", "user", "ipc", "uts", "mnt"] {
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).expect("their ns");
        let ours = std::fs::read_link(format!("/proc/self/ns/{ns}")).expect("our ns");
        assert_ne!(theirs, ours, "the worker shares the {ns} namespace");
    }

    tracing::info!("--- and it still runs scripts, with local time");
    let outcome = pool
        .run(
            "return [1 + 1, typeof new Date().getTimezoneOffset()];",
            Default::default(),
            Arc::new(NoTools),
        )
        .await
        .expect("the locked-down worker runs a script");
    assert_eq!(outcome.result, Some(serde_json::json!([2, "number"])));
    pool.shutdown();
}
