//! Engine timings, printed as a table (no assertions on time). Run with
//! `cargo test --release -p quiver-executor --test integration engine_bench -- --ignored --nocapture`.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::{BoxFuture, FutureExt};
use quiver_contract::Limits;
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    ipc::{HostError, HostRequest, ToolNames},
};
use serde_json::Value;

/// Answers everything at once with `null`.
struct NoopHost;

impl HostBridge for NoopHost {
    fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        futures::future::ready(Ok(Value::Null)).boxed()
    }
}

struct Samples(Vec<Duration>);

impl Samples {
    fn row(&mut self, what: &str) {
        self.0.sort();
        let n = self.0.len();
        let mean = self.0.iter().sum::<Duration>() / n as u32;
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "| {what:<44} | {n:>4} | {:>8.3} | {:>8.3} | {:>8.3} | {:>8.3} |",
            ms(self.0[0]),
            ms(self.0[n / 2]),
            ms(self.0[n * 95 / 100]),
            ms(mean)
        );
    }
}

/// Runs `batch` on fresh threads, `PER_THREAD` runs each: the QuickJS backend
/// allows only a few hundred runtimes per thread (see `engine::ScriptRuntime`).
fn on_fresh_threads(
    runs: usize,
    batch: impl Fn(usize) -> Vec<Duration> + Send + Sync + Copy + 'static,
) -> Samples {
    const PER_THREAD: usize = 50;
    let mut samples = Vec::with_capacity(runs);
    for start in (0..runs).step_by(PER_THREAD) {
        let n = PER_THREAD.min(runs - start);
        samples.extend(std::thread::spawn(move || batch(n)).join().unwrap());
    }
    Samples(samples)
}

fn time_executions(code: &'static str, runs: usize) -> Samples {
    on_fresh_threads(runs, move |n| {
        let limits = Limits::default();
        let tools: BTreeMap<_, _> = [("noop".to_string(), vec!["op".to_string()])].into();
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (0..n)
            .map(|_| {
                let mut runtime = ScriptRuntime::new(limits.heap_bytes).unwrap();
                let started = Instant::now();
                let outcome = tokio.block_on(runtime.execute(
                    code,
                    &limits,
                    &ToolNames::complete(tools.clone()),
                    Arc::new(NoopHost),
                ));
                let took = started.elapsed();
                assert_eq!(outcome.error, None, "{outcome:?}");
                took
            })
            .collect()
    })
}

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn engine_timings() {
    const RUNS: usize = 200;
    println!(
        "\n| what (ms)                                    | runs |      min |      p50 |      p95 |     mean |"
    );
    println!(
        "|----------------------------------------------|------|----------|----------|----------|----------|"
    );

    on_fresh_threads(RUNS, |n| {
        (0..n)
            .map(|_| {
                let started = Instant::now();
                let runtime = deno_core::JsRuntime::new(deno_core::RuntimeOptions::default());
                let took = started.elapsed();
                drop(runtime);
                took
            })
            .collect()
    })
    .row("bare deno_core JsRuntime::new (reference)");
    on_fresh_threads(RUNS, |n| {
        (0..n)
            .map(|_| {
                let started = Instant::now();
                let runtime = ScriptRuntime::new(Limits::default().heap_bytes).unwrap();
                let took = started.elapsed();
                drop(runtime);
                took
            })
            .collect()
    })
    .row("ScriptRuntime::new (runtime + bootstrap)");
    on_fresh_threads(RUNS, |n| {
        (0..n)
            .map(|_| {
                let runtime = ScriptRuntime::new(Limits::default().heap_bytes).unwrap();
                let started = Instant::now();
                drop(runtime);
                started.elapsed()
            })
            .collect()
    })
    .row("dropping an unused ScriptRuntime");
    on_fresh_threads(RUNS, |n| {
        (0..n)
            .map(|_| {
                let started = Instant::now();
                std::thread::spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map(drop)
                })
                .join()
                .unwrap()
                .unwrap();
                started.elapsed()
            })
            .collect()
    })
    .row("spawn + join a thread with a tokio runtime");

    time_executions("return 1;", RUNS).row("trivial script, execute() end to end");
    time_executions(
        "for (let i = 0; i < 10; i++) await tools.noop.op({ i }); return 0;",
        RUNS,
    )
    .row("10 sequential tool calls, no-op host");
    time_executions(
        "await Promise.all(Array.from({ length: 10 }, (_, i) => tools.noop.op({ i }))); return 0;",
        RUNS,
    )
    .row("10 parallel tool calls (Promise.all), no-op host");
}
