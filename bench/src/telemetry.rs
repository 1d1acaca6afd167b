//! `quiver bench telemetry`: what tracing costs. Two real `quiver dev`
//! processes on the demo catalogue, one with OTLP export off and one
//! exporting every span (100 % sampling, `http/protobuf`) to a collector
//! stand-in in this process that accepts and counts what it receives; the
//! same passthrough call and one-call `execute` are timed against both, in
//! alternating rounds so drift hits both alike.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::Context as _;
use axum::{Router, body::Bytes, extract::State, routing::post};
use clap::Args;
use serde_json::json;

use crate::{
    execute_vs_call::{Dev, call, execute, one_at_a_time},
    executor::{ms, percentile},
};

/// Arguments of `quiver bench telemetry`.
#[derive(Args, Debug)]
pub struct TelemetryBenchArgs {
    /// Requests per round and path.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Alternating rounds (off, on, off, on, …).
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// `OTEL_TRACES_SAMPLER` of the exporting process (`always_off` keeps
    /// the spans but samples none: what creating them costs without export).
    #[arg(long, default_value = "always_on")]
    sampler: String,
}

const TOOL: &str = "weather__get_forecast";
const ONE_CALL: &str = "return await tools.weather.get_forecast({ city: 'Rome' });";

/// What the collector stand-in received.
#[derive(Default)]
struct Received {
    requests: AtomicU64,
    bytes: AtomicU64,
}

async fn accept(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
    received.requests.fetch_add(1, Ordering::Relaxed);
    received
        .bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    ""
}

/// Runs the comparison and prints its table.
pub async fn run(args: TelemetryBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench telemetry` for numbers"
        );
    }
    quiver_upstream::install_crypto_provider();
    let received = Arc::new(Received::default());
    let collector = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the collector stand-in")?;
    let endpoint = format!("http://{}", collector.local_addr()?);
    let app = Router::new()
        .route("/v1/traces", post(accept))
        .route("/v1/metrics", post(accept))
        .route("/v1/logs", post(accept))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(collector, app).await });

    let off = Dev::start_with_env(&[], &[]).await?;
    let on = Dev::start_with_env(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_TRACES_SAMPLER", args.sampler.as_str()),
        ],
    )
    .await?;
    let n = args.iterations.max(1);
    let mut samples: [[Vec<Duration>; 2]; 2] = Default::default();
    let clients = [
        (
            off.connect("passthrough").await?,
            off.connect("code").await?,
        ),
        (on.connect("passthrough").await?, on.connect("code").await?),
    ];
    for (passthrough, code) in &clients {
        for _ in 0..20 {
            call(passthrough, TOOL, json!({ "city": "Rome" })).await?;
            execute(code, ONE_CALL).await?;
        }
    }
    for _ in 0..args.rounds.max(1) {
        for (i, (passthrough, code)) in clients.iter().enumerate() {
            samples[i][0].extend(
                one_at_a_time(n, || call(passthrough, TOOL, json!({ "city": "Rome" }))).await?,
            );
            samples[i][1].extend(one_at_a_time(n, || execute(code, ONE_CALL)).await?);
        }
    }
    // Let the batch processor ship the last spans before counting.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut last = received.requests.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = received.requests.load(Ordering::Relaxed);
        if now == last || tokio::time::Instant::now() > deadline {
            break;
        }
        last = now;
    }

    println!(
        "## Tracing exported at 100 % sampling against export off (`quiver dev`, Streamable HTTP, {} requests per path and setting, {} alternating rounds)\n",
        n * args.rounds.max(1),
        args.rounds.max(1)
    );
    println!("| request | off p50 ms | off p99 ms | on p50 ms | on p99 ms | p50 overhead |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (path, label) in [
        (0, "passthrough call `weather__get_forecast`"),
        (1, "`execute`: one tool call"),
    ] {
        let (off_s, on_s) = (&mut samples[0][path].clone(), &mut samples[1][path].clone());
        off_s.sort();
        on_s.sort();
        let (off50, on50) = (percentile(off_s, 0.5), percentile(on_s, 0.5));
        let overhead = (on50.as_secs_f64() / off50.as_secs_f64().max(1e-9) - 1.0) * 100.0;
        println!(
            "| {label} | {} | {} | {} | {} | {overhead:+.1} % |",
            ms(off50),
            ms(percentile(off_s, 0.99)),
            ms(on50),
            ms(percentile(on_s, 0.99)),
        );
    }
    println!(
        "\nThe collector stand-in received {} OTLP requests ({} KiB) from the exporting process.",
        received.requests.load(Ordering::Relaxed),
        received.bytes.load(Ordering::Relaxed) / 1024
    );
    for (passthrough, code) in clients {
        let _ = passthrough.cancel().await;
        let _ = code.cancel().await;
    }
    Ok(())
}
