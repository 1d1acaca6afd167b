//! `quiver bench executor`: what running a script costs. A real worker pool
//! (`quiver __worker` processes) runs scripts whose tool calls go to a real mock
//! upstream over stdio; the same calls are also made directly for comparison.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use futures::future::BoxFuture;
use quiver_contract::{CallOptions, Limits};
use quiver_executor::{
    engine::{ScriptRuntime, StartFrom},
    ipc::HostError,
    pool::{PoolConfig, WorkerCommand, WorkerPool, WorkerProcess},
    script::{ScriptContext, StashOp},
};
use quiver_upstream::{Upstream, UpstreamConfig};
use serde_json::{Value, json};

/// Arguments of `quiver bench executor`.
#[derive(Args, Debug)]
pub struct ExecutorBenchArgs {
    /// Executions per latency measurement.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Executions per throughput measurement.
    #[arg(long, default_value_t = 400)]
    throughput_runs: usize,
    /// Runtimes built per runtime-creation measurement.
    #[arg(long, default_value_t = 100)]
    runtimes: usize,
}

/// Answers `tools.call(name)` by calling the mock upstream's `get_forecast` directly.
struct DirectContext {
    upstream: Arc<Upstream>,
}

impl ScriptContext for DirectContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        quiver_executor::script::names_in(
            &BTreeMap::from([("weather".to_string(), vec!["get_forecast".to_string()])]),
            server,
        )
    }
    fn call_tool(&self, _name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let result = self
                .upstream
                .call_tool(
                    "get_forecast",
                    args.as_object().cloned(),
                    CallOptions::default(),
                )
                .await
                .map_err(|e| HostError::from(e.to_string()))?;
            Ok(serde_json::to_value(result.content).unwrap_or_default())
        })
    }
    fn search(&self, _query: String, _limit: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(json!([])) })
    }
    fn describe(&self, _name: String) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(Value::Null) })
    }
    fn stash(&self, _op: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Ok(Value::Null) })
    }
}

/// The `p` quantile (0..=1) of sorted samples, nearest rank.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The pids of `pid`'s children (a forking worker's script processes).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Memory a process holds that no other does (`Private_Clean` +
/// `Private_Dirty` of `/proc/<pid>/smaps_rollup`): what a forked script
/// process costs beyond the pages it shares with its worker.
fn private_kib(pid: u32) -> Option<u64> {
    Some(rollup_kib(pid, "Private_Clean:")? + rollup_kib(pid, "Private_Dirty:")?)
}

/// One field of `/proc/<pid>/smaps_rollup`, KiB.
fn rollup_kib(pid: u32, name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Executions per second and the p50/p99 latency of `concurrency` callers
/// running the trivial script `runs` times in all on `pool`.
async fn throughput(
    pool: &Arc<WorkerPool>,
    concurrency: usize,
    runs: usize,
    context: &Arc<dyn ScriptContext>,
    limits: Limits,
) -> anyhow::Result<(f64, Duration, Duration)> {
    let per_task = (runs / concurrency).max(1);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let pool = pool.clone();
        let context = context.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per_task);
            for _ in 0..per_task {
                let t = Instant::now();
                let outcome = pool.run("return 1;", limits, context.clone()).await?;
                if let Some(error) = outcome.error {
                    anyhow::bail!("benchmark script failed: {error:?}");
                }
                samples.push(t.elapsed());
            }
            Ok(samples)
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await??);
    }
    let elapsed = started.elapsed();
    samples.sort();
    Ok((
        samples.len() as f64 / elapsed.as_secs_f64(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
    ))
}

/// The forking worker against the one it replaced (a fresh runtime restored
/// and hardened for every execution, on a thread of its own), both locked
/// down, on the same machine in the same run.
async fn worker_models(
    out: &mut String,
    command: &WorkerCommand,
    context: &Arc<dyn ScriptContext>,
    limits: Limits,
    iterations: usize,
    throughput_runs: usize,
) -> anyhow::Result<()> {
    let fresh = with_bench_flag(command, "--bench-fresh-runtimes");
    let _ = writeln!(
        out,
        "\n## Worker model: a process forked per execution against a fresh runtime per execution (trivial script, pool of 8 workers)\n\n| worker | one at a time p50 ms | p99 ms | concurrency 8: executions/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|"
    );
    for (label, command) in [
        (
            "forks a process from its prepared runtime (the executor's worker)",
            command,
        ),
        (
            "restores and hardens a fresh runtime per execution (before)",
            &fresh,
        ),
    ] {
        let pool = WorkerPool::start(PoolConfig {
            min_workers: 8,
            max_workers: 8,
            max_queue: 1024,
            ..PoolConfig::new(command.clone())
        });
        pool.warm_up().await?;
        let (_, one_p50, one_p99) = throughput(&pool, 1, iterations, context, limits).await?;
        let (rate, p50, p99) = throughput(&pool, 8, throughput_runs, context, limits).await?;
        pool.shutdown();
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {rate:.0} | {} | {} |",
            ms(one_p50),
            ms(one_p99),
            ms(p50),
            ms(p99)
        );
    }
    Ok(())
}

fn script_with_calls(n: usize) -> String {
    if n == 0 {
        "return 1;".to_string()
    } else {
        format!(
            "let last; for (let i = 0; i < {n}; i++) {{ last = await tools.call('weather__get_forecast', {{ city: 'Oslo', days: i % 7 + 1 }}); }} return {n};"
        )
    }
}

/// What building one hardened runtime costs, in this process, with the
/// engine's on-disk bytecode cache off (as it always is): from scratch (every
/// deno_core module compiled from source, as before the startup snapshot) and
/// restored from the in-memory snapshot. Each runtime is built on a thread of
/// its own, as the worker does.
fn runtime_creation(out: &mut String, runs: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        quiver_executor::engine::bytecode_cache_off(),
        "the engine's bytecode cache must be off"
    );
    let heap = Limits::default().heap_bytes;
    let build_on_a_thread = |start: StartFrom| -> anyhow::Result<Duration> {
        std::thread::spawn(move || {
            let started = Instant::now();
            let runtime = ScriptRuntime::build(heap, start)?;
            let took = started.elapsed();
            drop(runtime);
            Ok::<_, anyhow::Error>(took)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("a runtime-building thread panicked"))?
    };
    let first_snapshot = build_on_a_thread(StartFrom::Snapshot)?;
    let _ = writeln!(
        out,
        "## Runtime creation (bytecode cache off; {runs} runtimes each, one thread per runtime)\n\n| starts from | p50 ms | p99 ms |\n|---|---:|---:|"
    );
    for (label, start) in [
        (
            "scratch (before: deno_core's modules compiled each time)",
            StartFrom::Scratch,
        ),
        (
            "in-memory startup snapshot, hardened after restore",
            StartFrom::Snapshot,
        ),
    ] {
        let mut samples = (0..runs.max(10))
            .map(|_| build_on_a_thread(start))
            .collect::<anyhow::Result<Vec<_>>>()?;
        samples.sort();
        let _ = writeln!(
            out,
            "| {label} | {} | {} |",
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.99))
        );
    }
    let _ = writeln!(
        out,
        "\nMaking the snapshot (once per worker process) plus the first runtime from it: {} ms.\n",
        ms(first_snapshot)
    );
    Ok(())
}

/// The worker `command` runs, started with one of the worker's hidden
/// benchmark flags.
fn with_bench_flag(command: &WorkerCommand, flag: &str) -> WorkerCommand {
    WorkerCommand {
        program: command.program.clone(),
        args: vec![
            "__worker".into(),
            flag.into(),
            quiver_executor::pool::SNAPSHOT_FROM_HOST_FLAG.into(),
        ],
    }
}

/// What the OS lock-down (namespaces, seccomp filter, resource limits) costs
/// per execution: the same scripts on one worker with it and on one started
/// without it (a benchmark-only worker flag; the executor refuses such workers).
async fn isolation_cost(
    out: &mut String,
    command: &WorkerCommand,
    context: &Arc<dyn ScriptContext>,
    limits: Limits,
    runs: usize,
) -> anyhow::Result<()> {
    let unlocked = with_bench_flag(command, "--bench-without-lock-down");
    let _ = writeln!(
        out,
        "\n## Isolation cost ({runs} runs each, one worker, one at a time)\n\n| script | locked down p50 ms | p99 ms | without lock-down p50 ms | p99 ms |\n|---|---:|---:|---:|---:|"
    );
    for (label, code) in [
        ("trivial (`return 1`)", script_with_calls(0)),
        ("10 sequential tool calls", script_with_calls(10)),
    ] {
        let mut row = Vec::new();
        for locked in [true, false] {
            let mut worker = if locked {
                WorkerProcess::spawn(command).await?
            } else {
                WorkerProcess::spawn_unchecked(&unlocked).await?
            };
            let mut samples = Vec::with_capacity(runs);
            for _ in 0..runs.max(10) {
                // A worker serves a bounded number of executions; start a
                // fresh one of the same kind when it is used up.
                if worker.uses() >= 45 {
                    worker = if locked {
                        WorkerProcess::spawn(command).await?
                    } else {
                        WorkerProcess::spawn_unchecked(&unlocked).await?
                    };
                }
                let started = Instant::now();
                let outcome = worker
                    .run(
                        &code,
                        limits,
                        context.clone(),
                        tokio_util::sync::CancellationToken::new(),
                    )
                    .await?;
                samples.push(started.elapsed());
                if let Some(error) = outcome.error {
                    anyhow::bail!("benchmark script failed: {error:?}");
                }
            }
            samples.sort();
            row.push(ms(percentile(&samples, 0.5)));
            row.push(ms(percentile(&samples, 0.99)));
        }
        let _ = writeln!(out, "| {label} | {} |", row.join(" | "));
    }
    Ok(())
}

/// Runs the benchmark and prints markdown tables.
pub async fn run(args: ExecutorBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench executor` for numbers"
        );
    }
    let exe = crate::quiver::binary()?;
    let command = WorkerCommand::quiver(exe.clone());
    let upstream = Upstream::new(UpstreamConfig::stdio(
        "weather",
        exe.to_string_lossy(),
        vec![
            "mock-upstream".into(),
            "--demo".into(),
            "--server".into(),
            "weather".into(),
            "--stdio".into(),
        ],
    ));
    upstream
        .list_tools()
        .await
        .context("starting the mock upstream")?;
    let context: Arc<dyn ScriptContext> = Arc::new(DirectContext {
        upstream: upstream.clone(),
    });
    let limits = Limits {
        wall_ms: 30_000,
        ..Limits::default()
    };
    let mut out = String::new();
    runtime_creation(&mut out, args.runtimes)?;

    // Direct calls, for comparison.
    let mut direct = Vec::with_capacity(args.iterations);
    for i in 0..args.iterations {
        let started = Instant::now();
        upstream
            .call_tool(
                "get_forecast",
                json!({"city": "Oslo", "days": i % 7 + 1})
                    .as_object()
                    .cloned(),
                CallOptions::default(),
            )
            .await?;
        direct.push(started.elapsed());
    }
    direct.sort();
    let direct_p50 = percentile(&direct, 0.5);

    // Warm-pool latency.
    let pool = WorkerPool::start(PoolConfig {
        min_workers: 2,
        ..PoolConfig::new(command.clone())
    });
    pool.warm_up().await?;
    let _ = writeln!(
        out,
        "## Warm-pool script latency ({} runs each, one at a time)\n",
        args.iterations
    );
    let _ = writeln!(
        out,
        "| script | p50 ms | p99 ms | added per tool call vs direct (p50) ms |\n|---|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| direct upstream call (no script) | {} | {} | — |",
        ms(direct_p50),
        ms(percentile(&direct, 0.99))
    );
    let mut trivial_p50 = Duration::ZERO;
    for calls in [0usize, 1, 10, 50] {
        let code = script_with_calls(calls);
        let mut samples = Vec::with_capacity(args.iterations);
        let runs = if calls >= 50 {
            args.iterations / 4
        } else {
            args.iterations
        };
        for _ in 0..runs.max(10) {
            let started = Instant::now();
            let outcome = pool.run(&code, limits, context.clone()).await?;
            samples.push(started.elapsed());
            if let Some(error) = outcome.error {
                anyhow::bail!("benchmark script failed: {error:?}");
            }
        }
        samples.sort();
        let p50 = percentile(&samples, 0.5);
        if calls == 0 {
            trivial_p50 = p50;
        }
        let added = if calls == 0 {
            "—".to_string()
        } else {
            let per_call = p50.saturating_sub(trivial_p50).as_secs_f64() / calls as f64;
            format!("{:.3}", (per_call - direct_p50.as_secs_f64()) * 1000.0)
        };
        let label = if calls == 0 {
            "trivial (`return 1`)".to_string()
        } else {
            format!("{calls} sequential tool calls")
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {added} |",
            ms(p50),
            ms(percentile(&samples, 0.99))
        );
    }

    // Throughput.
    let _ = writeln!(
        out,
        "\n## Throughput (trivial script, pool of 8 workers)\n\n| concurrency | executions/s | p50 ms | p99 ms |\n|---:|---:|---:|---:|"
    );
    let pool8 = WorkerPool::start(PoolConfig {
        min_workers: 8,
        max_workers: 8,
        max_queue: 1024,
        ..PoolConfig::new(command.clone())
    });
    pool8.warm_up().await?;
    for concurrency in [1usize, 8, 32] {
        let (rate, p50, p99) =
            throughput(&pool8, concurrency, args.throughput_runs, &context, limits).await?;
        let _ = writeln!(
            out,
            "| {concurrency} | {rate:.0} | {} | {} |",
            ms(p50),
            ms(p99)
        );
    }
    pool8.shutdown();

    // Cold start and memory.
    let mut cold = Vec::new();
    let mut idle_rss = Vec::new();
    let mut idle_anon = Vec::new();
    for _ in 0..10 {
        let started = Instant::now();
        let worker = WorkerProcess::spawn(&command).await?;
        cold.push(started.elapsed());
        if let Some(kib) = worker.pid().and_then(rss_kib) {
            idle_rss.push(kib);
        }
        if let Some(kib) = worker.pid().and_then(|p| rollup_kib(p, "Anonymous:")) {
            idle_anon.push(kib);
        }
    }
    cold.sort();
    let mut worker = WorkerProcess::spawn(&command).await?;
    let pid = worker.pid().unwrap_or(0);
    // Sampled while the script runs: the worker's own resident memory, and
    // that of the process running the script (resident, and private: what it
    // does not share with the worker it was forked from).
    let sampler = tokio::spawn(async move {
        let (mut worker_peak, mut script_peak, mut private_peak) = (0, 0, 0);
        let mut busy = None;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            worker_peak = worker_peak.max(rss_kib(pid).unwrap_or(0));
            for child in children_of(pid) {
                script_peak = script_peak.max(rss_kib(child).unwrap_or(0));
                let private = private_kib(child).unwrap_or(0);
                if private > private_peak {
                    private_peak = private;
                    busy = Some(child);
                }
            }
        }
        (worker_peak, script_peak, private_peak, busy)
    });
    let busy_script = "const rows = []; for (let i = 0; i < 100000; i++) rows.push({ id: i, name: 'row ' + i }); const end = Date.now() + 400; while (Date.now() < end) {} return rows.length;";
    worker
        .run(
            busy_script,
            limits,
            context.clone(),
            tokio_util::sync::CancellationToken::new(),
        )
        .await?;
    let (worker_peak, script_peak, private_peak, busy) = sampler.await?;
    // Once idle again, the worker forks the next execution's process ahead:
    // what that waiting process costs on its own (not the one that ran the
    // script, which may still be exiting).
    let mut spare_private = None;
    for _ in 0..200 {
        let spare = children_of(pid).into_iter().find(|c| Some(*c) != busy);
        if let Some(kib) = spare.and_then(private_kib) {
            spare_private = Some(kib);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(worker);
    if cfg!(feature = "bench-hooks") {
        worker_models(
            &mut out,
            &command,
            &context,
            limits,
            args.iterations,
            args.throughput_runs,
        )
        .await?;
        isolation_cost(&mut out, &command, &context, limits, args.iterations).await?;
    } else {
        let _ = writeln!(
            out,
            "\nThe worker-model and isolation-cost tables need workers with benchmark hooks: build with `--features bench-hooks`.\n"
        );
    }
    let _ = writeln!(out, "\n## Workers\n\n| measure | value |\n|---|---:|");
    let _ = writeln!(
        out,
        "| cold worker start (spawn → ready, p50 of 10) | {} ms |",
        ms(percentile(&cold, 0.5))
    );
    let _ = writeln!(
        out,
        "| cold worker start (max of 10) | {} ms |",
        ms(percentile(&cold, 1.0))
    );
    let idle_mean = idle_rss.iter().sum::<u64>() / idle_rss.len().max(1) as u64;
    let _ = writeln!(
        out,
        "| resident memory, idle worker (mean of 10) | {:.1} MiB |",
        idle_mean as f64 / 1024.0
    );
    let anon_mean = idle_anon.iter().sum::<u64>() / idle_anon.len().max(1) as u64;
    let _ = writeln!(
        out,
        "| of which its own (anonymous: heap and prepared runtime; the rest is the quiver binary's code, shared by every quiver process) | {:.1} MiB |",
        anon_mean as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| busy worker (100k-row script): the worker's own resident memory, peak | {:.1} MiB |",
        worker_peak as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| busy worker: its script process, resident (shares the worker's pages), peak | {:.1} MiB |",
        script_peak as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| busy worker: its script process, private (its own cost), peak | {:.1} MiB |",
        private_peak as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| idle worker: the process it forked ahead for the next execution, private | {} |",
        spare_private.map_or("none seen".to_string(), |kib| format!(
            "{:.1} MiB",
            kib as f64 / 1024.0
        ))
    );
    println!("{out}");
    pool.shutdown();
    upstream.shutdown().await;
    Ok(())
}
