//! `quiver bench fleet`: the fleet on loopback. A `quiver dev` serves as the
//! control plane (demo catalogue, mock upstreams over stdio); `quiver
//! executor`s join it one stage at a time (1, 2, then 4) and one `quiver
//! edge` routes to them. Per stage: trivial `execute` throughput and
//! latency through the edge at a fixed concurrency. Then what the edge →
//! executor hop adds to a passthrough call (the same call through `quiver
//! dev`'s in-process executor, same run), and how long after an executor's
//! `kill -9` the edge stops listing it as taking work with no traffic to
//! notice (the registry's expiry; traffic opens its breaker at once).

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::{
    execute_vs_call::{Client, Dev, call, execute, one_at_a_time},
    executor::{ms, percentile},
};

/// Arguments of `quiver bench fleet`.
#[derive(Args, Debug)]
pub struct FleetBenchArgs {
    /// Trivial executions per stage.
    #[arg(long, default_value_t = 400)]
    executions: usize,
    /// Sessions sending them at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Passthrough calls per hop measurement.
    #[arg(long, default_value_t = 300)]
    calls: usize,
    /// The fleet sizes measured, in order (comma-separated); the hop is
    /// measured on the last.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    executors: Vec<usize>,
    /// etcd endpoints (`host:port`): the edge and the executors find each
    /// other there (`--etcd`) instead of through the control plane's
    /// registry. Start one with Debian's `etcd` first.
    #[arg(long, value_delimiter = ',')]
    etcd: Vec<String>,
    /// Visible tools: the demo catalogue's 16, or more made of the real
    /// catalogue's tools (see `quiver bench execute-vs-call --tools`).
    #[arg(long, default_value_t = 16)]
    tools: usize,
    /// The real catalogue larger sizes are made of.
    #[arg(long, default_value = crate::catalog::DEFAULT_SOURCE)]
    catalog: std::path::PathBuf,
}

/// A child `quiver` process, killed on drop, and its startup line.
pub(super) struct Role {
    child: tokio::process::Child,
    banner: String,
}

impl Role {
    pub(super) async fn start(args: &[&str]) -> anyhow::Result<Role> {
        let exe = crate::quiver::binary()?;
        let mut child = tokio::process::Command::new(exe)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting quiver {}", args[0]))?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let banner = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .with_context(|| format!("quiver {} printed no startup line", args[0]))??
            .with_context(|| format!("quiver {} exited before it was ready", args[0]))?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Role { child, banner })
    }
}

impl Role {
    /// An edge's `http://host:port`, from its startup line.
    pub(super) fn base(&self) -> anyhow::Result<String> {
        Ok(self
            .banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .context("no URL in the edge's startup line")?
            .trim_end_matches("/mcp")
            .to_string())
    }
}

/// `/status` of the edge at `base`: its executors.
async fn executors(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let Ok(response) = http.get(format!("{base}/status")).send().await else {
        return Vec::new();
    };
    let status: Value = response.json().await.unwrap_or_default();
    status["executors"].as_array().cloned().unwrap_or_default()
}

fn taking_work(executors: &[Value]) -> usize {
    executors.iter().filter(|e| e["state"] == "ok").count()
}

/// Waits until the edge routes to `n` executors (bounded).
pub(super) async fn until_routing(
    http: &reqwest::Client,
    base: &str,
    n: usize,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while taking_work(&executors(http, base).await) != n {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the edge did not route to {n} executors within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// `concurrency` sessions sending trivial scripts back to back: executions
/// per second and the sorted latencies.
async fn throughput(
    base: &str,
    concurrency: usize,
    executions: usize,
) -> anyhow::Result<(f64, Vec<Duration>)> {
    let mut sessions: Vec<Client> = Vec::new();
    for _ in 0..concurrency.max(1) {
        sessions.push(crate::execute_vs_call::connect_url(&format!("{base}/code/mcp")).await?);
    }
    // Warm every route once.
    for session in &sessions {
        execute(session, "return 0;").await?;
    }
    let per_session = executions.div_ceil(sessions.len());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for session in sessions {
        tasks.spawn(async move {
            let samples = one_at_a_time(per_session, || execute(&session, "return 1;")).await;
            let _ = session.cancel().await;
            samples
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.context("a session panicked")??);
    }
    let wall = started.elapsed();
    all.sort();
    Ok((all.len() as f64 / wall.as_secs_f64(), all))
}

/// Latencies of `n` passthrough forecast calls, one after another.
async fn forecasts(client: &Client, n: usize) -> anyhow::Result<Vec<Duration>> {
    one_at_a_time(n, || {
        call(client, "weather__get_forecast", json!({"city": "Rome"}))
    })
    .await
}

/// A caller that hears nothing while a call runs: MCP 2026-07-28 requests
/// POSTed as they are, with no progress token and no capabilities (rmcp's
/// client puts a progress token on every request), so the edge takes the
/// unary hop.
struct PlainCaller {
    http: reqwest::Client,
    url: String,
    next: u64,
}

impl PlainCaller {
    fn new(url: String) -> PlainCaller {
        PlainCaller {
            http: reqwest::Client::new(),
            url,
            next: 1,
        }
    }

    /// One `tools/call` of the forecast; how long it took.
    async fn forecast(&mut self) -> anyhow::Result<Duration> {
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": {
        "name": "weather__get_forecast", "arguments": {"city": "Rome"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "quiver-bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }}});
        let started = Instant::now();
        let answer = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "weather__get_forecast")
            .json(&body)
            .send()
            .await?
            .text()
            .await?;
        let took = started.elapsed();
        let message = answer
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&answer);
        let message: Value = serde_json::from_str(message.trim())
            .with_context(|| format!("not a JSON-RPC answer: {answer}"))?;
        anyhow::ensure!(
            message["result"]["isError"] != json!(true) && message["result"].is_object(),
            "the call failed: {message}"
        );
        Ok(took)
    }

    async fn forecasts(&mut self, n: usize) -> anyhow::Result<Vec<Duration>> {
        let mut took = Vec::with_capacity(n);
        for _ in 0..n {
            took.push(self.forecast().await?);
        }
        Ok(took)
    }
}

/// Runs the benchmark and prints its tables.
pub async fn run(args: FleetBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; numbers are only meaningful from a release build");
    }
    let catalogs = tempfile::tempdir().context("a directory for the catalogue")?;
    let catalog = crate::catalog::scaled_catalog(&args.catalog, args.tools, catalogs.path())?;
    let catalog_args: Vec<String> = catalog
        .iter()
        .flat_map(|path| ["--catalog".to_string(), path.display().to_string()])
        .collect();
    let catalog_args: Vec<&str> = catalog_args.iter().map(String::as_str).collect();
    eprintln!("bench fleet: {} visible tools", args.tools);
    let dev = Dev::start_with(&catalog_args).await?;
    crate::execute_vs_call::wait_for_tools(&dev.connect("passthrough").await?, args.tools).await?;
    let control_plane = dev.control_plane()?;
    let etcd = args.etcd.join(",");
    let membership: Vec<&str> = if etcd.is_empty() {
        Vec::new()
    } else {
        vec!["--etcd", &etcd]
    };
    let mut edge_args = vec![
        "edge",
        "--listen",
        "127.0.0.1:0",
        "--control-plane",
        &control_plane,
    ];
    edge_args.extend(&membership);
    let edge = Role::start(&edge_args).await?;
    let base = edge.base()?;
    let http = reqwest::Client::new();

    println!(
        "## Through one edge: trivial `execute`, {} sessions at once, {} executions per stage, {} visible tools\n",
        args.concurrency, args.executions, args.tools
    );
    println!("| executors | executions/s | p50 ms | p99 ms |");
    println!("|---:|---:|---:|---:|");
    let mut fleet = Vec::new();
    for &stage in &args.executors {
        while fleet.len() < stage {
            let name = format!("bench-executor-{}", fleet.len() + 1);
            let mut executor_args = vec![
                "executor",
                "--listen",
                "127.0.0.1:0",
                "--control-plane",
                &control_plane,
                "--node-name",
                &name,
            ];
            executor_args.extend(&membership);
            fleet.push(Role::start(&executor_args).await?);
        }
        until_routing(&http, &base, stage).await?;
        let (rate, samples) = throughput(&base, args.concurrency, args.executions).await?;
        println!(
            "| {stage} | {rate:.0} | {} | {} |",
            ms(percentile(&samples, 0.5)),
            ms(percentile(&samples, 0.99))
        );
    }

    // The hop: the same passthrough call through the edge (to a remote
    // executor) and through quiver dev (its executor in-process), alternating.
    // Twice: a client that hears the call live (rmcp's, which sends a
    // progress token: the streamed hop) and one that hears nothing (plain
    // stateless POSTs: the unary hop).
    let through_edge =
        crate::execute_vs_call::connect_url(&format!("{base}/passthrough/mcp")).await?;
    let in_process = dev.connect("passthrough").await?;
    let mut plain_edge = PlainCaller::new(format!("{base}/passthrough/mcp"));
    let mut plain_dev = PlainCaller::new(dev.mode_url("passthrough"));
    let (mut remote, mut local) = (Vec::new(), Vec::new());
    let (mut plain_remote, mut plain_local) = (Vec::new(), Vec::new());
    let n = args.calls / 4;
    for round in 0..4 {
        if round % 2 == 0 {
            remote.extend(forecasts(&through_edge, n).await?);
            local.extend(forecasts(&in_process, n).await?);
            plain_remote.extend(plain_edge.forecasts(n).await?);
            plain_local.extend(plain_dev.forecasts(n).await?);
        } else {
            plain_local.extend(plain_dev.forecasts(n).await?);
            plain_remote.extend(plain_edge.forecasts(n).await?);
            local.extend(forecasts(&in_process, n).await?);
            remote.extend(forecasts(&through_edge, n).await?);
        }
    }
    for samples in [&mut remote, &mut local, &mut plain_remote, &mut plain_local] {
        samples.sort();
    }
    let p50 = |s: &[Duration]| percentile(s, 0.5);
    println!(
        "\n## The edge → executor hop: a passthrough call ({} each, alternating rounds)\n",
        remote.len()
    );
    println!(
        "| client | path | p50 ms | p99 ms | the hop adds (p50 difference; target < 0.5 ms) |"
    );
    println!("|---|---|---:|---:|---:|");
    for (client, hop, remote, local) in [
        ("rmcp session (progress token)", "streamed", &remote, &local),
        (
            "plain 2026-07-28 POSTs (nothing to hear)",
            "unary",
            &plain_remote,
            &plain_local,
        ),
    ] {
        println!(
            "| {client} | `quiver edge` → `quiver executor`, {hop} hop | {} | {} | {} |",
            ms(p50(remote)),
            ms(percentile(remote, 0.99)),
            ms(p50(remote).saturating_sub(p50(local)))
        );
        println!(
            "| {client} | `quiver dev`, executor in-process | {} | {} | |",
            ms(p50(local)),
            ms(percentile(local, 0.99))
        );
    }

    // Death: kill -9 one executor with no traffic; time until the edge no
    // longer lists it as taking work.
    let mut victim = fleet.pop().context("no executor to stop")?;
    let before = taking_work(&executors(&http, &base).await);
    let killed = Instant::now();
    victim.child.start_kill().context("kill -9")?;
    let _ = victim.child.wait().await;
    while taking_work(&executors(&http, &base).await) >= before {
        anyhow::ensure!(
            killed.elapsed() < Duration::from_secs(60),
            "the edge still routes to a dead executor after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("\n## An executor's death (`kill -9`, no traffic)\n");
    println!("| measure | value |");
    println!("|---|---:|");
    let how = if etcd.is_empty() {
        "report expiry, 4 s after its last report, plus the edge's 0.5 s membership poll"
    } else {
        "its etcd lease running out, 3 s after its last keep-alive, then the edge's watch"
    };
    println!(
        "| until the edge stops routing to it ({how}) | {} ms |",
        killed.elapsed().as_millis()
    );
    drop(fleet);
    drop(edge);
    Ok(())
}
