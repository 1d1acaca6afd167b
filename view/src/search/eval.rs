//! Measures ranking quality on labelled queries: Hit@1, Hit@5 and MRR of the
//! first relevant tool for plain BM25, our lexical ranking, the sentence
//! model alone and the hybrid, per corpus and per split.
//!
//! Query files: the project's own (`tests/data/search/queries.json`, over the
//! catalogues in `../shared/datasets`) and the public benchmarks under
//! `tests/data/search/public/<name>/` (queries next to their `tools.json`).
//! Every query is in the `tune` or the `test` split; weights are chosen
//! looking at `tune` only, and `test` is the figure to quote.

use std::{
    collections::HashMap,
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::Deserialize;

use super::{
    Blend, Bm25Index, HybridIndex, SearchHit, SemanticModel,
    corpus::{CORPORA, Corpus, CorpusError},
    hybrid::{latin_share, rank_blended},
};

/// Why an evaluation could not run: its inputs are missing or malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A test's input file is absent and partial runs are not allowed.
    #[error(
        "{} not found: {install_hint}; or set {PARTIAL_TESTS_ENV}=1 for a local partial run",
        path.display()
    )]
    MissingInput {
        /// The absent file.
        path: PathBuf,
        /// How to put it in place.
        install_hint: String,
    },
    /// A query file could not be read.
    #[error("reading queries {}", path.display())]
    ReadQueries {
        /// The query file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A query file is not a list of labelled queries.
    #[error(
        "parsing queries {}: expected a list of {{query, relevant, corpus, split?}}",
        path.display()
    )]
    ParseQueries {
        /// The query file.
        path: PathBuf,
        /// Where the JSON went wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A catalogue the queries search could not be loaded.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// A query names no relevant tool, so it cannot be scored.
    #[error("query {query:?} lists no relevant tools")]
    NoRelevantTools {
        /// The query.
        query: String,
    },
    /// A query's label names a tool its catalogue does not have.
    #[error("query {query:?}: no tool `{label}` in corpus {corpus}")]
    UnknownTool {
        /// The query.
        query: String,
        /// The label (`server/tool`).
        label: String,
        /// The catalogue searched.
        corpus: String,
    },
}

/// Environment variable that marks a local run allowed to skip tests whose
/// data (the shared datasets, the model) is absent. CI never sets it, so
/// there a missing input fails the test instead of passing it unseen.
pub const PARTIAL_TESTS_ENV: &str = "QUIVER_PARTIAL_TESTS";

/// Whether a test's input at `path` is there. When it is not: `Ok(false)`
/// (skip, with a message) if [`PARTIAL_TESTS_ENV`] is set, else an error
/// naming the fix.
pub fn test_input_present(path: &Path, install_hint: &str) -> Result<bool, EvalError> {
    if path.exists() {
        return Ok(true);
    }
    if std::env::var_os(PARTIAL_TESTS_ENV).is_some_and(|v| v == "1") {
        eprintln!(
            "skipping ({PARTIAL_TESTS_ENV}=1): {} not found",
            path.display()
        );
        return Ok(false);
    }
    Err(EvalError::MissingInput {
        path: path.to_owned(),
        install_hint: install_hint.to_owned(),
    })
}

/// One labelled query.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledQuery {
    /// What a model or user would type.
    pub query: String,
    /// Every fitting tool, as `server/tool`.
    pub relevant: Vec<String>,
    /// The catalogue searched: `livemcpbench`, `oslook`, or a public
    /// benchmark's name (its `tools.json` sits next to the query file).
    pub corpus: String,
    /// `tune` or `test`.
    #[serde(default = "default_split")]
    pub split: String,
}

fn default_split() -> String {
    "test".to_owned()
}

/// Reads a labelled query file.
pub fn load_queries(path: &Path) -> Result<Vec<LabelledQuery>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::ReadQueries {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| EvalError::ParseQueries {
        path: path.to_owned(),
        source,
    })
}

/// Quality of one ranker over a set of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    /// Share of queries whose first hit is relevant.
    pub hit_at_1: f64,
    /// Share of queries with a relevant tool in the first five hits.
    pub hit_at_5: f64,
    /// Mean reciprocal rank of the first relevant tool (0 when none is found).
    pub mrr: f64,
}

impl Metrics {
    /// Metrics from the 1-based rank of each query's first relevant tool.
    pub fn from_ranks(ranks: &[Option<usize>]) -> Metrics {
        if ranks.is_empty() {
            return Metrics::default();
        }
        let n = ranks.len() as f64;
        let share = |f: &dyn Fn(usize) -> bool| {
            ranks.iter().filter(|r| r.is_some_and(f)).count() as f64 / n
        };
        Metrics {
            hit_at_1: share(&|r| r == 1),
            hit_at_5: share(&|r| r <= 5),
            mrr: ranks
                .iter()
                .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
                .sum::<f64>()
                / n,
        }
    }
}

/// The rankers compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ranker {
    /// Plain BM25 over one bag of words.
    Bm25,
    /// Our lexical ranking ([`super::SearchIndex`]).
    Lexical,
    /// Cosine of sentence vectors alone.
    Semantic,
    /// The blend a view serves ([`HybridIndex`]).
    Hybrid,
}

impl Ranker {
    /// Every ranker, in table order.
    pub const ALL: [Ranker; 4] = [
        Ranker::Bm25,
        Ranker::Lexical,
        Ranker::Semantic,
        Ranker::Hybrid,
    ];

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Ranker::Bm25 => "BM25",
            Ranker::Lexical => "lexical",
            Ranker::Semantic => "semantic",
            Ranker::Hybrid => "hybrid",
        }
    }
}

/// Results for one corpus and split (or `overall`).
#[derive(Debug, Clone)]
pub struct EvalRow {
    /// Corpus name, or `overall`.
    pub corpus: String,
    /// `tune` or `test`.
    pub split: String,
    /// Tools in the corpus (summed for `overall`).
    pub tools: usize,
    /// Queries evaluated.
    pub queries: usize,
    /// One entry per ranker that ran (semantic ones need a model).
    pub metrics: Vec<(Ranker, Metrics)>,
}

impl EvalRow {
    /// The metrics of `ranker`, if it ran.
    pub fn get(&self, ranker: Ranker) -> Option<Metrics> {
        self.metrics
            .iter()
            .find(|(r, _)| *r == ranker)
            .map(|(_, m)| *m)
    }
}

/// Where each ranker put the first relevant tool of one query (1-based).
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    /// The corpus searched.
    pub corpus: String,
    /// `tune` or `test`.
    pub split: String,
    /// The query text.
    pub query: String,
    /// Rank per ranker, `None` when not found at all.
    pub ranks: Vec<(Ranker, Option<usize>)>,
}

/// The evaluation of one query file.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// Per corpus and split, then `overall` per split.
    pub rows: Vec<EvalRow>,
    /// Every query, in file order.
    pub outcomes: Vec<QueryOutcome>,
}

impl EvalReport {
    /// The `overall` row of a split.
    pub fn overall(&self, split: &str) -> Option<&EvalRow> {
        self.rows
            .iter()
            .find(|r| r.corpus == "overall" && r.split == split)
    }
}

/// One query with everything needed to rank it any way, computed once.
#[derive(Debug, Clone)]
pub struct PreparedQuery {
    /// The labelled query.
    pub query: LabelledQuery,
    /// Documents that count as relevant.
    pub relevant: Vec<usize>,
    /// Rank under BM25.
    pub bm25_rank: Option<usize>,
    /// Our lexical ranking's hits over the whole corpus.
    pub lexical: Vec<SearchHit>,
    /// Cosine with every tool (with a model).
    pub cosines: Option<Vec<f32>>,
    /// Tools in the corpus.
    pub tools: usize,
}

impl PreparedQuery {
    /// Rank of the first relevant tool under `blend` (semantic side needed).
    pub fn hybrid_rank(&self, blend: &Blend) -> Option<usize> {
        let cosines = self.cosines.as_ref()?;
        let hits = rank_blended(
            &self.lexical,
            cosines,
            blend,
            latin_share(&self.query.query),
            self.tools,
            |_| 0.0,
        );
        first_relevant(&hits, &self.relevant)
    }

    /// Rank under the lexical ranking.
    pub fn lexical_rank(&self) -> Option<usize> {
        first_relevant(&self.lexical, &self.relevant)
    }

    /// Rank under the cosine alone.
    pub fn semantic_rank(&self) -> Option<usize> {
        let cosines = self.cosines.as_ref()?;
        let mine = self
            .relevant
            .iter()
            .map(|&d| cosines[d])
            .fold(f32::NEG_INFINITY, f32::max);
        // Ties go to the lower index, as everywhere else.
        let first = self
            .relevant
            .iter()
            .copied()
            .filter(|&d| cosines[d] == mine)
            .min()?;
        let better = cosines
            .iter()
            .enumerate()
            .filter(|&(d, &c)| c > mine || (c == mine && d < first))
            .count();
        Some(better + 1)
    }
}

/// Loads the corpus each query names and scores every query once.
pub fn prepare(
    dataset_dir: &Path,
    queries_path: &Path,
    model: Option<&Arc<SemanticModel>>,
) -> Result<Vec<PreparedQuery>, EvalError> {
    let queries = load_queries(queries_path)?;
    let mut names: Vec<&str> = Vec::new();
    for q in &queries {
        if !names.contains(&q.corpus.as_str()) {
            names.push(&q.corpus);
        }
    }
    let mut prepared = Vec::with_capacity(queries.len());
    for name in names {
        let corpus = match CORPORA.contains(&name) {
            true => Corpus::load(dataset_dir, name)?,
            false => Corpus::load_file(&public_catalogue(queries_path), name)?,
        };
        let ids = corpus.ids();
        let position: HashMap<&str, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let bm25 = Bm25Index::build(&corpus.docs);
        let hybrid = HybridIndex::build(&corpus.docs, model.cloned());
        for q in queries.iter().filter(|q| q.corpus == name) {
            if q.relevant.is_empty() {
                return Err(EvalError::NoRelevantTools {
                    query: q.query.clone(),
                });
            }
            let mut relevant = Vec::with_capacity(q.relevant.len());
            for label in &q.relevant {
                match position.get(label.as_str()) {
                    Some(&doc) => relevant.push(doc),
                    None => {
                        return Err(EvalError::UnknownTool {
                            query: q.query.clone(),
                            label: label.clone(),
                            corpus: name.to_owned(),
                        });
                    }
                }
            }
            let tools = corpus.docs.len();
            prepared.push(PreparedQuery {
                bm25_rank: first_relevant(&bm25.search(&q.query, tools), &relevant),
                lexical: hybrid.lexical().search(&q.query, tools),
                cosines: hybrid.query_cosines(&q.query),
                relevant,
                tools,
                query: q.clone(),
            });
        }
    }
    Ok(prepared)
}

/// A public benchmark's catalogue: `tools.json` next to its queries.
fn public_catalogue(queries_path: &Path) -> PathBuf {
    queries_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("tools.json")
}

/// Runs the evaluation of one query file with every ranker that can run.
pub fn run(
    dataset_dir: &Path,
    queries_path: &Path,
    model: Option<&Arc<SemanticModel>>,
) -> Result<EvalReport, EvalError> {
    let prepared = prepare(dataset_dir, queries_path, model)?;
    Ok(report(&prepared, &Blend::DEFAULT))
}

/// Tables from prepared queries, the hybrid under `blend`.
pub fn report(prepared: &[PreparedQuery], blend: &Blend) -> EvalReport {
    let semantic = prepared.iter().all(|p| p.cosines.is_some()) && !prepared.is_empty();
    let rankers: Vec<Ranker> = Ranker::ALL
        .into_iter()
        .filter(|r| semantic || matches!(r, Ranker::Bm25 | Ranker::Lexical))
        .collect();
    let outcomes: Vec<QueryOutcome> = prepared
        .iter()
        .map(|p| QueryOutcome {
            corpus: p.query.corpus.clone(),
            split: p.query.split.clone(),
            query: p.query.query.clone(),
            ranks: rankers
                .iter()
                .map(|&r| {
                    let rank = match r {
                        Ranker::Bm25 => p.bm25_rank,
                        Ranker::Lexical => p.lexical_rank(),
                        Ranker::Semantic => p.semantic_rank(),
                        Ranker::Hybrid => p.hybrid_rank(blend),
                    };
                    (r, rank)
                })
                .collect(),
        })
        .collect();
    let mut rows = Vec::new();
    let mut keys: Vec<(String, String, usize)> = Vec::new();
    for p in prepared {
        if !keys
            .iter()
            .any(|(c, s, _)| *c == p.query.corpus && *s == p.query.split)
        {
            keys.push((p.query.corpus.clone(), p.query.split.clone(), p.tools));
        }
    }
    keys.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)).reverse());
    let row = |corpus: &str, split: &str, tools: usize, selected: &[&QueryOutcome]| EvalRow {
        corpus: corpus.to_owned(),
        split: split.to_owned(),
        tools,
        queries: selected.len(),
        metrics: rankers
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let ranks: Vec<Option<usize>> = selected.iter().map(|o| o.ranks[i].1).collect();
                (r, Metrics::from_ranks(&ranks))
            })
            .collect(),
    };
    let mut splits: Vec<&str> = Vec::new();
    for (corpus, split, tools) in &keys {
        let selected: Vec<&QueryOutcome> = outcomes
            .iter()
            .filter(|o| o.corpus == *corpus && o.split == *split)
            .collect();
        rows.push(row(corpus, split, *tools, &selected));
        if !splits.contains(&split.as_str()) {
            splits.push(split);
        }
    }
    let corpora: Vec<&str> = {
        let mut c: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    if corpora.len() > 1 {
        for split in splits {
            let selected: Vec<&QueryOutcome> =
                outcomes.iter().filter(|o| o.split == split).collect();
            let tools = corpora
                .iter()
                .filter_map(|c| keys.iter().find(|k| k.0 == *c).map(|k| k.2))
                .sum();
            rows.push(row("overall", split, tools, &selected));
        }
    }
    EvalReport { rows, outcomes }
}

fn first_relevant(hits: &[SearchHit], relevant: &[usize]) -> Option<usize> {
    hits.iter()
        .position(|h| relevant.contains(&h.doc))
        .map(|p| p + 1)
}

impl fmt::Display for EvalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| corpus | split | tools | queries | ranker | Hit@1 | Hit@5 | MRR |"
        )?;
        writeln!(f, "|---|---|---:|---:|---|---:|---:|---:|")?;
        for row in &self.rows {
            for (ranker, m) in &row.metrics {
                writeln!(
                    f,
                    "| {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
                    row.corpus,
                    row.split,
                    row.tools,
                    row.queries,
                    ranker.name(),
                    m.hit_at_1,
                    m.hit_at_5,
                    m.mrr
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn project_root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn metrics_from_ranks() {
        let m = Metrics::from_ranks(&[Some(1), Some(2), None, Some(6)]);
        assert_eq!(m.hit_at_1, 0.25);
        assert_eq!(m.hit_at_5, 0.5);
        assert!((m.mrr - (1.0 + 0.5 + 1.0 / 6.0) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn query_files_are_well_formed_and_split() -> anyhow::Result<()> {
        let root = project_root().join("tests/data/search");
        for (file, corpora) in [
            ("queries.json", &CORPORA[..]),
            ("public/azure-mcp/queries.json", &["azure-mcp"][..]),
            ("public/metatool/queries.json", &["metatool"][..]),
            ("public/seal-tools/queries.json", &["seal-tools"][..]),
            (
                "public/apibench-huggingface/queries.json",
                &["apibench-huggingface"][..],
            ),
            (
                "public/apibench-torchhub/queries.json",
                &["apibench-torchhub"][..],
            ),
        ] {
            let queries = load_queries(&root.join(file))?;
            assert!(queries.len() >= 180, "{file}: only {}", queries.len());
            let tune = queries.iter().filter(|q| q.split == "tune").count();
            let test = queries.iter().filter(|q| q.split == "test").count();
            assert_eq!(tune + test, queries.len(), "{file}: unknown split");
            assert!(tune > 0 && test > tune, "{file}: {tune} tune, {test} test");
            for q in &queries {
                assert!(
                    !q.relevant.is_empty(),
                    "{:?} has no relevant tools",
                    q.query
                );
                assert!(corpora.contains(&q.corpus.as_str()), "{:?}", q.corpus);
            }
        }
        Ok(())
    }

    /// The public benchmarks ship with the repository: their labels must name
    /// real tools of their catalogues, and our lexical ranking must beat BM25.
    #[test]
    fn public_benchmarks_load_and_lexical_beats_bm25() -> anyhow::Result<()> {
        for name in ["azure-mcp", "metatool"] {
            let path = project_root().join(format!("tests/data/search/public/{name}/queries.json"));
            let report = run(Path::new("/nonexistent"), &path, None)?;
            let row = report
                .rows
                .iter()
                .find(|r| r.split == "test")
                .expect("a test row");
            let (bm25, lexical) = (
                row.get(Ranker::Bm25).unwrap(),
                row.get(Ranker::Lexical).unwrap(),
            );
            println!("{name}: BM25 {bm25:?} lexical {lexical:?}");
            assert!(lexical.mrr > bm25.mrr, "{name}: {lexical:?} vs {bm25:?}");
        }
        Ok(())
    }

    /// Runs the real evaluation on the project's queries (needs the shared
    /// datasets; see [`test_input_present`]).
    #[test]
    fn lexical_beats_bm25_on_the_project_queries() -> anyhow::Result<()> {
        let root = project_root();
        let datasets = root.join("../shared/datasets");
        if !test_input_present(
            &datasets.join("livemcpbench/tools.json"),
            "the shared datasets belong next to the repository",
        )? {
            return Ok(());
        }
        let report = run(
            &datasets,
            &root.join("tests/data/search/queries.json"),
            None,
        )?;
        println!("{report}");
        for split in ["tune", "test"] {
            let overall = report.overall(split).expect("an overall row");
            let (bm25, lexical) = (
                overall.get(Ranker::Bm25).unwrap(),
                overall.get(Ranker::Lexical).unwrap(),
            );
            assert!(lexical.mrr > bm25.mrr, "{split}: {lexical:?} vs {bm25:?}");
            assert!(
                lexical.hit_at_1 > bm25.hit_at_1,
                "{split}: {lexical:?} vs {bm25:?}"
            );
        }
        Ok(())
    }
}
