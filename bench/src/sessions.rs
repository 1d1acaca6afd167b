//! `quiver bench sessions`: what keeping 2025-11-25 sessions in etcd costs
//! per request. Real processes on loopback: `quiver dev` (the control plane,
//! demo catalogue; its own edge keeps sessions in memory only), and two
//! `quiver edge`s with `--etcd` (sessions recorded) beside one executor.
//! Plain HTTP requests, so that each names the edge it goes to:
//! - opening a session (`initialize` and `notifications/initialized`): the
//!   fleet edge writes the record (an etcd lease and a put);
//! - `tools/list` in a session on the edge that holds it (the record's idle
//!   time restarted at most once per quarter of it, in the background), and
//!   the same on `quiver dev`'s edge, where nothing is recorded;
//! - the same request on the other edge: the record read (the first time;
//!   then as the watch keeps it), the tenant checked, the request handed to
//!   the holder;
//! - after the holder is killed, the first request of each of its sessions
//!   on the other edge: taken up (holder rewritten, handshake replayed).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde_json::{Value, json};

use crate::{
    execute_vs_call::Dev,
    executor::{ms, percentile},
    fleet::{Role, until_routing},
};

/// Arguments of `quiver bench sessions`.
#[derive(Args, Debug)]
pub struct SessionsBenchArgs {
    /// etcd endpoints (`host:port`) the fleet's edges record sessions in.
    /// Start one with Debian's `etcd` first.
    #[arg(long, value_delimiter = ',', required = true)]
    etcd: Vec<String>,
    /// Sessions opened per edge (each also taken up by the other edge).
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// `tools/list` requests per edge in sessions it holds.
    #[arg(long, default_value_t = 400)]
    requests: usize,
}

const REVISION: &str = "2025-11-25";

/// One POST; its session id header, when it gave one.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> anyhow::Result<Option<String>> {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .json(body);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await?;
    anyhow::ensure!(
        status.is_success() && !text.contains("\"error\""),
        "{url}: HTTP {status}: {text}"
    );
    Ok(id)
}

/// Opens a session at `url`; its id.
async fn open(http: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": REVISION, "capabilities": {},
        "clientInfo": {"name": "bench-sessions", "version": "1"}}});
    let id = post(http, url, None, &initialize)
        .await?
        .context("initialize gave no session id")?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(http, url, Some(&id), &initialized).await?;
    Ok(id)
}

/// One `tools/list` in session `id` at `url`.
async fn list(http: &reqwest::Client, url: &str, id: &str) -> anyhow::Result<()> {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    post(http, url, Some(id), &list).await.map(|_| ())
}

/// How long `f` took.
async fn timed<T>(f: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<(T, Duration)> {
    let started = Instant::now();
    let value = f.await?;
    Ok((value, started.elapsed()))
}

/// One table row: `label`, how many, p50 and p99.
fn row(label: &str, samples: &mut [Duration]) {
    samples.sort();
    println!(
        "| {label} | {} | {} | {} |",
        samples.len(),
        ms(percentile(samples, 0.5)),
        ms(percentile(samples, 0.99))
    );
}

/// Runs the measurement and prints its table.
pub async fn run(args: SessionsBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; numbers are only meaningful from a release build");
    }
    let dev = Dev::start_with(&[]).await?;
    let control_plane = dev.control_plane()?;
    let etcd = args.etcd.join(",");
    let _executor = Role::start(&[
        "executor",
        "--listen",
        "127.0.0.1:0",
        "--control-plane",
        &control_plane,
        "--node-name",
        "bench-sessions-executor",
        "--etcd",
        &etcd,
    ])
    .await?;
    let edge_args = [
        "edge",
        "--listen",
        "127.0.0.1:0",
        "--control-plane",
        &control_plane,
        "--etcd",
        &etcd,
    ];
    let (edge_a, edge_b) = (
        Role::start(&edge_args).await?,
        Role::start(&edge_args).await?,
    );
    let http = reqwest::Client::new();
    let bases = [edge_a.base()?, edge_b.base()?];
    for base in &bases {
        until_routing(&http, base, 1).await?;
    }
    let fleet: Vec<String> = bases
        .iter()
        .map(|b| format!("{b}/passthrough/mcp"))
        .collect();
    let local = format!("{}/passthrough/mcp", dev.base);
    // Warm both paths.
    for url in fleet.iter().chain([&local]) {
        let id = open(&http, url).await?;
        for _ in 0..20 {
            list(&http, url, &id).await?;
        }
    }

    let n = args.sessions.max(1);
    let (mut opened_fleet, mut opened_local) = (Vec::new(), Vec::new());
    let (mut first_elsewhere, mut held_fleet, mut forwarded, mut held_local) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // (holder's index, id)
    let mut sessions = Vec::new();
    for i in 0..n {
        // Alternate, so drift hits both alike.
        let (from, to) = (i % 2, (i + 1) % 2);
        let (id, took) = timed(open(&http, &fleet[from])).await?;
        opened_fleet.push(took);
        let ((), took) = timed(list(&http, &fleet[to], &id)).await?;
        first_elsewhere.push(took);
        sessions.push((from, id));
        let (_, took) = timed(open(&http, &local)).await?;
        opened_local.push(took);
    }
    let local_id = open(&http, &local).await?;
    for i in 0..args.requests.max(1) {
        let (holder, id) = &sessions[i % sessions.len()];
        let ((), took) = timed(list(&http, &fleet[*holder], id)).await?;
        held_fleet.push(took);
        let ((), took) = timed(list(&http, &fleet[(holder + 1) % 2], id)).await?;
        forwarded.push(took);
        let ((), took) = timed(list(&http, &local, &local_id)).await?;
        held_local.push(took);
    }
    // The first edge dies (SIGKILL); the second takes its sessions up.
    drop(edge_a);
    let mut taken_up = Vec::new();
    for (_, id) in sessions.iter().filter(|(holder, _)| *holder == 0) {
        let ((), took) = timed(list(&http, &fleet[1], id)).await?;
        taken_up.push(took);
    }

    println!(
        "## Sessions across edges: the cost per request (demo catalogue, passthrough `tools/list`, {n} sessions)\n"
    );
    println!("| request | n | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|");
    row(
        "open a session, fleet edge (its record written to etcd)",
        &mut opened_fleet,
    );
    row(
        "open a session, `quiver dev` (nothing recorded)",
        &mut opened_local,
    );
    row("in a session, on the edge that holds it", &mut held_fleet);
    row("in a session, `quiver dev`", &mut held_local);
    row(
        "in a session, first request on the other edge (record read, handed to the holder)",
        &mut first_elsewhere,
    );
    row(
        "in a session, on the other edge (handed to the holder)",
        &mut forwarded,
    );
    row(
        "in a session whose edge was killed, first request on the other (taken up: holder rewritten, handshake replayed)",
        &mut taken_up,
    );
    Ok(())
}
