//! Measures ranking quality on labelled queries over the real catalogues:
//! Hit@1, Hit@5 and MRR of the first relevant tool, for the BM25 baseline and
//! for our ranking, per corpus and overall.

use std::{collections::HashMap, fmt, path::Path};

use anyhow::{Context, bail};
use serde::Deserialize;

use super::{Bm25Index, SearchHit, SearchIndex, corpus::Corpus};

/// One labelled query of `tests/data/search/queries.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledQuery {
    /// What a model or user would type.
    pub query: String,
    /// Every fitting tool, as `server/tool`.
    pub relevant: Vec<String>,
    /// The catalogue searched: `livemcpbench` or `oslook`.
    pub corpus: String,
}

/// Reads a labelled query file.
pub fn load_queries(path: &Path) -> anyhow::Result<Vec<LabelledQuery>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading queries {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "parsing queries {}: expected a list of {{query, relevant, corpus}}",
            path.display()
        )
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
    fn from_ranks(ranks: &[Option<usize>]) -> Metrics {
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

/// Results for one corpus (or `overall`).
#[derive(Debug, Clone)]
pub struct EvalRow {
    /// Corpus name, or `overall`.
    pub corpus: String,
    /// Tools in the corpus (summed for `overall`).
    pub tools: usize,
    /// Queries evaluated.
    pub queries: usize,
    /// The BM25 baseline.
    pub bm25: Metrics,
    /// Our ranking.
    pub ours: Metrics,
}

/// Where each ranker put the first relevant tool of one query (1-based).
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    /// The corpus searched.
    pub corpus: String,
    /// The query text.
    pub query: String,
    /// Rank under BM25, if found at all.
    pub bm25_rank: Option<usize>,
    /// Rank under our ranking, if found at all.
    pub ours_rank: Option<usize>,
    /// The top three tools of our ranking.
    pub ours_top: Vec<String>,
}

/// The evaluation: one row per corpus, then `overall`, plus per-query outcomes.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// Per corpus, then overall.
    pub rows: Vec<EvalRow>,
    /// Every query, in file order.
    pub outcomes: Vec<QueryOutcome>,
}

impl EvalReport {
    /// The `overall` row.
    pub fn overall(&self) -> &EvalRow {
        // `run` always pushes it last.
        &self.rows[self.rows.len() - 1]
    }
}

/// Runs the evaluation: each query against its corpus, with both rankers.
pub fn run(dataset_dir: &Path, queries: &Path) -> anyhow::Result<EvalReport> {
    let queries = load_queries(queries)?;
    let mut corpora: Vec<&str> = Vec::new();
    for q in &queries {
        if !corpora.contains(&q.corpus.as_str()) {
            corpora.push(&q.corpus);
        }
    }
    let mut rows = Vec::new();
    let mut outcomes = Vec::new();
    let (mut all_bm25, mut all_ours, mut all_tools) = (Vec::new(), Vec::new(), 0);
    for name in corpora {
        let corpus = Corpus::load(dataset_dir, name)?;
        let ids = corpus.ids();
        let position: HashMap<&str, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let bm25 = Bm25Index::build(&corpus.docs);
        let ours = SearchIndex::build(&corpus.docs);
        let (mut bm25_ranks, mut ours_ranks) = (Vec::new(), Vec::new());
        for q in queries.iter().filter(|q| q.corpus == name) {
            if q.relevant.is_empty() {
                bail!("query {:?} lists no relevant tools", q.query);
            }
            let mut relevant = Vec::with_capacity(q.relevant.len());
            for label in &q.relevant {
                match position.get(label.as_str()) {
                    Some(&doc) => relevant.push(doc),
                    None => bail!("query {:?}: no tool `{label}` in corpus {name}", q.query),
                }
            }
            let bm25_hits = bm25.search(&q.query, corpus.docs.len());
            let ours_hits = ours.search(&q.query, corpus.docs.len());
            let outcome = QueryOutcome {
                corpus: name.to_owned(),
                query: q.query.clone(),
                bm25_rank: first_relevant(&bm25_hits, &relevant),
                ours_rank: first_relevant(&ours_hits, &relevant),
                ours_top: ours_hits
                    .iter()
                    .take(3)
                    .map(|h| ids[h.doc].clone())
                    .collect(),
            };
            bm25_ranks.push(outcome.bm25_rank);
            ours_ranks.push(outcome.ours_rank);
            outcomes.push(outcome);
        }
        rows.push(EvalRow {
            corpus: name.to_owned(),
            tools: corpus.docs.len(),
            queries: bm25_ranks.len(),
            bm25: Metrics::from_ranks(&bm25_ranks),
            ours: Metrics::from_ranks(&ours_ranks),
        });
        all_tools += corpus.docs.len();
        all_bm25.extend(bm25_ranks);
        all_ours.extend(ours_ranks);
    }
    rows.push(EvalRow {
        corpus: "overall".to_owned(),
        tools: all_tools,
        queries: all_bm25.len(),
        bm25: Metrics::from_ranks(&all_bm25),
        ours: Metrics::from_ranks(&all_ours),
    });
    Ok(EvalReport { rows, outcomes })
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
            "| corpus | tools | queries | ranker | Hit@1 | Hit@5 | MRR |"
        )?;
        writeln!(f, "|---|---:|---:|---|---:|---:|---:|")?;
        for row in &self.rows {
            for (ranker, m) in [("BM25", row.bm25), ("ours", row.ours)] {
                writeln!(
                    f,
                    "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
                    row.corpus, row.tools, row.queries, ranker, m.hit_at_1, m.hit_at_5, m.mrr
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
    fn query_file_is_well_formed() -> anyhow::Result<()> {
        let queries = load_queries(&project_root().join("tests/data/search/queries.json"))?;
        assert!(queries.len() >= 180, "only {} queries", queries.len());
        for q in &queries {
            assert!(
                !q.relevant.is_empty(),
                "{:?} has no relevant tools",
                q.query
            );
            assert!(
                super::super::corpus::CORPORA.contains(&q.corpus.as_str()),
                "{:?}",
                q.corpus
            );
        }
        Ok(())
    }

    /// Runs the real evaluation when the shared datasets are present.
    #[test]
    fn ours_beats_bm25_on_real_queries() -> anyhow::Result<()> {
        let root = project_root();
        let datasets = root.join("../shared/datasets");
        if !datasets.join("livemcpbench/tools.json").exists() {
            eprintln!("skipping: datasets not found at {}", datasets.display());
            return Ok(());
        }
        let report = run(&datasets, &root.join("tests/data/search/queries.json"))?;
        println!("{report}");
        for o in report.outcomes.iter().filter(|o| o.ours_rank != Some(1)) {
            println!(
                "miss [{}] {:?}: ours {:?} bm25 {:?} top {:?}",
                o.corpus, o.query, o.ours_rank, o.bm25_rank, o.ours_top
            );
        }
        let overall = report.overall();
        assert!(
            overall.ours.mrr > overall.bm25.mrr,
            "MRR: ours {:?} vs BM25 {:?}",
            overall.ours,
            overall.bm25
        );
        assert!(
            overall.ours.hit_at_1 > overall.bm25.hit_at_1,
            "Hit@1: ours {:?} vs BM25 {:?}",
            overall.ours,
            overall.bm25
        );
        Ok(())
    }
}
