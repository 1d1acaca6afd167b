//! Our tool ranking: BM25F over the fields of a tool (name, description,
//! parameters, server), with stemming, stopwords, CJK n-grams, related terms at
//! a lower weight, a reward for covering more of the query, and boosts for
//! tool-name matches. It ranks what it is given and knows nothing of tenants
//! or views: the caller builds one index per view.
//!
//! Measured and left out: a bonus for query word pairs found next to each
//! other in a name or description made no difference on the labelled queries.
//!
//! Query cost is proportional to the postings of the query's terms; scores
//! accumulate in per-thread arrays reused across queries (`ScoreScratch`).
//!
//!
//! The index's data and its small helpers are here; building it from
//! documents is in `builder`, a query's analysis into concepts in
//! `query_plan`, and ranking in `scoring`. Each of those uses this file and
//! nothing here uses them.

mod builder;
mod query_plan;
mod scoring;

use std::collections::HashMap;

/// Ranks tools for natural-language queries. Immutable once built; share it
/// behind an `Arc` and swap in a new one when the tool set changes.
///
/// ```
/// use quiver_view::search::{SearchDoc, SearchIndex};
/// let doc = |name: &str, description: &str| SearchDoc {
///     name: name.into(),
///     server: "github".into(),
///     description: description.into(),
///     ..SearchDoc::default()
/// };
/// let docs = [doc("list_issues", "List issues of a repository"),
///             doc("create_issue", "Open a new issue in a repository")];
/// let index = SearchIndex::build(&docs);
/// let hits = index.search("create a github issue", 5);
/// assert_eq!(hits[0].doc, 1);
/// assert!(hits[0].score > hits[1].score);
/// ```
#[derive(Debug)]
pub struct SearchIndex {
    vocabulary: HashMap<Box<str>, u32>,
    terms: Vec<Postings>,
    /// `name_terms[name_offsets[d]..name_offsets[d + 1]]`: the terms of doc
    /// d's name, with their IDF.
    name_offsets: Vec<u32>,
    name_terms: Vec<(u32, f32)>,
    /// Normalised `name` and `server + name` → docs.
    exact_names: HashMap<Box<str>, Vec<u32>>,
    /// Normalised names, sorted, for prefix matches.
    sorted_names: Vec<(Box<str>, u32)>,
    /// Normalised parameter names → docs.
    param_names: HashMap<Box<str>, Vec<u32>>,
    docs: usize,
}

#[derive(Debug, Default)]
struct Postings {
    idf: f32,
    list: Box<[Posting]>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Saturated, length-normalised, field-weighted term frequency, in `0..1`.
    weight: f32,
}

impl SearchIndex {
    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether no tools are indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }
}

/// Lowercase letters and digits only: `Get-Weather` and `get_weather` meet.
fn normalize_name(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// BM25's inverse document frequency (always positive).
pub(crate) fn idf(docs: usize, containing: usize) -> f32 {
    let (n, df) = (docs as f32, containing as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}
