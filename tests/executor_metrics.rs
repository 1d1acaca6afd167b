//! What the executor measures, read back from the process's Prometheus
//! rendering: executions by outcome and tenant, busy and idle workers and
//! waiting callers, and workers recycled by reason. One test, so one pool
//! in this process reports the pool gauges.

use crate::support;

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use futures::future::BoxFuture;
use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    ipc::HostError,
    pool::{Owner, PoolConfig, WorkerCommand, WorkerPool},
    script::{ScriptContext, ScriptRunner, StashOp},
};

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// One tool, `demo.wait`, that tells the test it was called and answers
/// once the test releases it.
struct GateContext {
    called: mpsc::UnboundedSender<()>,
    release: Arc<Notify>,
}

impl ScriptContext for GateContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("demo".to_string(), vec!["wait".to_string()])]),
            server,
        )
    }

    fn call_tool(&self, _name: String, _args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let released = self.release.notified();
            let _ = self.called.send(());
            released.await;
            Ok(json!("released"))
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

/// The value of the sample `name{labels}`, 0 when it is absent.
fn sample(name: &str, labels: &str) -> f64 {
    quiver_telemetry::metrics::sample(name, labels).unwrap_or(0.0)
}

fn executions(tenant: &str, outcome: &str) -> f64 {
    sample(
        "quiver_executions_total",
        &format!("outcome=\"{outcome}\",quiver_tenant=\"{tenant}\""),
    )
}

fn recycled(reason: &str) -> f64 {
    sample(
        "quiver_worker_pool_recycled_total",
        &format!("reason=\"{reason}\""),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn executions_workers_and_recycling_are_measured() {
    let mut config = PoolConfig::new(WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_quiver")),
        args: vec!["__worker".into()],
    });
    config.min_workers = 1;
    config.max_workers = 1;
    config.max_uses = 2;
    config.max_uses_forking = 2;
    let pool = WorkerPool::start(config);
    pool.warm_up().await.unwrap();
    let runner = ScriptRunner::new(
        pool.clone(),
        Limits {
            wall_ms: 500,
            ..Limits::default()
        },
    );
    let (called_tx, mut called) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let context: Arc<dyn ScriptContext> = Arc::new(GateContext {
        called: called_tx,
        release: release.clone(),
    });
    let tenant = "executor-metrics";
    let owner = Owner::new(tenant, "s1");
    let run = |code: &'static str| {
        let runner = &runner;
        let context = context.clone();
        let owner = owner.clone();
        async move {
            runner
                .execute(&owner, code, context, CancellationToken::new())
                .await
        }
    };

    eprintln!("--- an ok and a failing script; the worker is then at max_uses");
    let max_uses_before = recycled("max_uses");
    run("return 1;").await.unwrap();
    let thrown: ScriptOutcome = run("throw new Error('boom');").await.unwrap();
    assert!(thrown.error.is_some());
    assert_eq!(executions(tenant, "ok"), 1.0);
    assert_eq!(executions(tenant, "error"), 1.0);
    assert_eq!(recycled("max_uses") - max_uses_before, 1.0);
    assert_eq!(
        sample(
            "quiver_execution_duration_seconds_count",
            &format!("outcome=\"ok\",quiver_tenant=\"{tenant}\"")
        ),
        1.0
    );

    eprintln!("--- a script held in a tool call keeps the only worker busy; another waits");
    support::wait_for("a warm worker idle", || pool.stats().idle == 1).await;
    let held = tokio::spawn({
        let runner_pool = pool.clone();
        let context = context.clone();
        let owner = owner.clone();
        async move {
            let runner = ScriptRunner::new(runner_pool, Limits::default());
            runner
                .execute(
                    &owner,
                    "return await tools.demo.wait({});",
                    context,
                    CancellationToken::new(),
                )
                .await
        }
    });
    called.recv().await.expect("the script called the tool");
    assert_eq!(sample("quiver_worker_pool_workers", "state=\"busy\""), 1.0);
    assert_eq!(sample("quiver_worker_pool_workers", "state=\"idle\""), 0.0);
    let queued = tokio::spawn({
        let runner_pool = pool.clone();
        let context = context.clone();
        async move {
            let runner = ScriptRunner::new(runner_pool, Limits::default());
            runner
                .execute(
                    &Owner::new(tenant, "s2"),
                    "return 2;",
                    context,
                    CancellationToken::new(),
                )
                .await
        }
    });
    support::wait_for("a caller waiting for a worker", || {
        pool.stats().waiting == 1
    })
    .await;
    assert_eq!(sample("quiver_worker_pool_queued", ""), 1.0);
    release.notify_one();
    held.await.unwrap().unwrap();
    queued.await.unwrap().unwrap();
    assert_eq!(executions(tenant, "ok"), 3.0);
    assert_eq!(sample("quiver_worker_pool_queued", ""), 0.0);
    assert_eq!(sample("quiver_worker_pool_workers", "state=\"busy\""), 0.0);

    eprintln!(
        "--- a timeout ends the script's own process, not the worker; a rejected script never runs"
    );
    let in_doubt_before = recycled("in_doubt");
    let failed_before = recycled("failed");
    run("while (true) {}").await.unwrap();
    assert_eq!(executions(tenant, "timeout"), 1.0);
    assert_eq!(recycled("in_doubt") - in_doubt_before, 0.0);
    assert_eq!(recycled("failed") - failed_before, 0.0);
    let after = run("return 'after the timeout';").await.unwrap();
    assert_eq!(after.result, Some(json!("after the timeout")));
    assert!(run("return (;").await.is_err());
    assert_eq!(executions(tenant, "rejected"), 1.0);
    pool.shutdown();
}
