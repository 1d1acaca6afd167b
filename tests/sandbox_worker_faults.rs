//! Worker processes that fail mid-script, through the real pool: one killed
//! with `kill -9` while its script waits on a tool call, and one frozen
//! (SIGSTOP) so that neither its script nor its in-worker watchdog can ever
//! report, which only the host's own deadline (wall limit plus grace) stops.
//! Either way the caller learns what happened and the next script runs on a
//! new worker.

#![cfg(target_os = "linux")]

use crate::support;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use quiver_contract::{Limits, ScriptErrorKind, ScriptOutcome};
use quiver_executor::{
    ipc::HostError,
    pool::{PoolConfig, PoolError, PoolStats, WorkerCommand, WorkerFault, WorkerPool},
    script::{ScriptContext, StashOp},
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A script that waits on a tool call the host never answers.
const WAITS_ON_THE_HOST: &str = "await tools.demo.wait({}); return 'unreachable';";

/// A host context with one tool, `demo.wait`, that reports each call and never
/// answers it: once a call is reported, its script is surely running.
struct UnansweredContext {
    called: mpsc::UnboundedSender<()>,
}

impl UnansweredContext {
    fn new() -> (Arc<UnansweredContext>, mpsc::UnboundedReceiver<()>) {
        let (called, calls) = mpsc::unbounded_channel();
        (Arc::new(UnansweredContext { called }), calls)
    }
}

impl ScriptContext for UnansweredContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("demo".to_string(), vec!["wait".to_string()])]),
            server,
        )
    }

    fn call_tool(&self, _name: String, _args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        let _ = self.called.send(());
        Box::pin(std::future::pending())
    }

    fn search(&self, _query: String, _limit: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(json!([])) })
    }

    fn describe(&self, name: String) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move { Err(format!("unknown tool `{name}`").into()) })
    }

    fn stash(&self, _op: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(Value::Null) })
    }
}

/// One warm worker, one execution at a time.
fn one_worker_pool() -> Arc<WorkerPool> {
    let mut config = PoolConfig::new(WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_quiver")),
        args: vec!["__worker".into()],
    });
    config.min_workers = 1;
    config.max_workers = 1;
    WorkerPool::start(config)
}

fn wall(ms: u64) -> Limits {
    Limits {
        wall_ms: ms,
        ..Limits::default()
    }
}

/// `(state, parent pid)` of process `pid` from `/proc/<pid>/stat`, if it exists.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: read after it.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// The live `quiver __worker` children of this test process (nextest runs
/// every test in a process of its own, so they all belong to its pool).
fn worker_children() -> Vec<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(
            |pid| matches!(proc_state(*pid), Some((state, parent)) if parent == me && state != 'Z'),
        )
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).any(|arg| arg == b"__worker"))
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The worker running the script: the one live worker child not in the idle
/// list. Polled, because for a moment there can be others: a worker the
/// health check is pinging is in neither list, and one just killed is not
/// yet a zombie.
async fn busy_worker(pool: &WorkerPool) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let idle = pool.idle_pids();
        let others: Vec<u32> = worker_children()
            .into_iter()
            .filter(|pid| !idle.contains(pid))
            .collect();
        if let [busy] = others[..] {
            return busy;
        }
        assert!(
            Instant::now() < deadline,
            "not one busy worker within 30 s: {others:?} besides the idle {idle:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits for the script's first tool call: from then on it is running.
async fn script_is_running(calls: &mut mpsc::UnboundedReceiver<()>) {
    let reported = tokio::time::timeout(Duration::from_secs(30), calls.recv()).await;
    assert!(
        matches!(reported, Ok(Some(()))),
        "the script never reached its tool call"
    );
}

/// After a fault: `pid` is gone, it was retired (one more than `before`), a
/// warm worker other than it is ready and runs the next script.
async fn replaced_after_fault(pool: &WorkerPool, pid: u32, before: PoolStats) {
    support::wait_for(
        "the failed worker is gone",
        || !matches!(proc_state(pid), Some((state, _)) if state != 'Z'),
    )
    .await;
    support::wait_for("a warm worker in its place", || {
        let idle = pool.idle_pids();
        idle.len() == 1 && !idle.contains(&pid)
    })
    .await;
    // Counted as retired. (How many were started depends on the machine: when
    // the health check held the idle worker as the script began, the pool
    // started a second one, and that one is warm now.)
    let stats = pool.stats();
    assert!(stats.retired > before.retired, "{before:?} -> {stats:?}");
    let (context, _calls) = UnansweredContext::new();
    let next = pool
        .run("return 'next';", wall(10_000), context)
        .await
        .expect("the next script runs");
    assert!(next.error.is_none(), "{:?}", next.error);
    assert_eq!(next.result, Some(json!("next")));
    assert!(
        !pool.idle_pids().contains(&pid),
        "the next script ran on a new worker"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_script_is_reported_as_died_and_replaced() {
    let pool = one_worker_pool();
    pool.warm_up().await.expect("a warm worker");

    tracing::info!("--- a script waits on a tool call; its worker is the busy one");
    let (context, mut calls) = UnansweredContext::new();
    // No deadline comes near: only the kill ends this script.
    let running = tokio::spawn({
        let pool = pool.clone();
        async move { pool.run(WAITS_ON_THE_HOST, wall(600_000), context).await }
    });
    script_is_running(&mut calls).await;
    let pid = busy_worker(&pool).await;
    let before = pool.stats();

    tracing::info!("--- kill -9 the worker mid-script");
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).expect("kill -9 the worker");
    let result = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the caller is answered once its worker died")
        .expect("the run task");
    match result {
        Err(error @ PoolError::Worker(WorkerFault::Died)) => {
            assert_eq!(error.to_string(), "the worker process died");
        }
        other => panic!("expected the worker's death, got {other:?}"),
    }

    tracing::info!("--- the dead worker was retired and a new one runs the next script");
    replaced_after_fault(&pool, pid, before).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_worker_is_killed_by_the_host_at_its_deadline_and_replaced() {
    const WALL_MS: u64 = 2_000;
    let pool = one_worker_pool();
    pool.warm_up().await.expect("a warm worker");

    // The worker is frozen with SIGSTOP while its script waits on the host.
    // Frozen before its own deadline (wall limit after it received the
    // script, so after `started`), it can never report: neither the script
    // nor the in-worker watchdog runs again, and only the host's deadline can
    // end the execution. A freeze that lands later (the machine stalled for
    // the whole wall limit) proves nothing, and the attempt is made again.
    for attempt in 1..=5 {
        tracing::info!("--- attempt {attempt}: a script waits on a tool call");
        let (context, mut calls) = UnansweredContext::new();
        let started = Instant::now();
        let running = tokio::spawn({
            let pool = pool.clone();
            async move { pool.run(WAITS_ON_THE_HOST, wall(WALL_MS), context).await }
        });
        script_is_running(&mut calls).await;
        let pid = busy_worker(&pool).await;
        let before = pool.stats();

        tracing::info!("--- freeze the worker (SIGSTOP)");
        kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).expect("stop the worker");
        support::wait_for("the worker is stopped", || {
            matches!(proc_state(pid), Some(('T', _)))
        })
        .await;
        let frozen_in_time = started.elapsed() < Duration::from_millis(WALL_MS);

        let outcome: ScriptOutcome = tokio::time::timeout(Duration::from_secs(30), running)
            .await
            .expect("the host ends the execution at its deadline")
            .expect("the run task")
            .expect("an overrun is a timeout outcome, not a pool error");
        if !frozen_in_time {
            tracing::warn!("the worker was frozen only after its own deadline; again");
            support::wait_for("a new warm worker", || {
                let idle = pool.idle_pids();
                idle.len() == 1 && !idle.contains(&pid)
            })
            .await;
            continue;
        }
        let error = outcome.error.expect("the script was stopped");
        assert_eq!(error.kind, ScriptErrorKind::Timeout, "{error:?}");
        // The host's words (`WorkerFault::Overran`), not the worker's own
        // "ran past its time limit": the worker never reported.
        assert_eq!(
            error.message,
            format!("the script ran longer than {WALL_MS} ms and was stopped"),
        );
        assert_eq!(outcome.result, None);

        tracing::info!("--- the frozen worker was killed and replaced");
        replaced_after_fault(&pool, pid, before).await;
        return;
    }
    panic!("the worker could not be frozen within its wall limit in five attempts");
}
