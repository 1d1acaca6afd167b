//! `quiver bench …`: benchmarks that print markdown tables for docs/benchmarks.md.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Search quality (Hit@1, Hit@5, MRR: BM25, lexical, semantic, hybrid) on public
    /// benchmarks and the project's queries, and latency over 10,000 tools.
    Search(SearchBenchArgs),
    /// What the synonym table adds (on against off) on the public
    /// benchmarks' frozen test splits.
    Lexicon(super::bench_lexicon::LexiconBenchArgs),
    /// Script execution: warm-pool latency, per-call overhead, throughput, cold start, memory.
    Executor(super::bench_executor::ExecutorBenchArgs),
    /// `execute` against the passthrough call it replaces, end to end through
    /// `quiver dev` over HTTP: ratios, throughput, worker memory, against the targets.
    ExecuteVsCall(super::bench_execute_vs_call::ExecuteVsCallArgs),
    /// Control plane: write latency (1 and 3 nodes), watch propagation, failover time.
    ControlPlane(super::bench_control_plane::ControlPlaneBenchArgs),
    /// Tenants: 10,000 tenants over 10,000 tools through a real `quiver dev`
    /// over HTTP (first request, after a manifest change, memory per view,
    /// eviction), and in process: key authentication plus view resolution
    /// per request, and the memory of the views.
    Tenants(super::bench_tenants::TenantsBenchArgs),
    /// Time from an acknowledged key revocation to the edge's first refusal
    /// of that key, through `quiver dev --auth required`.
    Revocation(super::bench_revocation::RevocationArgs),
    /// Tracing's cost: passthrough and `execute` latency with every span
    /// exported over OTLP against export off, through `quiver dev`.
    Telemetry(super::bench_telemetry::TelemetryBenchArgs),
    /// MCP 2026-07-28's stateless requests against a 2025-11-25 session:
    /// `tools/call` and `tools/list` latency through `quiver dev`.
    Revisions(super::bench_revisions::RevisionsBenchArgs),
    /// The fleet on loopback: `execute` throughput through one edge with 1,
    /// 2 and 4 executors, what the edge → executor hop adds to a call, and
    /// how soon a dead executor stops getting work.
    Fleet(super::bench_fleet::FleetBenchArgs),
    /// Sessions across edges: what recording 2025-11-25 sessions in etcd
    /// adds to opening one, to each request, and to the first request on
    /// another edge (needs a running etcd).
    Sessions(super::bench_sessions::SessionsBenchArgs),
    /// Screening of tool definitions: poisoned ones held back and real ones
    /// flagged, on the corpus's frozen splits and the shared datasets, and
    /// the time to screen 10,000 definitions.
    Screening(super::bench_screening::ScreeningBenchArgs),
    /// Manifest distribution: bytes per change at 10,000 tools, whole
    /// against the delta `WatchManifest` sends, and the time to compute and
    /// apply a delta.
    Manifest(super::bench_manifest::ManifestBenchArgs),
    /// The web console: its page, sign-in, a page of tools, search and a
    /// declaration at 16, 527, 2,000 and 10,000 tools.
    Console(super::bench_console::ConsoleBenchArgs),
    /// Control-plane backups at 10,000 tenants, 10,000 tools and a full
    /// audit log: file size, `ctl snapshot save`, checking a file, and a
    /// restore until the node serves.
    Backup(super::bench_backup::BackupBenchArgs),
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
pub async fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Search(args) => search(args),
        BenchCommand::Lexicon(args) => super::bench_lexicon::run(args),
        BenchCommand::Screening(args) => super::bench_screening::run(args),
        BenchCommand::Executor(args) => super::bench_executor::run(args).await,
        BenchCommand::ExecuteVsCall(args) => super::bench_execute_vs_call::run(args).await,
        BenchCommand::Console(args) => super::bench_console::run(args).await,
        BenchCommand::ControlPlane(args) => super::bench_control_plane::run(args).await,
        BenchCommand::Revocation(args) => super::bench_revocation::run(args).await,
        BenchCommand::Tenants(args) => super::bench_tenants::run(args).await,
        BenchCommand::Telemetry(args) => super::bench_telemetry::run(args).await,
        BenchCommand::Revisions(args) => super::bench_revisions::run(args).await,
        BenchCommand::Fleet(args) => super::bench_fleet::run(args).await,
        BenchCommand::Sessions(args) => super::bench_sessions::run(args).await,
        BenchCommand::Manifest(args) => super::bench_manifest::run(args),
        BenchCommand::Backup(args) => super::bench_backup::run(args).await,
    }
}

fn search(args: SearchBenchArgs) -> anyhow::Result<()> {
    use quiver_edge::search::{SemanticModel, bench, eval, semantic};
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; use `cargo run --release -- bench search` for numbers"
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
