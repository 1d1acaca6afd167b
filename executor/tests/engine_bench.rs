//! Engine timings, printed as a table (no assertions on time). Run with
//! `cargo test --release -p quiver-executor --test engine_bench -- --ignored --nocapture`.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::{BoxFuture, FutureExt};
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    worker::protocol::{HostRequest, Limits},
};
use serde_json::Value;

/// Answers everything at once with `null`.
struct NoopHost;

impl HostBridge for NoopHost {
    fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<Value, String>> {
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

async fn time_executions(code: &str, runs: usize) -> Samples {
    let limits = Limits::default();
    let tools: BTreeMap<_, _> = [("noop".to_string(), vec!["op".to_string()])].into();
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let runtime = ScriptRuntime::new(limits.heap_bytes).unwrap();
        let started = Instant::now();
        let outcome = runtime.execute(code, &limits, &tools, Arc::new(NoopHost)).await;
        samples.push(started.elapsed());
        assert_eq!(outcome.error, None, "{outcome:?}");
    }
    Samples(samples)
}

#[tokio::test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
async fn engine_timings() {
    const RUNS: usize = 200;
    println!("\n| what (ms)                                    | runs |      min |      p50 |      p95 |     mean |");
    println!("|----------------------------------------------|------|----------|----------|----------|----------|");

    let mut plain = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let runtime = deno_core::JsRuntime::new(deno_core::RuntimeOptions::default());
        plain.push(started.elapsed());
        drop(runtime);
    }
    Samples(plain).row("bare deno_core JsRuntime::new (reference)");

    let (mut create, mut destroy) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let started = Instant::now();
        let runtime = ScriptRuntime::new(Limits::default().heap_bytes).unwrap();
        create.push(started.elapsed());
        let started = Instant::now();
        drop(runtime);
        destroy.push(started.elapsed());
    }
    Samples(create).row("ScriptRuntime::new (runtime + bootstrap)");
    Samples(destroy).row("dropping an unused ScriptRuntime");

    time_executions("return 1;", RUNS).await.row("trivial script, execute() end to end");
    time_executions("for (let i = 0; i < 10; i++) await tools.noop.op({ i }); return 0;", RUNS)
        .await
        .row("10 sequential tool calls, no-op host");
    time_executions("await Promise.all(Array.from({ length: 10 }, (_, i) => tools.noop.op({ i }))); return 0;", RUNS)
        .await
        .row("10 parallel tool calls (Promise.all), no-op host");
}
