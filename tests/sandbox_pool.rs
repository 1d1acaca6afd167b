//! The executor's worker pool with real `quiver __worker` processes: isolation
//! between executions, recycling, limits (time, memory, output, code size, tool
//! calls, parallelism), the busy queue, and health after every failure.

use crate::support;

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::future::BoxFuture;
use quiver_contract::{ExecuteError, Limits, ScriptOutcome};
use quiver_executor::{
    ipc::HostError,
    pool::{Owner, PoolConfig, PoolError, WorkerCommand, WorkerPool},
    script::{ScriptContext, ScriptRunner, StashOp},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A host context with one tool, `demo.echo`, that tracks how many calls run at once.
#[derive(Default)]
struct CountingContext {
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl ScriptContext for CountingContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("demo".to_string(), vec!["echo".to_string()])]),
            server,
        )
    }

    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(json!({"name": name, "args": args}))
        })
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

fn config(min: usize, max: usize) -> PoolConfig {
    let mut config = PoolConfig::new(WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_quiver")),
        args: vec!["__worker".into()],
    });
    config.min_workers = min;
    config.max_workers = max;
    config
}

fn limits() -> Limits {
    Limits {
        wall_ms: 2_000,
        ..Limits::default()
    }
}

async fn run(pool: &WorkerPool, code: &str) -> ScriptOutcome {
    pool.run(code, limits(), Arc::new(CountingContext::default()))
        .await
        .expect("the pool ran the script")
}

fn ok_value(outcome: &ScriptOutcome) -> Value {
    assert!(
        outcome.error.is_none(),
        "unexpected error: {:?}",
        outcome.error
    );
    outcome.result.clone().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_a_script_leaves_behind_reaches_the_next_one_on_the_same_worker() {
    let pool = WorkerPool::start(config(1, 1));
    pool.warm_up().await.unwrap();
    let first = run(
        &pool,
        "try { globalThis.leak = 42; } catch (e) {} try { Object.prototype.polluted = 1; } catch (e) {} try { Array.prototype.push = null; } catch (e) {} try { tools.demo.echo = null; } catch (e) {} return 1;",
    )
    .await;
    assert_eq!(ok_value(&first), json!(1));
    let second = run(
        &pool,
        "const a = []; a.push(1); return [typeof leak, ({}).polluted === undefined, a.length, typeof tools.demo.echo];",
    )
    .await;
    assert_eq!(ok_value(&second), json!(["undefined", true, 1, "function"]));
    assert_eq!(
        pool.stats().spawned,
        1,
        "both ran on the same worker process"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn workers_are_recycled_after_max_uses() {
    let mut config = config(1, 1);
    config.max_uses = 3;
    config.max_uses_forking = 3;
    let pool = WorkerPool::start(config);
    pool.warm_up().await.unwrap();
    for _ in 0..7 {
        assert_eq!(ok_value(&run(&pool, "return 1;").await), json!(1));
    }
    let stats = pool.stats();
    assert!(stats.retired >= 2, "{stats:?}");
    assert!(stats.spawned >= 3, "{stats:?}");
    assert!(
        stats.idle + stats.running <= 1,
        "never more workers than max_workers: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_tool_calls_are_capped_and_all_complete() {
    let pool = WorkerPool::start(config(1, 2));
    let context = Arc::new(CountingContext::default());
    let script = "const calls = []; for (let i = 0; i < 20; i++) calls.push(tools.demo.echo({ i })); const r = await Promise.all(calls); return r.length;";
    let outcome = pool.run(script, limits(), context.clone()).await.unwrap();
    assert_eq!(ok_value(&outcome), json!(20));
    assert_eq!(context.calls.load(Ordering::SeqCst), 20);
    let max = context.max_in_flight.load(Ordering::SeqCst);
    assert!(
        max > 1 && max <= 8,
        "at most 8 calls in flight, and they did overlap: {max}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tool_call_limit_stops_runaway_scripts() {
    let pool = WorkerPool::start(config(1, 1));
    let context = Arc::new(CountingContext::default());
    let script =
        "for (let i = 0; i < 100; i++) { await tools.call('demo__echo', {}); } return 'never';";
    let outcome = pool.run(script, limits(), context.clone()).await.unwrap();
    let error = outcome.error.expect("the script is stopped at the limit");
    assert_eq!(error.kind, "tool_calls", "{error:?}");
    assert!(error.message.contains("50"), "{error:?}");
    assert_eq!(
        context.calls.load(Ordering::SeqCst),
        50,
        "no call beyond the limit reached the host"
    );
    assert_eq!(ok_value(&run(&pool, "return 'next';").await), json!("next"));
}

#[tokio::test(flavor = "multi_thread")]
async fn time_memory_and_output_limits_hold_and_the_pool_stays_healthy() {
    let pool = WorkerPool::start(config(1, 1));

    let looping = run(&pool, "while (true) {}").await;
    assert_eq!(
        looping.error.as_ref().map(|e| e.kind.as_str()),
        Some("timeout"),
        "{looping:?}"
    );
    assert_eq!(
        ok_value(&run(&pool, "return 'after timeout';").await),
        json!("after timeout")
    );

    let hog = run(
        &pool,
        "const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);",
    )
    .await;
    let kind = hog
        .error
        .as_ref()
        .map(|e| e.kind.as_str())
        .unwrap_or_default();
    assert_eq!(kind, "memory", "{hog:?}");
    assert_eq!(
        ok_value(&run(&pool, "return 'after memory';").await),
        json!("after memory")
    );

    let big = run(&pool, "return 'y'.repeat(3 * 1024 * 1024);").await;
    assert!(big.truncated, "{:?}", big.error);
    let shown = serde_json::to_string(&big.result).unwrap();
    assert!(
        shown.len() < 2 * 1024 * 1024,
        "the result was cut to the limit"
    );

    let noisy = run(
        &pool,
        "for (let i = 0; i < 100000; i++) console.log('line ' + i); return 1;",
    )
    .await;
    let logged: usize = noisy.logs.iter().map(String::len).sum();
    assert!(logged <= 70 * 1024, "console output is bounded: {logged}");
    assert_eq!(
        ok_value(&run(&pool, "return 'still fine';").await),
        json!("still fine")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_code_is_rejected_before_any_worker_sees_it() {
    let pool = WorkerPool::start(config(0, 1));
    let runner = ScriptRunner::new(pool.clone(), Limits::default());
    let code = format!("return '{}';", "z".repeat(70 * 1024));
    match runner
        .execute(
            &Owner::new("tenant", "session"),
            &code,
            Arc::new(CountingContext::default()),
            CancellationToken::new(),
        )
        .await
    {
        Err(ExecuteError::Rejected(errors)) => assert!(
            errors.to_string().contains("too large") || errors.errors[0].rule == "too-large",
            "{errors}"
        ),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(pool.stats().spawned, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_queue_answers_busy_instead_of_hanging() {
    let mut config = config(1, 1);
    config.max_queue = 1;
    config.queue_timeout = Duration::from_secs(30);
    let pool = WorkerPool::start(config);
    pool.warm_up().await.unwrap();
    let slow = "const end = Date.now() + 1500; while (Date.now() < end) {} return 'slow';";

    let first = tokio::spawn({
        let pool = pool.clone();
        async move { run(&pool, slow).await }
    });
    support::wait_for("a worker running", || pool.stats().running == 1).await;
    let second = tokio::spawn({
        let pool = pool.clone();
        async move { run(&pool, "return 'queued';").await }
    });
    support::wait_for("a caller waiting for a worker", || {
        pool.stats().waiting == 1
    })
    .await;
    let third = pool
        .run(
            "return 'third';",
            limits(),
            Arc::new(CountingContext::default()),
        )
        .await;
    assert!(matches!(third, Err(PoolError::Busy { .. })), "{third:?}");
    assert!(third.unwrap_err().to_string().contains("busy"));
    assert_eq!(ok_value(&first.await.unwrap()), json!("slow"));
    assert_eq!(ok_value(&second.await.unwrap()), json!("queued"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retired_worker_is_replaced_before_the_next_caller_needs_one() {
    // Maintenance otherwise runs every 5 s (a quarter of a 20 s idle timeout);
    // the replacement must not wait for it, nor for the next caller.
    let mut config = config(1, 1);
    config.max_uses = 1;
    config.max_uses_forking = 1;
    config.idle_timeout = Duration::from_secs(20);
    let pool = WorkerPool::start(config);
    pool.warm_up().await.unwrap();
    let first = pool.idle_pids();
    assert_eq!(ok_value(&run(&pool, "return 1;").await), json!(1));
    // The worker reached `max_uses` and was retired; a new one must be warm
    // before maintenance would have come round (5 s after the pool started),
    // with no caller.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(4);
    loop {
        let idle = pool.idle_pids();
        if pool.stats().retired == 1 && idle.len() == 1 && idle != first {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no replacement within 4 s: {:?}",
            pool.stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(pool.stats().spawned, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_workers_above_the_minimum_are_reaped() {
    let mut config = config(0, 2);
    config.idle_timeout = Duration::from_millis(200);
    let pool = WorkerPool::start(config);
    assert_eq!(ok_value(&run(&pool, "return 1;").await), json!(1));
    // The worker went back to idle; the reaper may already have taken it (the
    // test can be descheduled for longer than the idle timeout), but it was
    // never dropped any other way.
    let after_run = pool.stats();
    assert_eq!(
        (after_run.spawned, after_run.idle + after_run.retired),
        (1, 1),
        "{after_run:?}"
    );
    support::wait_for("no idle worker", || pool.stats().idle == 0).await;
    let reaped = pool.stats();
    assert_eq!((reaped.retired, reaped.spawned), (1, 1), "{reaped:?}");
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn workers_start_with_no_environment_and_no_inherited_files() {
    // A file this process holds open (and a secret in its environment) must not reach workers.
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("credentials.txt");
    std::fs::write(&secret_file, "token").unwrap();
    let _held = std::fs::File::open(&secret_file).unwrap();
    // SAFETY: set before any worker starts; tests in this file read no environment.
    unsafe { std::env::set_var("QUIVER_TEST_SECRET", "s3cr3t") };

    let pool = WorkerPool::start(config(1, 1));
    pool.warm_up().await.unwrap();
    let pid = pool.idle_pids()[0];
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    // Nothing of ours: only the switch that keeps the engine's bytecode cache
    // (and so every script) off the disk.
    assert_eq!(
        String::from_utf8_lossy(&environ),
        "V82JSC_NO_BC_CACHE=1\0",
        "worker environment"
    );
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let target = std::fs::read_link(entry.unwrap().path()).unwrap_or_default();
        assert_ne!(target, secret_file, "the worker inherited an open file");
    }
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd, PathBuf::from("/"));
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_idle_worker_is_found_by_the_health_check_and_replaced() {
    let mut config = config(1, 1);
    config.idle_timeout = Duration::from_millis(400);
    let pool = WorkerPool::start(config);
    pool.warm_up().await.unwrap();
    let pid = pool.idle_pids()[0];
    // Kill the worker behind the pool's back.
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    support::wait_for("the retired worker replaced by another", || {
        pool.stats().retired == 1 && pool.idle_pids().iter().any(|p| *p != pid)
    })
    .await;
    assert_eq!(
        ok_value(&run(&pool, "return 'replaced';").await),
        json!("replaced")
    );
}

/// A context whose one tool says when it is first called.
#[derive(Default)]
struct SignallingContext {
    called: tokio::sync::Notify,
    calls: AtomicUsize,
}

impl ScriptContext for SignallingContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("demo".to_string(), vec!["echo".to_string()])]),
            server,
        )
    }

    fn call_tool(&self, _name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.called.notify_one();
            Ok(args)
        })
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

#[tokio::test(flavor = "multi_thread")]
async fn timers_pending_promises_and_random_state_end_with_their_execution() {
    let pool = WorkerPool::start(config(1, 1));
    pool.warm_up().await.unwrap();
    // Leaves a timer that would call a tool through whatever execution is
    // current when it fires, and a promise that never settles.
    let first_context = Arc::new(SignallingContext::default());
    let first = pool
        .run(
            "setTimeout(() => tools.demo.echo({ late: true }), 200); new Promise(() => {}); return [Math.random(), Math.random(), Math.random()];",
            limits(),
            first_context.clone(),
        )
        .await
        .unwrap();
    let first_draws = ok_value(&first);
    // The second execution on the same worker outlasts that timer.
    let second_context = Arc::new(SignallingContext::default());
    let second = pool
        .run(
            "await new Promise((resolve) => setTimeout(resolve, 500)); return [Math.random(), Math.random(), Math.random()];",
            limits(),
            second_context.clone(),
        )
        .await
        .unwrap();
    let second_draws = ok_value(&second);
    assert_eq!(pool.stats().spawned, 1, "both ran on the same worker");
    assert_eq!(
        second_context.calls.load(Ordering::SeqCst),
        0,
        "the first script's timer ran inside the second execution"
    );
    assert_eq!(
        first_context.calls.load(Ordering::SeqCst),
        0,
        "the first script's timer outlived its execution"
    );
    assert_ne!(
        first_draws, second_draws,
        "two executions drew the same Math.random sequence"
    );
    for draw in second_draws.as_array().unwrap() {
        let x = draw.as_f64().unwrap();
        assert!((0.0..1.0).contains(&x), "{x}");
    }
}

/// Processes whose parent is `parent`, from `/proc`.
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // pid (comm) state ppid ...: comm may hold spaces.
                    let after = &stat[stat.rfind(')')? + 2..];
                    after.split(' ').nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_script_process_killed_mid_run_costs_that_execution_only() {
    let pool = WorkerPool::start(config(1, 1));
    pool.warm_up().await.unwrap();
    let worker = pool.idle_pids()[0];
    let context = Arc::new(SignallingContext::default());
    let running = {
        let pool = pool.clone();
        let context = context.clone();
        tokio::spawn(async move {
            pool.run(
                "await tools.demo.echo({}); await new Promise((resolve) => setTimeout(resolve, 1500)); return 'finished';",
                limits(),
                context,
            )
            .await
        })
    };
    // The script is running once its tool call arrives: its process is the
    // worker's child.
    context.called.notified().await;
    let children = children_of(worker);
    assert_eq!(
        children.len(),
        1,
        "one process runs the script: {children:?}"
    );
    let status = std::process::Command::new("kill")
        .args(["-9", &children[0].to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let outcome = running.await.unwrap().expect("the worker reported");
    let error = outcome.error.expect("the killed script has no result");
    assert_eq!(error.kind, "internal", "{error:?}");
    assert!(error.message.contains("process"), "{error:?}");
    assert_eq!(ok_value(&run(&pool, "return 'next';").await), json!("next"));
    assert_eq!(pool.stats().spawned, 1, "the worker itself went on serving");
    assert_eq!(pool.idle_pids(), vec![worker]);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_script_process_killed_before_its_job_costs_nothing() {
    let pool = WorkerPool::start(config(1, 1));
    pool.warm_up().await.unwrap();
    let worker = pool.idle_pids()[0];
    // An idle worker keeps one process forked ahead, waiting for the next
    // execution: the first one's runs this script, and the worker forks
    // another while idle again.
    support::wait_for("the worker's one child", || children_of(worker).len() == 1).await;
    let first = children_of(worker)[0];
    assert_eq!(ok_value(&run(&pool, "return 1;").await), json!(1));
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .is_ok_and(|status| !status.contains("State:\tZ"))
    };
    support::wait_for("a new live child in the first one's place", || {
        children_of(worker).iter().any(|&c| c != first && alive(c))
    })
    .await;
    let spare = children_of(worker)
        .into_iter()
        .find(|&c| c != first && alive(c))
        .expect("the process forked ahead");
    let status = std::process::Command::new("kill")
        .args(["-9", &spare.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Once it is dead (reaped, or a zombie whose other threads have gone
    // too: the waiting process already runs its I/O threads, and its pipes
    // close with the last of them), the next execution finds it so, forks
    // another and runs.
    let gone = |pid: u32| {
        !alive(pid)
            && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |t| t.count() <= 1)
    };
    support::wait_for("the spare stopped", || gone(spare)).await;
    assert_eq!(
        ok_value(&run(&pool, "return 'after';").await),
        json!("after")
    );
    assert_eq!(pool.stats().spawned, 1, "the worker itself went on serving");
    assert_eq!(pool.idle_pids(), vec![worker]);
    let fresh = children_of(worker);
    assert!(!fresh.contains(&spare), "{fresh:?}");
}
