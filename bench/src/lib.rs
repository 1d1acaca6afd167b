//! `quiver-bench` (run as `quiver bench …`): benchmarks that print
//! markdown tables for docs/benchmarks.md. A binary apart from the shipped
//! `quiver`, which it drives as users do (`quiver dev`, `quiver ctl`, the
//! roles) and measures in process where a table says so.

mod backup;
mod catalog;
mod console;
mod control_plane;
mod execute_vs_call;
mod executor;
mod fleet;
mod lexicon;
mod manifest;
mod quiver;
mod revisions;
mod revocation;
mod screening;
mod screening_contextual;
mod screening_detector;
mod sessions;
mod telemetry;
mod tenants;
mod tenants_http;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Quiver's benchmarks (release builds for numbers).
#[derive(Parser)]
#[command(name = "quiver bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

/// Parses the command line and runs the benchmark it names.
pub fn main() -> std::process::ExitCode {
    // The same as `quiver`'s own start: scripts run in process by some
    // tables must never write to (or load from) the engine's on-disk cache.
    let (key, value) = quiver_executor::engine::BYTECODE_CACHE_OFF;
    // SAFETY: no other thread exists yet, so nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var(key, value) };
    let cli = Cli::parse();
    quiver_upstream::install_crypto_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Benchmarks.
#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Search quality (Hit@1, Hit@5, MRR: BM25, lexical, semantic, hybrid) on public
    /// benchmarks and the project's queries, and latency over 10,000 tools.
    Search(SearchBenchArgs),
    /// What the synonym table adds (on against off) on the public
    /// benchmarks' frozen test splits.
    Lexicon(crate::lexicon::LexiconBenchArgs),
    /// Script execution: warm-pool latency, per-call overhead, throughput, cold start, memory.
    Executor(crate::executor::ExecutorBenchArgs),
    /// `execute` against the passthrough call it replaces, end to end through
    /// `quiver dev` over HTTP: ratios, throughput, worker memory, against the targets.
    ExecuteVsCall(crate::execute_vs_call::ExecuteVsCallArgs),
    /// Control plane: write latency (1 and 3 nodes), watch propagation, failover time.
    ControlPlane(crate::control_plane::ControlPlaneBenchArgs),
    /// Tenants: 10,000 tenants over 10,000 tools through a real `quiver dev`
    /// over HTTP (first request, after a manifest change, memory per view,
    /// eviction), and in process: key authentication plus view resolution
    /// per request, and the memory of the views.
    Tenants(crate::tenants::TenantsBenchArgs),
    /// Time from an acknowledged key revocation to the edge's first refusal
    /// of that key, through `quiver dev --auth required`.
    Revocation(crate::revocation::RevocationArgs),
    /// Tracing's cost: passthrough and `execute` latency with every span
    /// exported over OTLP against export off, through `quiver dev`.
    Telemetry(crate::telemetry::TelemetryBenchArgs),
    /// MCP 2026-07-28's stateless requests against a 2025-11-25 session:
    /// `tools/call` and `tools/list` latency through `quiver dev`.
    Revisions(crate::revisions::RevisionsBenchArgs),
    /// The fleet on loopback: `execute` throughput through one edge with 1,
    /// 2 and 4 executors, what the edge → executor hop adds to a call, and
    /// how soon a dead executor stops getting work.
    Fleet(crate::fleet::FleetBenchArgs),
    /// Sessions across edges: what recording 2025-11-25 sessions in etcd
    /// adds to opening one, to each request, and to the first request on
    /// another edge (needs a running etcd).
    Sessions(crate::sessions::SessionsBenchArgs),
    /// Screening of tool definitions: poisoned ones held back and real ones
    /// flagged, on the corpus's frozen splits and the shared datasets, and
    /// the time to screen 10,000 definitions.
    Screening(crate::screening::ScreeningBenchArgs),
    /// Manifest distribution: bytes per change at 10,000 tools, whole
    /// against the delta `WatchManifest` sends, and the time to compute and
    /// apply a delta.
    Manifest(crate::manifest::ManifestBenchArgs),
    /// The web console: its page, sign-in, a page of tools, search and a
    /// declaration at 16, 527, 2,000 and 10,000 tools.
    Console(crate::console::ConsoleBenchArgs),
    /// Control-plane backups at 10,000 tenants, 10,000 tools and a full
    /// audit log: file size, `ctl snapshot save`, checking a file, and a
    /// restore until the node serves.
    Backup(crate::backup::BackupBenchArgs),
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
    /// Public benchmarks: one folder each with tools.json and queries.json.
    #[arg(long, default_value = "tests/data/search/public")]
    public: PathBuf,
    /// Sentence-embedding model directory (default: where scripts/install-model.sh
    /// puts it). Without one, only the lexical rankers are measured.
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Tools in the latency corpus.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Passes over the query set for latency.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
}

/// Runs a benchmark.
async fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Search(args) => search(args),
        BenchCommand::Lexicon(args) => crate::lexicon::run(args),
        BenchCommand::Screening(args) => crate::screening::run(args),
        BenchCommand::Executor(args) => crate::executor::run(args).await,
        BenchCommand::ExecuteVsCall(args) => crate::execute_vs_call::run(args).await,
        BenchCommand::Console(args) => crate::console::run(args).await,
        BenchCommand::ControlPlane(args) => crate::control_plane::run(args).await,
        BenchCommand::Revocation(args) => crate::revocation::run(args).await,
        BenchCommand::Tenants(args) => crate::tenants::run(args).await,
        BenchCommand::Telemetry(args) => crate::telemetry::run(args).await,
        BenchCommand::Revisions(args) => crate::revisions::run(args).await,
        BenchCommand::Fleet(args) => crate::fleet::run(args).await,
        BenchCommand::Sessions(args) => crate::sessions::run(args).await,
        BenchCommand::Manifest(args) => crate::manifest::run(args),
        BenchCommand::Backup(args) => crate::backup::run(args).await,
    }
}

fn search(args: SearchBenchArgs) -> anyhow::Result<()> {
    use quiver_view::search::{SemanticModel, bench, eval, semantic};
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench search` for numbers"
        );
    }
    let model_dir = args.model_dir.clone().or_else(semantic::default_model_dir);
    let model = match &model_dir {
        // Every query embedded: the latency is the embedding's, not a cache's.
        Some(dir) => match SemanticModel::load(dir, None) {
            Ok(model) => Some(std::sync::Arc::new(model.with_query_cache(0))),
            Err(e) => {
                eprintln!("no semantic rankers: {e:#}");
                None
            }
        },
        None => None,
    };
    if let Some(dir) = &model_dir {
        let adapter = model
            .as_ref()
            .and_then(|m| m.adapter())
            .map_or("none".to_owned(), |a| a.name().to_owned());
        let kernel = model.as_ref().map_or("none", |m| m.embedder().kernel());
        println!(
            "model: {} (encoder kernel {kernel}, query adapter {adapter})\n",
            dir.display()
        );
    }
    let mut public: Vec<PathBuf> = std::fs::read_dir(&args.public)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", args.public.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("queries.json")))
        .filter(|p| p.exists())
        .collect();
    public.sort();
    // Every table twice when the query adapter applies: as served, then
    // with the model's raw query vectors (issue 55's before and after).
    let mut variants = vec![("", model.clone())];
    if model.as_ref().is_some_and(|m| m.adapter().is_some())
        && let Some(dir) = &model_dir
    {
        let raw = SemanticModel::load(dir, None)?
            .with_query_cache(0)
            .with_adapter(None);
        variants.push((
            ", without the query adapter",
            Some(std::sync::Arc::new(raw)),
        ));
    }
    for (label, model) in &variants {
        for queries in &public {
            let report = eval::run(&args.datasets, queries, model.as_ref())?;
            println!(
                "## Search quality{label}: {}\n\n{report}",
                queries.display()
            );
        }
        let report = eval::run(&args.datasets, &args.queries, model.as_ref())?;
        println!(
            "## Search quality{label}: the project's queries (tune and frozen test split)\n\n{report}"
        );
    }
    let queries: Vec<String> = eval::load_queries(&args.queries)?
        .into_iter()
        .map(|q| q.query)
        .collect();
    let catalogues: Vec<PathBuf> = public
        .iter()
        .map(|q| q.with_file_name("tools.json"))
        .collect();
    let latency = bench::latency(
        &args.datasets,
        &catalogues,
        args.tools,
        &queries,
        args.iterations,
        model.as_ref(),
    );
    println!("## Search latency\n\n{latency}");
    Ok(())
}
