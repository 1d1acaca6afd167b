//! `quiver bench execute-vs-call`: what code mode's `execute` costs next to
//! the passthrough call it replaces, end to end at the edge. It starts a real
//! `quiver dev` (demo catalogue, mock upstreams over stdio, the in-process
//! executor with its worker pool) and drives it over Streamable HTTP with rmcp
//! clients, as an agent would; every figure comes from that one run.

use std::{
    path::PathBuf,
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

use crate::executor::{ms, percentile, rss_kib};

/// Arguments of `quiver bench execute-vs-call`.
#[derive(Args, Debug)]
pub struct ExecuteVsCallArgs {
    /// Visible tools of each run, comma-separated: the demo catalogue's 16,
    /// then the real catalogue's tools copied as needed (see `--catalog`).
    #[arg(long, value_delimiter = ',', default_value = "16,527,2000,10000")]
    tools: Vec<usize>,
    /// The real catalogue the larger sizes are made of.
    #[arg(long, default_value = crate::catalog::DEFAULT_SOURCE)]
    catalog: PathBuf,
    /// Requests per latency measurement.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Trivial executions in the throughput measurement.
    #[arg(long, default_value_t = 800)]
    throughput_runs: usize,
    /// Sessions sending at once in the throughput measurement.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Rounds over every size, in alternating order (a slow spell of the
    /// machine then lands on every size); each size's samples are pooled.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Sizes measured a second time with the real servers' copies spread
    /// over more upstream servers (`--spread-groups` per real server), so
    /// the catalogue is also hundreds of processes.
    #[arg(long, value_delimiter = ',', default_value = "2000,10000")]
    spread_sizes: Vec<usize>,
    /// Upstream servers each real server's copies are spread over in the
    /// `--spread-sizes` runs.
    #[arg(long, default_value_t = 4)]
    spread_groups: usize,
    /// The pause between an answer and the next request in the paced
    /// measurement (an agent thinks between calls; the machine is idle then).
    #[arg(long, default_value = "10ms", value_parser = humantime::parse_duration)]
    pause: Duration,
}

/// One catalogue a run serves: its size and how many servers it is spread on.
struct Setup {
    tools: usize,
    catalog: Option<PathBuf>,
    /// Upstream servers (processes) it has.
    servers: usize,
}

impl Setup {
    /// `visible` of its tools listed, on its servers.
    fn label(&self, visible: usize) -> String {
        format!("{visible} ({} servers)", self.servers)
    }
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
    /// The control plane's address, from the startup line.
    pub(crate) fn control_plane(&self) -> anyhow::Result<String> {
        Ok(self
            .banner
            .split("control plane ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .with_context(|| format!("no control-plane address in: {}", self.banner))?
            .to_string())
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
        let exe = crate::quiver::binary()?;
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
        self.worker_pids().into_iter().filter_map(rss_kib).collect()
    }

    /// Private memory (MiB) of the process a script runs in, read while a
    /// script that waits 400 ms runs (`None` when none was seen: a worker
    /// that does not fork runs scripts on a thread of its own).
    async fn script_process_private_mib(&self, code: &Client) -> Option<f64> {
        let workers: Vec<u32> = self.worker_pids();
        let waiting = execute(
            code,
            "await new Promise((resolve) => setTimeout(resolve, 400)); return 1;",
        );
        tokio::pin!(waiting);
        let mut largest: Option<u64> = None;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            tokio::select! {
                _ = &mut waiting => break,
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            for pid in children_of(&workers) {
                // A spare waiting for its job has not run anything: only a
                // process that has grown past it is running the script.
                if let Some(kib) = private_kib(pid) {
                    largest = Some(largest.map_or(kib, |l| l.max(kib)));
                }
            }
            if tokio::time::Instant::now() > deadline {
                break;
            }
        }
        largest.map(|kib| kib as f64 / 1024.0)
    }

    /// Waits until the dev process's own CPU time holds still (under 5 % of
    /// a core for three seconds in a row, at most five minutes): background
    /// work (the catalogue's embedding, discovery) has settled and does not
    /// share the machine with the measurements.
    pub(crate) async fn settle_cpu(&self) {
        let Some(pid) = self.child.id() else {
            return;
        };
        let cpu_seconds = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            // utime and stime are the 14th and 15th fields: 12th and 13th after `)`.
            let utime: f64 = fields.nth(11)?.parse().ok()?;
            let stime: f64 = fields.next()?.parse().ok()?;
            // In clock ticks of USER_HZ, which Linux reports as 100 a second.
            Some((utime + stime) / 100.0)
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut quiet = 0;
        let mut last = cpu_seconds();
        while quiet < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = cpu_seconds();
            quiet = match (last, now) {
                (Some(before), Some(after)) if after - before < 0.05 => quiet + 1,
                _ => 0,
            };
            last = now;
        }
    }

    /// Process ids of the dev process's workers.
    fn worker_pids(&self) -> Vec<u32> {
        let Some(parent) = self.child.id() else {
            return Vec::new();
        };
        processes()
            .filter(|pid| is_worker_of(*pid, parent))
            .collect()
    }
}

/// Every process id on the machine.
fn processes() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
}

/// Children of any of `parents`.
fn children_of(parents: &[u32]) -> Vec<u32> {
    processes()
        .filter(|pid| parent_of(*pid).is_some_and(|p| parents.contains(&p)))
        .collect()
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok())
}

/// Private (clean and dirty) memory of `pid`, KiB: what a forked process
/// costs beyond the pages it still shares with its parent.
fn private_kib(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |name: &str| {
        rollup
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some(field("Private_Clean:")? + field("Private_Dirty:")?)
}

/// An MCP session with the endpoint at `url`.
pub(crate) async fn connect_url(url: &str) -> anyhow::Result<Client> {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .with_context(|| format!("connecting to {url}"))
}

fn is_worker_of(pid: u32, parent: u32) -> bool {
    // Fields after the command name (which may hold spaces) start at the last `)`.
    let ppid = parent_of(pid);
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

/// What one run (one catalogue size) measured.
struct SizeRun {
    label: String,
    direct: Vec<Duration>,
    direct_paced: Vec<Duration>,
    one_paced: Vec<Duration>,
    one: Vec<Duration>,
    parallel: Vec<Duration>,
    sequential: Vec<Duration>,
    trivial: Vec<Duration>,
    rate: f64,
    burst: Vec<Duration>,
    worker_mib: f64,
    workers: usize,
    script_private_mib: Option<f64>,
    /// Each round's own figures, to show how far rounds differ.
    rounds: Vec<RoundFigures>,
}

/// One round's headline figures for one catalogue.
#[derive(Clone, Copy)]
struct RoundFigures {
    direct_ms: f64,
    one_ms: f64,
    parallel_ms: f64,
    rate: f64,
}

impl SizeRun {
    /// This run's figures as its round's.
    fn with_its_round(mut self) -> SizeRun {
        let p50 = |s: &[Duration]| percentile(s, 0.5).as_secs_f64() * 1000.0;
        self.rounds.push(RoundFigures {
            direct_ms: p50(&self.direct),
            one_ms: p50(&self.one),
            parallel_ms: p50(&self.parallel),
            rate: self.rate,
        });
        self
    }
}

/// `(max - min) / min` of `values`, in percent.
fn spread_percent(values: impl Iterator<Item = f64>) -> f64 {
    let (low, high) = values.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if low <= 0.0 || low == f64::MAX {
        return 0.0;
    }
    (high / low - 1.0) * 100.0
}

impl SizeRun {
    /// This run's samples and another's of the same size together.
    fn pooled_with(mut self, other: SizeRun) -> SizeRun {
        self.rounds.extend(other.rounds.iter().copied());
        let pool = |mut a: Vec<Duration>, b: Vec<Duration>| {
            a.extend(b);
            a.sort();
            a
        };
        self.direct = pool(self.direct, other.direct);
        self.direct_paced = pool(self.direct_paced, other.direct_paced);
        self.one_paced = pool(self.one_paced, other.one_paced);
        self.one = pool(self.one, other.one);
        self.parallel = pool(self.parallel, other.parallel);
        self.sequential = pool(self.sequential, other.sequential);
        self.trivial = pool(self.trivial, other.trivial);
        self.burst = pool(self.burst, other.burst);
        self.rate = (self.rate + other.rate) / 2.0;
        self.worker_mib = (self.worker_mib + other.worker_mib) / 2.0;
        self.script_private_mib = match (self.script_private_mib, other.script_private_mib) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self
    }
}

/// Runs the comparison at every size and prints its tables.
pub async fn run(args: ExecuteVsCallArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench execute-vs-call` for numbers"
        );
    }
    quiver_upstream::install_crypto_provider();
    let dir = tempfile::tempdir().context("a directory for the catalogues")?;
    let mut setups = Vec::new();
    let spread = args.tools.iter().map(|&tools| (tools, 1)).chain(
        args.spread_sizes
            .iter()
            .map(|&tools| (tools, args.spread_groups)),
    );
    for (tools, groups) in spread {
        let catalog = crate::catalog::scaled_catalog_on(&args.catalog, tools, dir.path(), groups)?;
        let servers = match &catalog {
            Some(path) => quiver_proto::catalog::Catalog::load(path, "default")
                .with_context(|| format!("reading back {}", path.display()))?
                .servers
                .len(),
            None => crate::catalog::demo_servers()?,
        };
        setups.push(Setup {
            tools,
            catalog,
            servers,
        });
    }
    let mut runs: Vec<Option<SizeRun>> = setups.iter().map(|_| None).collect();
    for round in 0..args.rounds.max(1) {
        let mut order: Vec<usize> = (0..setups.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let setup = &setups[i];
            eprintln!(
                "bench execute-vs-call: round {}, {} visible tools on {} servers",
                round + 1,
                setup.tools,
                setup.servers
            );
            let measured = run_size(&args, setup).await?;
            runs[i] = Some(match runs[i].take() {
                Some(earlier) => earlier.pooled_with(measured),
                None => measured,
            });
        }
    }
    let runs: Vec<SizeRun> = runs.into_iter().flatten().collect();
    let n = args.iterations.max(1) * args.rounds.max(1);
    println!(
        "## `execute` against the passthrough call it replaces, by visible tools (`quiver dev`, Streamable HTTP, p50 of {n} requests one at a time; throughput: trivial scripts from {} sessions at once, the mean of {} rounds)\n",
        args.concurrency,
        args.rounds.max(1)
    );
    println!(
        "| visible tools (upstream servers) | passthrough call | `execute`, 1 call | × | `execute`, 10 parallel | × | per call in a script | trivial `execute` | trivial executions/s | p99 at that rate | idle worker RSS | script process (private) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let p50 = |s: &[Duration]| percentile(s, 0.5);
    for r in &runs {
        let ratio = |s: &[Duration]| p50(s).as_secs_f64() / p50(&r.direct).as_secs_f64().max(1e-9);
        let per_call = p50(&r.sequential).saturating_sub(p50(&r.one)) / 9;
        println!(
            "| {} | {} ms | {} ms | {:.1}× | {} ms | {:.1}× | {} ms | {} ms | {:.0} | {} ms | {:.1} MiB (×{}) | {} |",
            r.label,
            ms(p50(&r.direct)),
            ms(p50(&r.one)),
            ratio(&r.one),
            ms(p50(&r.parallel)),
            ratio(&r.parallel),
            ms(per_call),
            ms(p50(&r.trivial)),
            r.rate,
            ms(percentile(&r.burst, 0.99)),
            r.worker_mib,
            r.workers,
            r.script_private_mib
                .map_or("-".to_string(), |m| format!("{m:.1} MiB")),
        );
    }
    println!(
        "\n## Paced: {} between an answer and the next request (an agent between calls), p50 of {n}\n",
        humantime::format_duration(args.pause)
    );
    println!("| visible tools (upstream servers) | passthrough call | `execute`, 1 call | × |");
    println!("|---|---:|---:|---:|");
    for r in &runs {
        println!(
            "| {} | {} ms | {} ms | {:.1}× |",
            r.label,
            ms(p50(&r.direct_paced)),
            ms(p50(&r.one_paced)),
            p50(&r.one_paced).as_secs_f64() / p50(&r.direct_paced).as_secs_f64().max(1e-9)
        );
    }
    if let Some(base) = runs.first() {
        println!(
            "\n## Against the smallest catalogue ({}) in the same run: within 10 %\n",
            base.label
        );
        println!(
            "| visible tools (upstream servers) | `execute`, 1 call | `execute`, 10 parallel | trivial executions/s | within 10 % |"
        );
        println!("|---|---:|---:|---:|---|");
        let change = |now: f64, then: f64| (now / then.max(1e-12) - 1.0) * 100.0;
        for r in &runs {
            let one = change(p50(&r.one).as_secs_f64(), p50(&base.one).as_secs_f64());
            let parallel = change(
                p50(&r.parallel).as_secs_f64(),
                p50(&base.parallel).as_secs_f64(),
            );
            let rate = change(r.rate, base.rate);
            let met = one <= 10.0 && parallel <= 10.0 && rate >= -10.0;
            println!(
                "| {} | {one:+.1} % | {parallel:+.1} % | {rate:+.1} % | {} |",
                r.label,
                if met { "yes" } else { "no" }
            );
        }
    }
    println!("\n## The fixed-cost targets (issue 57)\n");
    println!(
        "| visible tools (upstream servers) | 1 call ≤ 2× passthrough | 10 parallel ≤ 3× | ≥ 1,000 trivial/s | p99 ≤ 20 ms |"
    );
    println!("|---|---|---|---|---|");
    let yes = |met: bool| if met { "yes" } else { "no" };
    for r in &runs {
        let ratio = |s: &[Duration]| p50(s).as_secs_f64() / p50(&r.direct).as_secs_f64().max(1e-9);
        println!(
            "| {} | {} ({:.1}×) | {} ({:.1}×) | {} ({:.0}/s) | {} ({} ms) |",
            r.label,
            yes(ratio(&r.one) <= 2.0),
            ratio(&r.one),
            yes(ratio(&r.parallel) <= 3.0),
            ratio(&r.parallel),
            yes(r.rate >= 1000.0),
            r.rate,
            yes(percentile(&r.burst, 0.99) <= Duration::from_millis(20)),
            ms(percentile(&r.burst, 0.99)),
        );
    }
    println!(
        "\n## Round to round: how far the {} rounds differ ((max − min) / min)\n",
        args.rounds.max(1)
    );
    println!(
        "| visible tools (upstream servers) | passthrough call p50 | `execute`, 1 call p50 | `execute`, 10 parallel p50 | trivial executions/s | within 20 % |"
    );
    println!("|---|---|---|---|---|---|");
    for r in &runs {
        let spread = |f: fn(&RoundFigures) -> f64| spread_percent(r.rounds.iter().map(f));
        let range = |f: fn(&RoundFigures) -> f64, unit: &str| {
            let values: Vec<f64> = r.rounds.iter().map(f).collect();
            let low = values.iter().copied().fold(f64::MAX, f64::min);
            let high = values.iter().copied().fold(f64::MIN, f64::max);
            format!("{low:.2}–{high:.2}{unit} ({:.0} %)", spread(f))
        };
        let within = [
            spread(|f| f.one_ms),
            spread(|f| f.parallel_ms),
            spread(|f| f.rate),
        ]
        .iter()
        .all(|s| *s <= 20.0);
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.label,
            range(|f| f.direct_ms, " ms"),
            range(|f| f.one_ms, " ms"),
            range(|f| f.parallel_ms, " ms"),
            range(|f| f.rate, "/s"),
            yes(within)
        );
    }
    Ok(())
}

/// Waits until every upstream was discovered (passthrough lists `tools`
/// tools), so no measurement runs while the manifest is still changing.
pub(crate) async fn wait_for_tools(passthrough: &Client, tools: usize) -> anyhow::Result<()> {
    listed_tools(passthrough, tools, false).await.map(|_| ())
}

/// Waits until passthrough lists `tools` tools, or holds still at nine
/// tenths of them or more for 20 s (screening holds back copies whose
/// descriptions name tools that copying put on another server); how many
/// it lists.
async fn wait_for_most_tools(passthrough: &Client, tools: usize) -> anyhow::Result<usize> {
    listed_tools(passthrough, tools, true).await
}

/// How many tools passthrough lists once it lists `tools`, or (with
/// `most`) once it has held still at nine tenths of them or more for 20 s.
async fn listed_tools(passthrough: &Client, tools: usize, most: bool) -> anyhow::Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut last = (0, Instant::now());
    loop {
        let listed = passthrough.list_all_tools().await.map_or(0, |t| t.len());
        if listed >= tools {
            return Ok(listed);
        }
        if listed != last.0 {
            last = (listed, Instant::now());
        } else if most && listed * 10 >= tools * 9 && last.1.elapsed() > Duration::from_secs(20) {
            return Ok(listed);
        }
        if Instant::now() > deadline {
            bail!("quiver dev listed {listed} of {tools} tools after 300 s");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One `quiver dev` over the setup's catalogue (the demo when it has none), measured.
async fn run_size(args: &ExecuteVsCallArgs, setup: &Setup) -> anyhow::Result<SizeRun> {
    let tools = setup.tools;
    let mut extra: Vec<String> = Vec::new();
    if let Some(catalog) = &setup.catalog {
        extra.push("--catalog".into());
        extra.push(catalog.display().to_string());
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let dev = Dev::start_with(&extra).await?;
    let passthrough = dev.connect("passthrough").await?;
    let visible = wait_for_most_tools(&passthrough, tools).await?;
    let code = dev.connect("code").await?;
    let n = args.iterations.max(1);

    dev.settle_cpu().await;
    // Warm both paths (connections, the worker pool, the upstream's process,
    // the view's indexes).
    for _ in 0..20 {
        call(&passthrough, TOOL, json!({ "city": "Rome" })).await?;
        execute(&code, ONE_CALL).await?;
    }

    let direct = one_at_a_time(n, || call(&passthrough, TOOL, json!({ "city": "Rome" }))).await?;
    let one = one_at_a_time(n, || execute(&code, ONE_CALL)).await?;
    let parallel = one_at_a_time(n, || execute(&code, TEN_PARALLEL)).await?;
    let sequential = one_at_a_time(n, || execute(&code, TEN_SEQUENTIAL)).await?;
    let trivial = one_at_a_time(n, || execute(&code, TRIVIAL)).await?;
    let direct_paced = paced(n, args.pause, || {
        call(&passthrough, TOOL, json!({ "city": "Rome" }))
    })
    .await?;
    let one_paced = paced(n, args.pause, || execute(&code, ONE_CALL)).await?;
    let idle_rss = dev.worker_rss();
    let script_private_mib = dev.script_process_private_mib(&code).await;

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
    let _ = passthrough.cancel().await;
    let _ = code.cancel().await;
    drop(dev);
    Ok(SizeRun {
        label: setup.label(visible),
        direct,
        direct_paced,
        one_paced,
        one,
        parallel,
        sequential,
        trivial,
        rate,
        burst,
        worker_mib: mean_mib(&idle_rss),
        workers: idle_rss.len(),
        script_private_mib,
        rounds: Vec::new(),
    }
    .with_its_round())
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
