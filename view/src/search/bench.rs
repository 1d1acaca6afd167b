//! Search latency at catalogue sizes beyond the real datasets: the real tools
//! are replicated under deterministic server-name variations up to the asked
//! size, then queries are timed one by one. Prints numbers; asserts nothing
//! about time.

use std::{
    fmt,
    hint::black_box,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use super::{
    Bm25Index, EmbedderError, HybridIndex, SearchDoc, SearchIndex, SemanticModel,
    corpus::{CORPORA, Corpus, CorpusError},
    vector_cache::{VectorCache, VectorCacheError},
};
use crate::{error_chain::ErrorChain, tool_set::ToolSet};

/// Queries used when none are given.
pub const DEFAULT_QUERIES: &[&str] = &[
    "create a github issue",
    "weather forecast for a city",
    "查询天气",
    "take a screenshot of the web page",
    "stock price history for a ticker between two dates",
    "delete a docker container",
    "search arxiv papers about transformers",
    "convert a word document to pdf",
    "list files in a directory",
    "微博热搜",
];

/// Latency of both rankers over one synthetic catalogue.
#[derive(Debug, Clone)]
pub struct LatencyReport {
    /// Tools in the synthetic catalogue.
    pub tools: usize,
    /// What the catalogue was synthesised from.
    pub source: String,
    /// Distinct queries.
    pub queries: usize,
    /// Times each query was run.
    pub iterations: usize,
    /// One row per ranker.
    pub rows: Vec<LatencyRow>,
    /// Building tool vectors, with a model.
    pub vectors: Option<VectorReport>,
}

/// Cost of the tool vectors.
#[derive(Debug, Clone)]
pub struct VectorReport {
    /// Distinct real definitions among the tools.
    pub real: usize,
    /// Distinct tool definitions embedded from nothing: the real ones, then
    /// real ones marked as copies, as many as there are tools.
    pub distinct: usize,
    /// Time to embed them (cold cache), with every core.
    pub cold: Duration,
    /// Time to reopen the cache file and assemble the vectors of every tool.
    pub warm: Duration,
    /// Bytes of one view's vector matrix over all the tools.
    pub matrix_bytes: usize,
    /// Bytes of the cache's vectors (one per distinct definition).
    pub cache_bytes: usize,
}

/// Latency of one ranker.
#[derive(Debug, Clone)]
pub struct LatencyRow {
    /// `ours` or `BM25`.
    pub ranker: &'static str,
    /// Time to build the index.
    pub build: Duration,
    /// Per-query latency percentiles.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest query.
    pub max: Duration,
    /// Mean.
    pub mean: Duration,
}

/// Builds a catalogue of `tools` tools from the real ones under `dataset_dir`
/// and times `queries` (or [`DEFAULT_QUERIES`] when empty), each run
/// `iterations` times, top 10, on the calling thread. When the datasets cannot
/// be read, generated tools stand in and the report says so.
///
/// `public` names more real catalogues (`tools.json` of the public
/// benchmarks); their tools join the datasets' before any copy is made.
pub fn latency(
    dataset_dir: &Path,
    public: &[PathBuf],
    tools: usize,
    queries: &[String],
    iterations: usize,
    model: Option<&Arc<SemanticModel>>,
) -> LatencyReport {
    let (real, source) = match load_real(dataset_dir, public) {
        Ok(docs) => (
            docs,
            format!(
                "real catalogues in {} and {} public benchmarks",
                dataset_dir.display(),
                public.len()
            ),
        ),
        Err(e) => (
            generated_docs(),
            format!("generated tools ({})", ErrorChain(&e)),
        ),
    };
    let docs = synthesize(&real, tools);
    let queries: Vec<String> = if queries.is_empty() {
        DEFAULT_QUERIES.iter().map(|q| (*q).to_owned()).collect()
    } else {
        queries.to_vec()
    };
    let iterations = iterations.max(1);

    let started = Instant::now();
    let ours = SearchIndex::build(&docs);
    let ours_build = started.elapsed();
    let started = Instant::now();
    let bm25 = Bm25Index::build(&docs);
    let bm25_build = started.elapsed();

    let (broad, narrow) = views_of(&docs);
    let broad = ours.subset(broad);
    let narrow = ours.subset(narrow);
    let mut rows = vec![
        time_queries("lexical", ours_build, &queries, iterations, |q| {
            ours.search(q, 10)
        }),
        time_queries(
            "lexical, a broad view (every server but 3)",
            Duration::ZERO,
            &queries,
            iterations,
            |q| ours.search_in(&broad, q, 10),
        ),
        time_queries(
            "lexical, a narrow view (3 servers)",
            Duration::ZERO,
            &queries,
            iterations,
            |q| ours.search_in(&narrow, q, 10),
        ),
        time_queries("BM25", bm25_build, &queries, iterations, |q| {
            bm25.search(q, 10)
        }),
    ];
    let mut vectors = None;
    if let Some(model) = model {
        match vector_costs(model, &docs) {
            Ok(report) => vectors = Some(report),
            Err(e) => eprintln!("vector build not measured: {}", ErrorChain(&e)),
        }
        let started = Instant::now();
        let hybrid = HybridIndex::build(&docs, Some(model.clone()));
        let hybrid_build = started.elapsed();
        rows.push(time_queries(
            "hybrid (incl. query embedding)",
            hybrid_build,
            &queries,
            iterations,
            |q| hybrid.search(q, 10),
        ));
        let broad = hybrid.subset(broad.tools().clone());
        rows.push(time_queries(
            "hybrid, a broad view (incl. query embedding)",
            Duration::ZERO,
            &queries,
            iterations,
            |q| {
                let vector = hybrid.query_vector(q);
                hybrid.search_embedded_in(&broad, q, vector.as_deref(), 10, |_| 0.0)
            },
        ));
        rows.push(time_queries(
            "query embedding alone",
            Duration::ZERO,
            &queries,
            iterations,
            |q| model.query_vector(q).map(|v| v.len()).unwrap_or(0),
        ));
    }
    LatencyReport {
        tools: docs.len(),
        source,
        queries: queries.len(),
        iterations,
        rows,
        vectors,
    }
}

/// Two views of `docs` as tenants have them: every server but three
/// (broad), and three servers (narrow), chosen the same on every run.
fn views_of(docs: &[SearchDoc]) -> (ToolSet, ToolSet) {
    let mut servers: Vec<&str> = docs.iter().map(|d| d.server.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    let n = servers.len();
    let picked = [servers[0], servers[n / 2], servers[n.saturating_sub(1)]];
    let broad = ToolSet::from_sorted(
        docs.len(),
        (0..docs.len()).filter(|&d| !picked.contains(&docs[d].server.as_str())),
    );
    let narrow = ToolSet::from_sorted(
        docs.len(),
        (0..docs.len()).filter(|&d| picked.contains(&docs[d].server.as_str())),
    );
    (broad, narrow)
}

/// Why the cost of tool vectors could not be measured.
#[derive(Debug, thiserror::Error)]
enum VectorCostError {
    #[error("creating the scratch directory {}", dir.display())]
    ScratchDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Cache(#[from] VectorCacheError),
    #[error(transparent)]
    Embed(#[from] EmbedderError),
    #[error("a vector is missing from the reopened cache")]
    MissingVector,
}

/// Embeds every distinct definition of `docs` into a fresh cache file (cold),
/// then reopens the file and assembles all rows (warm).
fn vector_costs(
    model: &Arc<SemanticModel>,
    docs: &[SearchDoc],
) -> Result<VectorReport, VectorCostError> {
    let dir = tempfile_dir()?;
    let embedder = model.embedder();
    let mut texts = model.document_texts(docs);
    texts.sort_unstable();
    texts.dedup();
    let real = texts.len();
    // As many distinct definitions as tools: past the real ones, real texts
    // again, each marked so that none is cached (the same lengths, so the
    // same cost as new definitions of that kind).
    for i in 0..docs.len().saturating_sub(real) {
        let text = format!("{} (copy {})", texts[i % real], i / real + 2);
        texts.push(text);
    }
    let cold_cache = VectorCache::open(&dir, embedder.id(), embedder.dim())?;
    let started = Instant::now();
    let batch: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&batch)?;
    let keys = texts
        .iter()
        .map(|t| super::vector_cache::vector_key(embedder.id(), t));
    cold_cache.insert(keys.zip(vectors).collect())?;
    let cold = started.elapsed();
    let cache_bytes = cold_cache.vector_bytes();
    drop(cold_cache);
    let started = Instant::now();
    let warm_cache = VectorCache::open(&dir, embedder.id(), embedder.dim())?;
    let mut matrix = Vec::with_capacity(docs.len() * embedder.dim());
    for text in model.document_texts(docs) {
        let key = super::vector_cache::vector_key(embedder.id(), &text);
        match warm_cache.get(&key) {
            Some(v) => matrix.extend_from_slice(&v),
            None => return Err(VectorCostError::MissingVector),
        }
    }
    let warm = started.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(VectorReport {
        real,
        distinct: texts.len(),
        cold,
        warm,
        matrix_bytes: matrix.len() * 4,
        cache_bytes,
    })
}

fn tempfile_dir() -> Result<PathBuf, VectorCostError> {
    let dir = std::env::temp_dir().join(format!("quiver-bench-vectors-{}", std::process::id()));
    match std::fs::create_dir_all(&dir) {
        Ok(()) => Ok(dir),
        Err(source) => Err(VectorCostError::ScratchDir { dir, source }),
    }
}

fn load_real(dataset_dir: &Path, public: &[PathBuf]) -> Result<Vec<SearchDoc>, CorpusError> {
    let mut docs = Vec::new();
    for name in CORPORA {
        docs.extend(Corpus::load(dataset_dir, name)?.docs);
    }
    for file in public {
        let name = file
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or("public");
        docs.extend(Corpus::load_file(file, name)?.docs);
    }
    Ok(docs)
}

/// A stand-in catalogue for machines without the datasets.
fn generated_docs() -> Vec<SearchDoc> {
    const VERBS: [&str; 8] = [
        "get", "list", "create", "update", "delete", "search", "send", "run",
    ];
    const NOUNS: [&str; 8] = [
        "issue",
        "file",
        "message",
        "weather",
        "stock",
        "page",
        "container",
        "note",
    ];
    let mut docs = Vec::new();
    for (s, noun) in NOUNS.iter().enumerate() {
        for verb in VERBS {
            docs.push(SearchDoc {
                name: format!("{verb}_{noun}"),
                server: format!("server{s}"),
                server_description: format!("Tools for {noun}s"),
                description: format!("{verb} a {noun} by id or name"),
                params: Vec::new(),
            });
        }
    }
    docs
}

fn time_queries<T>(
    ranker: &'static str,
    build: Duration,
    queries: &[String],
    iterations: usize,
    search: impl Fn(&str) -> T,
) -> LatencyRow {
    // One untimed pass warms caches and the per-thread score arrays.
    for q in queries {
        black_box(search(black_box(q)));
    }
    let mut samples = Vec::with_capacity(queries.len() * iterations);
    for _ in 0..iterations {
        for q in queries {
            let started = Instant::now();
            black_box(search(black_box(q)));
            samples.push(started.elapsed());
        }
    }
    samples.sort_unstable();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    let total: Duration = samples.iter().sum();
    LatencyRow {
        ranker,
        build,
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        max: at(1.0),
        mean: total / samples.len() as u32,
    }
}

/// `tools` documents: the real ones first, then copies whose server names are
/// varied deterministically (seeded, so every run builds the same catalogue).
pub fn synthesize(real: &[SearchDoc], tools: usize) -> Vec<SearchDoc> {
    const PREFIXES: [&str; 16] = [
        "acme", "north", "blue", "open", "cloud", "team", "corp", "lab", "prod", "edge", "core",
        "data", "alpha", "nova", "zen", "apex",
    ];
    if real.is_empty() {
        return Vec::new();
    }
    let mut rng = SplitMix64(0x5eed_0fc0_ffee);
    let mut docs = Vec::with_capacity(tools);
    let mut copy = 0;
    while docs.len() < tools {
        let mut servers: Vec<(String, String)> = Vec::new();
        for doc in real {
            if docs.len() == tools {
                break;
            }
            let mut doc = doc.clone();
            if copy > 0 {
                // One variant per server per copy, shared by its tools.
                let variant = match servers.iter().find(|(s, _)| *s == doc.server) {
                    Some((_, v)) => v.clone(),
                    None => {
                        let prefix = PREFIXES[(rng.next() % PREFIXES.len() as u64) as usize];
                        let v = format!("{prefix}{}-{}", rng.next() % 1000, doc.server);
                        servers.push((doc.server.clone(), v.clone()));
                        v
                    }
                };
                doc.server = variant;
            }
            docs.push(doc);
        }
        copy += 1;
    }
    docs
}

/// A tiny seeded generator (SplitMix64); enough to vary names reproducibly.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl fmt::Display for LatencyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} tools (from {}), {} queries × {} iterations, top 10, one thread",
            self.tools, self.source, self.queries, self.iterations
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| ranker | build (ms) | p50 (µs) | p90 (µs) | p99 (µs) | max (µs) | mean (µs) |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|---:|")?;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        for r in &self.rows {
            writeln!(
                f,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.ranker,
                r.build.as_secs_f64() * 1e3,
                us(r.p50),
                us(r.p90),
                us(r.p99),
                us(r.max),
                us(r.mean)
            )?;
        }
        if let Some(v) = &self.vectors {
            let per_tool = v.cold.as_secs_f64() / v.distinct.max(1) as f64;
            writeln!(f)?;
            writeln!(f, "| tool vectors | value |")?;
            writeln!(f, "|---|---:|")?;
            writeln!(
                f,
                "| distinct definitions embedded (cold) | {} ({} real, the rest real ones marked as copies) |",
                v.distinct, v.real
            )?;
            writeln!(
                f,
                "| cold build of {} distinct definitions | {:.1} s ({:.2} ms per definition) |",
                v.distinct,
                v.cold.as_secs_f64(),
                per_tool * 1e3
            )?;
            writeln!(
                f,
                "| warm build of all {} tools (reopen cache + assemble) | {:.1} ms |",
                self.tools,
                v.warm.as_secs_f64() * 1e3
            )?;
            writeln!(
                f,
                "| vector matrix of one view ({} tools) | {:.1} MiB |",
                self.tools,
                v.matrix_bytes as f64 / 1048576.0
            )?;
            writeln!(
                f,
                "| shared cache ({} vectors) | {:.1} MiB |",
                v.distinct,
                v.cache_bytes as f64 / 1048576.0
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn doc(server: &str, name: &str) -> SearchDoc {
        SearchDoc {
            name: name.into(),
            server: server.into(),
            ..SearchDoc::default()
        }
    }

    #[test]
    fn synthesis_is_deterministic_and_sized() {
        let real = [doc("a", "x"), doc("a", "y"), doc("b", "z")];
        let one = synthesize(&real, 10);
        assert_eq!(one.len(), 10);
        assert_eq!(one, synthesize(&real, 10));
        assert_eq!(&one[..3], &real);
        // Tools of one server share its variant name.
        assert_eq!(one[3].server, one[4].server);
        assert_ne!(one[3].server, "a");
        assert!(one[3].server.ends_with("-a"));
        assert!(synthesize(&[], 5).is_empty());
    }

    #[test]
    fn latency_runs_without_datasets() {
        let report = latency(Path::new("/nonexistent"), &[], 100, &[], 1, None);
        assert_eq!(report.tools, 100);
        assert!(report.source.starts_with("generated"));
        // Lexical over the whole index, a broad and a narrow view; BM25.
        assert_eq!(report.rows.len(), 4);
        let table = report.to_string();
        assert!(table.contains("| lexical |"), "{table}");
        assert!(table.contains("| lexical, a broad view"), "{table}");
    }

    /// `cargo test --release -p quiver-view latency_at_10k_tools -- --ignored --nocapture`
    #[test]
    #[ignore = "prints a latency table; run in release"]
    fn latency_at_10k_tools() -> anyhow::Result<()> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let datasets = root.join("../shared/datasets");
        if !datasets.join("livemcpbench/tools.json").exists() {
            eprintln!("skipping: datasets not found at {}", datasets.display());
            return Ok(());
        }
        let queries: Vec<String> =
            super::super::eval::load_queries(&root.join("tests/data/search/queries.json"))?
                .into_iter()
                .map(|q| q.query)
                .collect();
        println!("{}", latency(&datasets, &[], 10_000, &queries, 20, None));
        Ok(())
    }
}
