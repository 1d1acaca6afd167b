//! Our tool ranking: BM25F over the fields of a tool (name, description,
//! parameters, server), with stemming, stopwords, CJK n-grams, related terms at
//! a lower weight, a reward for covering more of the query, and boosts for
//! tool-name matches.
//!
//! One index serves every view of a catalogue. It keeps what does not depend
//! on who looks (each posting's raw per-field term counts, each tool's field
//! lengths, names); what does (document frequencies, average field lengths,
//! the number of tools) is derived per query from a [`Subset`], the view's
//! visibility. So a view costs a bitset, and a tool a tenant cannot see never
//! changes that tenant's scores: every statistic is taken over the subset
//! alone, exactly as an index built from the subset's tools would take it.
//!
//! Measured and left out: a bonus for query word pairs found next to each
//! other in a name or description made no difference on the labelled queries.
//!
//! Query cost is proportional to the postings of the query's terms; scores
//! accumulate in per-thread arrays reused across queries (`ScoreScratch`).
//!
//! The index's data and its small helpers are here; building it from
//! documents (and from the previous version plus a delta) is in `builder`, a
//! query's analysis into concepts in `query_plan`, and ranking in `scoring`.
//! Each of those uses this file and nothing here uses them.

mod builder;
mod query_plan;
mod scoring;

use std::collections::HashMap;

use crate::tool_set::ToolSet;

/// The fields of a tool, in the order of the tables below.
#[derive(Debug, Clone, Copy)]
enum Field {
    Name = 0,
    Description = 1,
    ParamName = 2,
    ParamDescription = 3,
    ServerName = 4,
    ServerDescription = 5,
    /// The first sentence of the description, which usually says what the
    /// tool does; the rest is detail (arguments, caveats, examples).
    Summary = 6,
}

const FIELDS: usize = 7;
/// How much a match in each field counts. The name says what a tool does in
/// two or three words; parameters and the server only hint at it.
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.0, 0.6, 0.3, 1.0, 0.4, 0.8];
/// BM25 length normalisation per field: short fields (names) barely need it.
const FIELD_B: [f32; FIELDS] = [0.3, 0.75, 0.5, 0.75, 0.2, 0.75, 0.5];
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// A term found in at least one tool in this many also keeps its postings
/// as a bitset, so that its frequency within a view is a popcount.
const BITSET_SHARE: usize = 32;

/// Ranks tools for natural-language queries. Immutable once built; share it
/// behind an `Arc`, rank any [`Subset`] of its tools with
/// [`SearchIndex::search_in`], and derive the next version with
/// [`SearchIndex::update`] when the tools change.
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
    /// Each document's field lengths (in words).
    lengths: Vec<[f32; FIELDS]>,
    /// `name_terms[name_offsets[d]..name_offsets[d + 1]]`: the terms of doc
    /// d's name, in the order they first appear in it.
    name_offsets: Vec<u32>,
    name_terms: Vec<u32>,
    /// Normalised `name` and `server + name` → docs.
    exact_names: HashMap<Box<str>, Vec<u32>>,
    /// Normalised names, sorted, for prefix matches.
    sorted_names: Vec<(Box<str>, u32)>,
    /// Normalised parameter names → docs.
    param_names: HashMap<Box<str>, Vec<u32>>,
    /// What each document was built from (see [`DocDigest`]).
    digests: Vec<DocDigest>,
    /// Term counts a posting's `u16` cannot hold, by (term, doc).
    large_counts: HashMap<(u32, u32), [f32; FIELDS]>,
    /// Every document, for [`SearchIndex::search`].
    everything: Subset,
    /// Documents analysed to make this version (the rest were reused).
    analysed: usize,
}

/// The digest of a [`crate::search::SearchDoc`]'s text: two documents with
/// the same digest are analysed alike, so an update reuses their postings.
pub(crate) type DocDigest = [u8; 16];

#[derive(Debug, Default)]
struct Postings {
    /// By document, ascending.
    list: Box<[Posting]>,
    /// The same documents as a bitset, for terms in many documents.
    bits: Option<Box<[u64]>>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Occurrences per field; `u16::MAX` means "look in `large_counts`".
    counts: [u16; FIELDS],
}

/// The tools one view may see of an index, with the field statistics BM25
/// takes over them. Built by [`SearchIndex::subset`]; small (a bitset and
/// a few numbers), so every view keeps its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Subset {
    set: ToolSet,
    /// Average length of each field over the subset (1 where empty).
    average: [f32; FIELDS],
}

impl Subset {
    /// The tools in it.
    pub fn tools(&self) -> &ToolSet {
        &self.set
    }

    /// Number of tools in it.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether it holds no tool.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Heap bytes it holds.
    pub fn heap_bytes(&self) -> usize {
        self.set.heap_bytes()
    }
}

impl SearchIndex {
    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no tools are indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Every indexed tool, as a subset.
    pub fn everything(&self) -> &Subset {
        &self.everything
    }

    /// The subset of `set`'s tools (a set over this index's documents):
    /// ranking in it gives exactly what an index of those tools alone gives.
    pub fn subset(&self, set: ToolSet) -> Subset {
        let mut average = [0.0f32; FIELDS];
        for doc in set.iter() {
            if let Some(lengths) = self.lengths.get(doc) {
                for (a, l) in average.iter_mut().zip(lengths) {
                    *a += l;
                }
            }
        }
        let n = set.len();
        for a in &mut average {
            *a = if n > 0 && *a > 0.0 {
                *a / n as f32
            } else {
                1.0
            };
        }
        Subset { set, average }
    }

    /// How many documents were analysed to make this index; the others'
    /// postings were taken from the version it was updated from.
    pub fn analysed(&self) -> usize {
        self.analysed
    }

    /// Distinct terms known to the index (in any tool).
    pub fn terms(&self) -> usize {
        self.terms.len()
    }

    /// Postings held (one per term per tool that has it).
    pub fn postings(&self) -> usize {
        self.terms.iter().map(|t| t.list.len()).sum()
    }

    /// Approximate heap bytes of the index (postings, bitsets, names).
    pub fn heap_bytes(&self) -> usize {
        let postings: usize = self
            .terms
            .iter()
            .map(|t| {
                t.list.len() * size_of::<Posting>() + t.bits.as_ref().map_or(0, |b| b.len() * 8)
            })
            .sum();
        let vocabulary: usize = self.vocabulary.keys().map(|k| k.len() + 24).sum();
        let names: usize = self
            .sorted_names
            .iter()
            .map(|(n, _)| n.len() * 2 + 40)
            .sum();
        postings
            + vocabulary
            + names
            + self.lengths.len() * size_of::<[f32; FIELDS]>()
            + self.name_terms.len() * 4
            + self.digests.len() * size_of::<DocDigest>()
    }

    /// The id of `word` when one of `subset`'s documents holds it.
    fn term_in(&self, word: &str, subset: &Subset) -> Option<u32> {
        let id = *self.vocabulary.get(word)?;
        self.known_in(id, subset).then_some(id)
    }

    /// The number of `subset`'s documents holding `term`.
    fn frequency_in(&self, term: u32, subset: &Subset) -> usize {
        let postings = &self.terms[term as usize];
        if subset.set.is_full() {
            return postings.list.len();
        }
        match &postings.bits {
            Some(bits) => subset.set.count_common(bits),
            None => postings
                .list
                .iter()
                .filter(|p| subset.set.contains(p.doc as usize))
                .count(),
        }
    }

    /// Whether any of `subset`'s documents holds `term`.
    fn known_in(&self, term: u32, subset: &Subset) -> bool {
        let postings = &self.terms[term as usize];
        if subset.set.is_full() {
            return !postings.list.is_empty();
        }
        match &postings.bits {
            Some(bits) => subset.set.meets(bits),
            None => postings
                .list
                .iter()
                .any(|p| subset.set.contains(p.doc as usize)),
        }
    }

    /// A posting's saturated, length-normalised, field-weighted term
    /// frequency (BM25F, in `0..1`) under `subset`'s average field lengths.
    fn weight(&self, term: u32, posting: &Posting, subset: &Subset) -> f32 {
        let lengths = &self.lengths[posting.doc as usize];
        let large = posting.counts.contains(&u16::MAX).then(|| {
            self.large_counts
                .get(&(term, posting.doc))
                .copied()
                .unwrap_or_default()
        });
        let mut tf = 0.0f32;
        for f in 0..FIELDS {
            let count = match &large {
                Some(counts) => counts[f],
                None => f32::from(posting.counts[f]),
            };
            // Fields without the term add nothing (adding zero would not
            // change the sum either).
            if count != 0.0 {
                let norm = 1.0 - FIELD_B[f] + FIELD_B[f] * lengths[f] / subset.average[f];
                tf += FIELD_WEIGHT[f] * count / norm;
            }
        }
        tf / (K1 + tf)
    }
}

/// The IDFs of one query's terms within one subset, each worked out once.
#[derive(Debug, Default)]
pub(crate) struct IdfMemo {
    known: std::cell::RefCell<HashMap<u32, f32>>,
}

impl IdfMemo {
    /// The IDF of `term` among `subset`'s documents.
    fn of(&self, index: &SearchIndex, term: u32, subset: &Subset) -> f32 {
        if let Some(&idf) = self.known.borrow().get(&term) {
            return idf;
        }
        let value = idf(subset.len(), index.frequency_in(term, subset));
        self.known.borrow_mut().insert(term, value);
        value
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
