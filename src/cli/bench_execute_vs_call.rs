//! `quiver bench execute-vs-call`: what code mode's `execute` costs next to
//! the passthrough call it replaces, end to end at the edge. It starts a real
//! `quiver dev` (demo catalogue, mock upstreams over stdio, the in-process
//! executor with its worker pool) and drives it over Streamable HTTP with rmcp
//! clients, as an agent would; every figure comes from that one run.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::Args;
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::bench_executor::{ms, percentile, rss_kib};

/// Arguments of `quiver bench execute-vs-call`.
#[derive(Args, Debug)]
pub struct ExecuteVsCallArgs {
    /// Requests per latency measurement.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Trivial executions in the throughput measurement.
    #[arg(long, default_value_t = 800)]
    throughput_runs: usize,
    /// Sessions sending at once in the throughput measurement.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Pause between requests in the paced measurement, milliseconds (an
    /// agent thinks between calls; the pause is not timed).
    #[arg(long, default_value_t = 20)]
    pace_ms: u64,
}

pub(crate) type Client = RunningService<RoleClient, ()>;

/// The tool every measurement calls, with its arguments.
const TOOL: &str = "weather__get_forecast";
const ONE_CALL: &str = "return await tools.weather.get_forecast({ city: 'Rome' });";
const TEN_PARALLEL: &str = "const cities = ['Rome','Oslo','Lima','Pune','Kyiv','Nice','Bern','Doha','Baku','Riga'];\nreturn (await Promise.all(cities.map(city => tools.weather.get_forecast({ city })))).length;";
const TEN_SEQUENTIAL: &str = "let n = 0;\nfor (let i = 0; i < 10; i++) { await tools.weather.get_forecast({ city: 'Rome' }); n++; }\nreturn n;";
const TRIVIAL: &str = "return 1;";

/// A running `quiver dev`, stopped on drop.
pub(crate) struct Dev {
    child: tokio::process::Child,
    /// `http://host:port` of the edge.
    pub(crate) base: String,
    /// The startup line.
    pub(crate) banner: String,
    _data: tempfile::TempDir,
}

impl Dev {
    async fn start() -> anyhow::Result<Dev> {
        Dev::start_with(&[]).await
    }

    /// `quiver dev` with `extra` arguments, once it printed its startup line.
    pub(crate) async fn start_with(extra: &[&str]) -> anyhow::Result<Dev> {
        Dev::start_with_env(extra, &[]).await
    }

    /// `quiver dev` with `extra` arguments and environment variables.
    pub(crate) async fn start_with_env(
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Dev> {
        let data = tempfile::tempdir().context("temporary data directory")?;
        let exe = std::env::current_exe().context("locating the quiver binary")?;
        let mut child = tokio::process::Command::new(exe)
            .args(["dev", "--listen", "127.0.0.1:0"])
            .args(["--control-plane-listen", "127.0.0.1:0", "--data"])
            .arg(data.path())
            .args(extra)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting quiver dev")?;
        let stdout = child.stdout.take().context("quiver dev's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let banner = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .context("quiver dev printed no startup line in 120 s")??
            .context("quiver dev exited before it was ready")?;
        // Keep reading so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .with_context(|| format!("no URL in quiver dev's startup line: {banner}"))?;
        Ok(Dev {
            child,
            base: url.trim_end_matches("/mcp").to_string(),
            banner,
            _data: data,
        })
    }

    pub(crate) async fn connect(&self, mode: &str) -> anyhow::Result<Client> {
        connect_url(&self.mode_url(mode)).await
    }

    /// The MCP URL of `mode`.
    pub(crate) fn mode_url(&self, mode: &str) -> String {
        format!("{}/{mode}/mcp", self.base)
    }

    /// Resident memory of each `quiver __worker` the dev process started, KiB.
    fn worker_rss(&self) -> Vec<u64> {
        let Some(parent) = self.child.id() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| is_worker_of(*pid, parent))
            .filter_map(rss_kib)
            .collect()
    }
}

/// An MCP session with the endpoint at `url`.
pub(crate) async fn connect_url(url: &str) -> anyhow::Result<Client> {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .with_context(|| format!("connecting to {url}"))
}

fn is_worker_of(pid: u32, parent: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Fields after the command name (which may hold spaces) start at the last `)`.
    let ppid = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok());
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    ppid == Some(parent) && cmdline.split(|b| *b == 0).any(|arg| arg == b"__worker")
}

pub(crate) async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> anyhow::Result<CallToolResult> {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = arguments.as_object().cloned();
    let result = client
        .call_tool(params)
        .await
        .with_context(|| format!("tools/call {name}"))?;
    if result.is_error == Some(true) {
        bail!("{name} answered an error: {:?}", result.content);
    }
    Ok(result)
}

pub(crate) async fn execute(client: &Client, code: &str) -> anyhow::Result<CallToolResult> {
    call(client, "execute", json!({ "code": code })).await
}

/// Latencies of `n` requests made one after another, sorted.
pub(crate) async fn one_at_a_time<F, Fut>(n: usize, request: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<CallToolResult>>,
{
    paced(n, Duration::ZERO, request).await
}

/// Latencies of `n` requests with `pause` between one answer and the next
/// request (not timed), sorted.
async fn paced<F, Fut>(n: usize, pause: Duration, mut request: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<CallToolResult>>,
{
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let started = Instant::now();
        request().await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples)
}

/// Runs the comparison and prints its tables.
pub async fn run(args: ExecuteVsCallArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; use `cargo run --release -- bench execute-vs-call` for numbers"
        );
    }
    quiver_upstream::install_crypto_provider();
    let dev = Dev::start().await?;
    let passthrough = dev.connect("passthrough").await?;
    let code = dev.connect("code").await?;
    let n = args.iterations.max(1);

    // Warm both paths (connections, the worker pool, the upstream's process).
    for _ in 0..20 {
        call(&passthrough, TOOL, json!({ "city": "Rome" })).await?;
        execute(&code, ONE_CALL).await?;
    }

    let direct = one_at_a_time(n, || call(&passthrough, TOOL, json!({ "city": "Rome" }))).await?;
    let one = one_at_a_time(n, || execute(&code, ONE_CALL)).await?;
    let parallel = one_at_a_time(n, || execute(&code, TEN_PARALLEL)).await?;
    let sequential = one_at_a_time(n, || execute(&code, TEN_SEQUENTIAL)).await?;
    let trivial = one_at_a_time(n, || execute(&code, TRIVIAL)).await?;
    let pause = Duration::from_millis(args.pace_ms);
    let paced_direct = paced(n, pause, || {
        call(&passthrough, TOOL, json!({ "city": "Rome" }))
    })
    .await?;
    let paced_one = paced(n, pause, || execute(&code, ONE_CALL)).await?;
    let paced_parallel = paced(n, pause, || execute(&code, TEN_PARALLEL)).await?;
    let paced_trivial = paced(n, pause, || execute(&code, TRIVIAL)).await?;
    let idle_rss = dev.worker_rss();

    // Throughput: `concurrency` sessions, each sending trivial scripts back to back.
    let mut sessions = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency.max(1) {
        sessions.push(dev.connect("code").await?);
    }
    let per_session = args.throughput_runs.div_ceil(sessions.len());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for session in sessions {
        tasks.spawn(async move {
            let samples = one_at_a_time(per_session, || execute(&session, TRIVIAL)).await;
            let _ = session.cancel().await;
            samples
        });
    }
    let mut burst = Vec::new();
    while let Some(done) = tasks.join_next().await {
        burst.extend(done.context("a throughput session panicked")??);
    }
    let wall = started.elapsed();
    burst.sort();
    let rate = burst.len() as f64 / wall.as_secs_f64();

    let p50 = |s: &[Duration]| percentile(s, 0.5);
    let ratio = |s: &[Duration]| p50(s).as_secs_f64() / p50(&direct).as_secs_f64().max(1e-9);
    let per_call = p50(&sequential).saturating_sub(p50(&one)) / 9;

    println!(
        "## `execute` against the passthrough call it replaces (`quiver dev`, Streamable HTTP, {n} requests each, one at a time)\n"
    );
    latency_table(&[
        ("passthrough call `weather__get_forecast`", &direct),
        ("`execute`: one tool call", &one),
        ("`execute`: ten parallel tool calls", &parallel),
        ("`execute`: ten sequential tool calls", &sequential),
        ("`execute`: trivial (`return 1`)", &trivial),
    ]);
    println!(
        "\n## At an agent's pace: {} ms between an answer and the next request ({n} requests each)\n",
        args.pace_ms
    );
    latency_table(&[
        ("passthrough call `weather__get_forecast`", &paced_direct),
        ("`execute`: one tool call", &paced_one),
        ("`execute`: ten parallel tool calls", &paced_parallel),
        ("`execute`: trivial (`return 1`)", &paced_trivial),
    ]);
    println!(
        "\n## Throughput: trivial `execute`, {} sessions at once, {} executions\n",
        args.concurrency,
        burst.len()
    );
    println!("| executions/s | p50 ms | p99 ms |");
    println!("|---:|---:|---:|");
    println!(
        "| {rate:.0} | {} | {} |",
        ms(p50(&burst)),
        ms(percentile(&burst, 0.99))
    );

    let idle_mib = mean_mib(&idle_rss);
    println!("\n## Against the targets\n");
    println!("| target | measured | met |");
    println!("|---|---:|---|");
    let target = |what: &str, measured: String, met: bool| {
        println!(
            "| {what} | {measured} | {} |",
            if met { "yes" } else { "no" }
        );
    };
    target(
        "`execute` with one tool call ≤ 2× a passthrough call (p50)",
        format!("{:.1}×", ratio(&one)),
        ratio(&one) <= 2.0,
    );
    target(
        "`execute` with ten parallel calls ≤ 3× a passthrough call (p50)",
        format!("{:.1}×", ratio(&parallel)),
        ratio(&parallel) <= 3.0,
    );
    target(
        "trivial script < 2 ms p50 at the edge",
        format!("{} ms", ms(p50(&trivial))),
        p50(&trivial) < Duration::from_millis(2),
    );
    target(
        "≥ 500 trivial executions/s at concurrency 8",
        format!("{rate:.0}/s"),
        rate >= 500.0,
    );
    target(
        "p99 < 20 ms at that load",
        format!("{} ms", ms(percentile(&burst, 0.99))),
        percentile(&burst, 0.99) < Duration::from_millis(20),
    );
    target(
        "idle worker < 16 MiB resident",
        format!("{idle_mib:.1} MiB (mean of {})", idle_rss.len()),
        !idle_rss.is_empty() && idle_mib < 16.0,
    );
    target(
        "per tool call inside a script ≤ 0.3 ms (ten sequential − one, ÷ 9)",
        format!("{} ms", ms(per_call)),
        per_call <= Duration::from_micros(300),
    );
    let _ = passthrough.cancel().await;
    let _ = code.cancel().await;
    drop(dev);
    Ok(())
}

/// One latency row per request kind, each against the first row's p50.
fn latency_table(rows: &[(&str, &Vec<Duration>)]) {
    let baseline = rows
        .first()
        .map_or(0.0, |(_, s)| percentile(s, 0.5).as_secs_f64());
    println!("| request | p50 ms | p99 ms | × passthrough call (p50) |");
    println!("|---|---:|---:|---:|");
    for (name, samples) in rows {
        let p50 = percentile(samples, 0.5);
        println!(
            "| {name} | {} | {} | {:.1} |",
            ms(p50),
            ms(percentile(samples, 0.99)),
            p50.as_secs_f64() / baseline.max(1e-9)
        );
    }
}

fn mean_mib(kib: &[u64]) -> f64 {
    if kib.is_empty() {
        return 0.0;
    }
    kib.iter().sum::<u64>() as f64 / kib.len() as f64 / 1024.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_a_worker_only_with_the_right_parent_and_subcommand() {
        let me = std::process::id();
        // `sh -c CMD NAME` puts NAME in the child's argv, as `quiver __worker`
        // would; its first line says it has replaced the forked copy of us.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "echo started; read line", "__worker"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let mut started = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut started,
        )
        .expect("sh says it started");
        assert_eq!(started, "started\n");
        let pid = child.id();
        assert!(is_worker_of(pid, me));
        assert!(!is_worker_of(pid, 1), "another parent's child is not ours");
        assert!(!is_worker_of(me, me), "this test process is no worker");
        drop(child.stdin.take());
        child.wait().expect("sh exits at end of input");
    }

    #[test]
    fn the_mean_of_nothing_is_zero() {
        assert_eq!(mean_mib(&[]), 0.0);
        assert_eq!(mean_mib(&[1024, 3072]), 2.0);
    }
}
