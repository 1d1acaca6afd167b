//! `quiver bench revisions`: what MCP 2026-07-28's stateless requests cost at
//! the edge next to a 2025-11-25 session. One real `quiver dev` (demo
//! catalogue, mock upstreams over stdio); two rmcp clients at the passthrough
//! endpoint, one that opened a session with `initialize` and one that
//! discovered the edge with `server/discover` and sends its version, client
//! and capabilities in every request's `_meta` (a fresh handler bound to its
//! tenant per request). The same `tools/list` and `tools/call` are timed for
//! both, in alternating rounds so drift hits both alike.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use rmcp::{
    model::ProtocolVersion,
    service::{ClientLifecycleMode, ClientServiceExt as _},
    transport::StreamableHttpClientTransport,
};
use serde_json::json;

use crate::{
    execute_vs_call::{Client, Dev, call},
    executor::{ms, percentile},
};

/// Arguments of `quiver bench revisions`.
#[derive(Args, Debug)]
pub struct RevisionsBenchArgs {
    /// Requests per round, path and revision.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Alternating rounds (session, stateless, session, …).
    #[arg(long, default_value_t = 4)]
    rounds: usize,
}

const TOOL: &str = "weather__get_forecast";

/// A client of MCP 2026-07-28 at `url`.
async fn connect_stateless(url: &str) -> anyhow::Result<Client> {
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_uri(url.to_string()),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .with_context(|| format!("discovering {url}"))
}

/// Latencies of `n` `tools/list` requests one after another.
async fn listings(client: &Client, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let tools = client.list_all_tools().await.context("tools/list")?;
        anyhow::ensure!(!tools.is_empty(), "tools/list answered no tools");
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// Latencies of `n` `tools/call` requests one after another.
async fn calls(client: &Client, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        call(client, TOOL, json!({ "city": "Rome" })).await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// Runs the comparison and prints its table.
pub async fn run(args: RevisionsBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench revisions` for numbers"
        );
    }
    quiver_upstream::install_crypto_provider();
    let dev = Dev::start_with(&[]).await?;
    let url = format!("{}/passthrough/mcp", dev.base);
    let clients = [
        dev.connect("passthrough").await?,
        connect_stateless(&url).await?,
    ];
    for client in &clients {
        calls(client, 20).await?;
        listings(client, 5).await?;
    }
    let n = args.iterations.max(1);
    // [revision][path]: path 0 tools/call, 1 tools/list.
    let mut samples: [[Vec<Duration>; 2]; 2] = Default::default();
    for _ in 0..args.rounds.max(1) {
        for (i, client) in clients.iter().enumerate() {
            samples[i][0].extend(calls(client, n).await?);
            samples[i][1].extend(listings(client, n.div_ceil(4)).await?);
        }
    }
    println!(
        "## MCP 2026-07-28 (stateless) against 2025-11-25 (session) at the edge (`quiver dev`, passthrough, demo catalogue of 16 tools, {} alternating rounds)\n",
        args.rounds.max(1)
    );
    println!(
        "| request | session p50 ms | session p99 ms | stateless p50 ms | stateless p99 ms | p50 difference |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (path, label) in [
        (0, "`tools/call weather__get_forecast`"),
        (1, "`tools/list` (all 16)"),
    ] {
        let (session, stateless) = (&mut samples[0][path].clone(), &mut samples[1][path].clone());
        session.sort();
        stateless.sort();
        let (s50, t50) = (percentile(session, 0.5), percentile(stateless, 0.5));
        let difference = (t50.as_secs_f64() / s50.as_secs_f64().max(1e-9) - 1.0) * 100.0;
        println!(
            "| {label} ({} each) | {} | {} | {} | {} | {difference:+.1} % |",
            session.len(),
            ms(s50),
            ms(percentile(session, 0.99)),
            ms(t50),
            ms(percentile(stateless, 0.99)),
        );
    }
    for client in clients {
        let _ = client.cancel().await;
    }
    Ok(())
}
