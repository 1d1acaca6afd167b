//! `quiver bench lexicon`: what the built-in synonym table adds (on against
//! off), on the frozen test splits of the public benchmarks only, for the
//! lexical and the hybrid rankers. The table is chosen once per process, so
//! each setting runs in a child process of its own
//! (`QUIVER_SEARCH_SYNONYMS`). At commit eed262b the same command also
//! compared the hand-written Porter-style stemmer with Snowball's
//! (`QUIVER_SEARCH_STEMMER`); that table, in docs/benchmarks.md, is why the
//! index now stems with Snowball and why the English synonym groups went.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use clap::Args;
use serde::{Deserialize, Serialize};

/// Arguments of `quiver bench lexicon`.
#[derive(Args, Debug)]
pub struct LexiconBenchArgs {
    /// Folder holding livemcpbench/ and oslook-mcp-servers-schemas/.
    #[arg(long, default_value = "../shared/datasets")]
    datasets: PathBuf,
    /// Public benchmarks: one folder each with tools.json and queries.json.
    #[arg(long, default_value = "tests/data/search/public")]
    public: PathBuf,
    /// Sentence-embedding model directory (default: where
    /// scripts/install-model.sh puts it). Without one, only the lexical
    /// ranker is measured.
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Measure the current process's setting and print it as JSON lines
    /// (what each child runs).
    #[arg(long, hide = true)]
    one: bool,
}

/// One measured row: a corpus's test split under one ranker.
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    corpus: String,
    ranker: String,
    queries: usize,
    hit_at_1: f64,
    hit_at_5: f64,
    mrr: f64,
}

/// The settings compared: the synonym table on and off.
const SETTINGS: [&str; 2] = ["on", "off"];

/// Runs the benchmark.
pub fn run(args: LexiconBenchArgs) -> anyhow::Result<()> {
    if args.one {
        return measure_this_process(&args);
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench lexicon` for numbers"
        );
    }
    let exe = std::env::current_exe()?;
    let mut results: Vec<(&str, Vec<Row>)> = Vec::new();
    for synonyms in SETTINGS {
        eprintln!("measuring with the synonym table {synonyms}…");
        let mut child = Command::new(&exe);
        child
            .args(["lexicon", "--one", "--datasets"])
            .arg(&args.datasets)
            .arg("--public")
            .arg(&args.public)
            .env("QUIVER_SEARCH_SYNONYMS", synonyms);
        if let Some(dir) = &args.model_dir {
            child.arg("--model-dir").arg(dir);
        }
        let output = child.output()?;
        anyhow::ensure!(
            output.status.success(),
            "the run with the synonym table {synonyms} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let rows = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<Vec<Row>, _>>()?;
        results.push((synonyms, rows));
    }
    print_tables(&results);
    Ok(())
}

fn print_tables(results: &[(&str, Vec<Row>)]) {
    println!("### Synonym table on and off, frozen test splits of the public benchmarks\n");
    println!("| corpus | queries | ranker | synonyms | Hit@1 | Hit@5 | MRR |");
    println!("|---|---:|---|---|---:|---:|---:|");
    let Some((_, first)) = results.first() else {
        return;
    };
    for probe in first {
        for (synonyms, rows) in results {
            let Some(row) = rows
                .iter()
                .find(|r| r.corpus == probe.corpus && r.ranker == probe.ranker)
            else {
                continue;
            };
            println!(
                "| {} | {} | {} | {synonyms} | {:.3} | {:.3} | {:.3} |",
                row.corpus, row.queries, row.ranker, row.hit_at_1, row.hit_at_5, row.mrr
            );
        }
    }
    println!("\n### Mean over the public test splits (each corpus weighs the same)\n");
    println!("| ranker | synonyms | Hit@1 | Hit@5 | MRR |");
    println!("|---|---|---:|---:|---:|");
    let mut rankers: Vec<&str> = Vec::new();
    for row in first {
        if !rankers.contains(&row.ranker.as_str()) {
            rankers.push(&row.ranker);
        }
    }
    for ranker in rankers {
        for (synonyms, rows) in results {
            let rows: Vec<&Row> = rows.iter().filter(|r| r.ranker == ranker).collect();
            if rows.is_empty() {
                continue;
            }
            let n = rows.len() as f64;
            let mean = |f: fn(&Row) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / n;
            println!(
                "| {ranker} | {synonyms} | {:.3} | {:.3} | {:.3} |",
                mean(|r| r.hit_at_1),
                mean(|r| r.hit_at_5),
                mean(|r| r.mrr)
            );
        }
    }
}

/// Measures the public test splits with this process's synonym table.
fn measure_this_process(args: &LexiconBenchArgs) -> anyhow::Result<()> {
    use quiver_view::search::{
        SemanticModel,
        eval::{self, Ranker},
        semantic,
    };
    let model = match args.model_dir.clone().or_else(semantic::default_model_dir) {
        Some(dir) => match SemanticModel::load(&dir, None) {
            Ok(model) => Some(std::sync::Arc::new(model)),
            Err(e) => {
                eprintln!("no hybrid ranker: {e:#}");
                None
            }
        },
        None => None,
    };
    for queries in public_query_files(&args.public)? {
        let report = eval::run(&args.datasets, &queries, model.as_ref())?;
        for row in report
            .rows
            .iter()
            .filter(|r| r.split == "test" && r.corpus != "overall")
        {
            for ranker in [Ranker::Lexical, Ranker::Hybrid] {
                let Some(metrics) = row.get(ranker) else {
                    continue;
                };
                let line = Row {
                    corpus: row.corpus.clone(),
                    ranker: ranker.name().to_string(),
                    queries: row.queries,
                    hit_at_1: metrics.hit_at_1,
                    hit_at_5: metrics.hit_at_5,
                    mrr: metrics.mrr,
                };
                println!("{}", serde_json::to_string(&line)?);
            }
        }
    }
    Ok(())
}

fn public_query_files(public: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(public)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", public.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("queries.json")))
        .filter(|p| p.exists())
        .collect();
    files.sort();
    Ok(files)
}
