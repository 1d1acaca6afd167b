//! `quiver bench …`: benchmarks that print markdown tables for docs/benchmarks.md.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Search quality (Hit@1, Hit@5, MRR: BM25 vs Quiver) and latency over 10,000 tools.
    Search(SearchBenchArgs),
    /// Script execution: warm-pool latency, per-call overhead, throughput, cold start, memory.
    Executor(super::bench_executor::ExecutorBenchArgs),
    /// Control plane: write latency (1 and 3 nodes), watch propagation, failover time.
    ControlPlane(super::bench_control_plane::ControlPlaneBenchArgs),
}

/// Arguments of `quiver bench search`.
#[derive(Args, Debug)]
pub struct SearchBenchArgs {
    /// Folder holding livemcpbench/ and oslook-mcp-servers-schemas/.
    #[arg(long, default_value = "../shared/datasets")]
    datasets: PathBuf,
    /// Labelled queries.
    #[arg(long, default_value = "tests/data/search/queries.json")]
    queries: PathBuf,
    /// Tools in the latency corpus.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Passes over the query set for latency.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
}

/// Runs a benchmark.
pub async fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Search(args) => search(args),
        BenchCommand::Executor(args) => super::bench_executor::run(args).await,
        BenchCommand::ControlPlane(args) => super::bench_control_plane::run(args).await,
    }
}

fn search(args: SearchBenchArgs) -> anyhow::Result<()> {
    use quiver_edge::search::{bench, eval};
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; use `cargo run --release -- bench search` for numbers"
        );
    }
    let report = eval::run(&args.datasets, &args.queries)?;
    println!("## Search quality\n\n{report}");
    let text = std::fs::read_to_string(&args.queries)?;
    let queries: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&text)?
        .iter()
        .filter_map(|q| q.get("query").and_then(|v| v.as_str()).map(str::to_string))
        .collect();
    let latency = bench::latency(&args.datasets, args.tools, &queries, args.iterations);
    println!("## Search latency\n\n{latency}");
    Ok(())
}
