//! The ranking a view serves: our lexical ranking ([`SearchIndex`]) blended,
//! tool by tool over the whole view, with the cosine between the query's and
//! each tool's sentence vectors, plus an optional per-tool adjustment learned
//! from outcomes. Without a model it is the lexical ranking unchanged.
//!
//! Both scores are absolute, so one fixed blend works for every query:
//! the lexical score is already in `0..=1` (the share of the best score a tool
//! could get), and the cosine is mapped to `0..=1` between a floor below which
//! two MiniLM sentences are unrelated and a ceiling above which they are near
//! paraphrases. A rank-level fusion of two top-k lists would lose how *much*
//! better one tool is than the next; this keeps it.
//!
//! The English-only model says little about Chinese or other non-Latin text,
//! so its weight shrinks with the share of such characters in the query.

use std::{
    sync::{Arc, Condvar, Mutex, OnceLock},
    time::Duration,
};

use super::{SearchDoc, SearchHit, SearchIndex, Subset, semantic::SemanticModel, top_k::TopK};
use crate::tool_set::ToolSet;

/// How the two scores are blended. [`Blend::DEFAULT`] was chosen on the
/// `tune` split of the five public benchmarks and of the project's queries:
/// the best mean MRR among blends that cost no set more than 0.01 against the
/// blend before it (`tune_blend` in `view/tests/semantic_search.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blend {
    /// Weight of the lexical score.
    pub lexical: f32,
    /// Weight of the calibrated cosine.
    pub semantic: f32,
    /// Cosine mapped to 0.
    pub cos_floor: f32,
    /// Cosine mapped to 1.
    pub cos_ceiling: f32,
    /// Tools with no lexical match need at least this cosine to be shown at all.
    pub min_semantic_only: f32,
}

impl Blend {
    /// The blend used by views.
    pub const DEFAULT: Blend = Blend {
        lexical: 0.7,
        semantic: 0.3,
        cos_floor: 0.1,
        cos_ceiling: 0.9,
        min_semantic_only: 0.1,
    };

    /// The cosine mapped to `0..=1`.
    pub fn calibrate(&self, cos: f32) -> f32 {
        ((cos - self.cos_floor) / (self.cos_ceiling - self.cos_floor)).clamp(0.0, 1.0)
    }
}

impl Default for Blend {
    fn default() -> Self {
        Blend::DEFAULT
    }
}

/// Tool vectors of one index.
#[derive(Debug)]
struct Vectors {
    model: Arc<SemanticModel>,
    /// `docs × dim`, row per tool, unit length.
    matrix: Vec<f32>,
}

impl Vectors {
    /// The vector of document `doc`.
    fn row(&self, doc: usize, dim: usize) -> Option<&[f32]> {
        self.matrix.get(doc * dim..(doc + 1) * dim)
    }
}

/// Where an index's vectors land once they are built; set at most once.
#[derive(Debug, Default)]
struct VectorSlot {
    vectors: OnceLock<Vectors>,
    /// Held while filling and while a waiter checks `vectors`, so a waiter
    /// never misses the notification.
    lock: Mutex<()>,
    filled: Condvar,
}

impl VectorSlot {
    fn fill(&self, vectors: Vectors) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.vectors.set(vectors);
        self.filled.notify_all();
    }
}

/// Lexical + semantic ranking over one set of tools, shared by every view
/// of them: each view ranks its [`Subset`]. The lexical side is immutable
/// once built; the vectors (one matrix, whatever the number of views) arrive
/// at most once, possibly later ([`HybridIndex::build_deferred`]).
#[derive(Debug)]
pub struct HybridIndex {
    lexical: SearchIndex,
    vectors: Arc<VectorSlot>,
}

impl HybridIndex {
    /// Indexes `docs` lexically and, with a model, semantically (tool vectors
    /// from the model's cache where it has them, the rest embedded on the
    /// calling thread). If the model fails on a tool, the index is lexical
    /// and the failure is logged.
    pub fn build(docs: &[SearchDoc], model: Option<Arc<SemanticModel>>) -> HybridIndex {
        let index = HybridIndex {
            lexical: SearchIndex::build(docs),
            vectors: Arc::default(),
        };
        if let Some(model) = model {
            match model.doc_vectors(docs) {
                Ok(matrix) => index.vectors.fill(Vectors { model, matrix }),
                Err(e) => tracing::warn!("search: tool vectors failed, ranking lexically: {e}"),
            }
        }
        index
    }

    /// Like [`HybridIndex::build`], but never waits for the model: when
    /// every vector is cached the index is hybrid at once; otherwise it
    /// ranks lexically until the model's background thread has embedded the
    /// new definitions, then hybrid. Dropping the index abandons the work
    /// (what was embedded stays cached for the next index).
    pub fn build_deferred(docs: &[SearchDoc], model: Option<Arc<SemanticModel>>) -> HybridIndex {
        HybridIndex::with_lexical(SearchIndex::build(docs), docs, model)
    }

    /// The index of `docs`, a new version of this one: the lexical side is
    /// [`SearchIndex::update`]d (unchanged tools are not analysed again) and
    /// the vectors come as in [`HybridIndex::build_deferred`] (unchanged
    /// tools' vectors are cached already). Ranks exactly as a fresh build.
    pub fn update(&self, docs: &[SearchDoc], model: Option<Arc<SemanticModel>>) -> HybridIndex {
        HybridIndex::with_lexical(self.lexical.update(docs), docs, model)
    }

    fn with_lexical(
        lexical: SearchIndex,
        docs: &[SearchDoc],
        model: Option<Arc<SemanticModel>>,
    ) -> HybridIndex {
        let index = HybridIndex {
            lexical,
            vectors: Arc::default(),
        };
        let Some(model) = model else {
            return index;
        };
        let wanted = Arc::downgrade(&index.vectors);
        let slot = wanted.clone();
        let owner = model.clone();
        let now = model.vectors_now_or_later(
            docs,
            move || wanted.strong_count() > 0,
            move |matrix| {
                if let Some(slot) = slot.upgrade() {
                    slot.fill(Vectors {
                        model: owner,
                        matrix,
                    });
                }
            },
        );
        if let Some(matrix) = now {
            index.vectors.fill(Vectors { model, matrix });
        }
        index
    }

    /// Whether this index ranks semantically too (its vectors are there).
    pub fn is_semantic(&self) -> bool {
        self.vectors.vectors.get().is_some()
    }

    /// Waits up to `timeout` for vectors being built in the background;
    /// returns [`HybridIndex::is_semantic`].
    pub fn wait_semantic(&self, timeout: Duration) -> bool {
        let slot = &self.vectors;
        let guard = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = slot
            .filled
            .wait_timeout_while(guard, timeout, |_| slot.vectors.get().is_none());
        self.is_semantic()
    }

    /// The lexical index inside.
    pub fn lexical(&self) -> &SearchIndex {
        &self.lexical
    }

    /// The subset of `set`'s tools (see [`SearchIndex::subset`]).
    pub fn subset(&self, set: ToolSet) -> Subset {
        self.lexical.subset(set)
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.lexical.len()
    }

    /// Whether no tools are indexed.
    pub fn is_empty(&self) -> bool {
        self.lexical.is_empty()
    }

    /// Bytes taken by the tool vectors.
    pub fn vector_bytes(&self) -> usize {
        self.vectors.vectors.get().map_or(0, |v| v.matrix.len() * 4)
    }

    /// The `limit` best tools for `query`, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_adjusted(query, limit, |_| 0.0)
    }

    /// Like [`HybridIndex::search`], with `adjust(doc)` added to each tool's
    /// blended score (learned from outcomes; small, positive or negative).
    /// Only tools that match the query lexically or semantically are ranked:
    /// an adjustment alone never brings in an unrelated tool.
    pub fn search_adjusted(
        &self,
        query: &str,
        limit: usize,
        adjust: impl Fn(usize) -> f32,
    ) -> Vec<SearchHit> {
        let vector = self.query_vector(query);
        self.search_embedded(query, vector.as_deref(), limit, adjust)
    }

    /// Like [`HybridIndex::search_adjusted`], with the query's vector
    /// already computed by [`HybridIndex::query_vector`] (`None`: lexical
    /// ranking), so a caller that needs it too embeds the query once.
    pub fn search_embedded(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        limit: usize,
        adjust: impl Fn(usize) -> f32,
    ) -> Vec<SearchHit> {
        self.search_embedded_in(self.lexical.everything(), query, vector, limit, adjust)
    }

    /// Like [`HybridIndex::search_embedded`], ranking `subset`'s tools only,
    /// exactly as an index of those tools alone would (hits name documents of
    /// this index).
    pub fn search_embedded_in(
        &self,
        subset: &Subset,
        query: &str,
        vector: Option<&[f32]>,
        limit: usize,
        adjust: impl Fn(usize) -> f32,
    ) -> Vec<SearchHit> {
        if limit == 0 || subset.is_empty() {
            return Vec::new();
        }
        let lexical = self.lexical.search_in(subset, query, subset.len());
        let vectors = vector.and_then(|q| Some((q, self.vectors.vectors.get()?)));
        let Some((q, vectors)) =
            vectors.filter(|(q, v)| !q.is_empty() && v.matrix.len() == self.len() * q.len())
        else {
            let mut top = TopK::new(limit);
            for hit in &lexical {
                top.push(hit.doc as u32, hit.score + adjust(hit.doc));
            }
            return clamp_scores(top.into_hits());
        };
        let dim = q.len();
        let cosines = subset.tools().iter().map(|doc| {
            let cos = vectors.row(doc, dim).map_or(0.0, |row| dot(row, q));
            (doc, cos)
        });
        blend_ranked(
            &lexical,
            self.len(),
            cosines,
            &Blend::DEFAULT,
            latin_share(query),
            limit,
            adjust,
        )
    }

    /// The query's unit vector, or `None` without a model (or when the
    /// query cannot be embedded; that is logged).
    pub fn query_vector(&self, query: &str) -> Option<Vec<f32>> {
        self.query_vectors(query).map(|(ranked, _)| ranked)
    }

    /// The vector the query is ranked with and the model's own, for
    /// comparing it with past queries ([`SemanticModel::query_vectors`]).
    pub fn query_vectors(&self, query: &str) -> Option<(Vec<f32>, Vec<f32>)> {
        let vectors = self.vectors.vectors.get()?;
        match vectors.model.query_vectors(query) {
            Ok(q) => Some(q),
            Err(e) => {
                tracing::warn!("search: query not embedded, ranking lexically: {e}");
                None
            }
        }
    }

    /// The cosine of the query with every tool, or `None` without a model
    /// (or when the query cannot be embedded; that is logged).
    pub fn query_cosines(&self, query: &str) -> Option<Vec<f32>> {
        let q = self.query_vector(query)?;
        let vectors = self.vectors.vectors.get()?;
        let dim = q.len();
        if dim == 0 || vectors.matrix.len() % dim != 0 {
            return None;
        }
        Some(
            vectors
                .matrix
                .chunks_exact(dim)
                .map(|row| dot(row, &q))
                .collect(),
        )
    }
}

/// The blend of one query over a whole view: `lexical` hits (any order, scores
/// in `0..=1`) and the cosine of every tool, best `limit` first.
pub(crate) fn rank_blended(
    lexical: &[SearchHit],
    cosines: &[f32],
    blend: &Blend,
    latin: f32,
    limit: usize,
    adjust: impl Fn(usize) -> f32,
) -> Vec<SearchHit> {
    let docs = cosines.iter().copied().enumerate();
    blend_ranked(lexical, cosines.len(), docs, blend, latin, limit, adjust)
}

/// [`rank_blended`] over the documents `cosines` yields (ascending, each
/// with its cosine) of an index of `docs` documents.
fn blend_ranked(
    lexical: &[SearchHit],
    docs: usize,
    cosines: impl Iterator<Item = (usize, f32)>,
    blend: &Blend,
    latin: f32,
    limit: usize,
    adjust: impl Fn(usize) -> f32,
) -> Vec<SearchHit> {
    let weight = blend.semantic * latin;
    let total = blend.lexical + weight;
    let mut lex = vec![0.0f32; docs];
    for hit in lexical {
        lex[hit.doc] = hit.score;
    }
    let mut top = TopK::new(limit);
    for (doc, cos) in cosines {
        let l = lex.get(doc).copied().unwrap_or(0.0);
        if l == 0.0 && (weight == 0.0 || cos < blend.min_semantic_only) {
            continue;
        }
        let score = (blend.lexical * l + weight * blend.calibrate(cos)) / total;
        top.push(doc as u32, score + adjust(doc));
    }
    clamp_scores(top.into_hits())
}

fn clamp_scores(mut hits: Vec<SearchHit>) -> Vec<SearchHit> {
    for hit in &mut hits {
        hit.score = hit.score.clamp(0.0, 1.0);
    }
    hits
}

/// Dot product, in eight lanes so that the compiler vectorises it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = a.len() / 8 * 8;
    for (x, y) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a[chunks..]
        .iter()
        .zip(&b[chunks..])
        .map(|(x, y)| x * y)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// Share of the query's letters that are Latin (the model's language), 1 for
/// a query without letters.
pub fn latin_share(query: &str) -> f32 {
    let (mut latin, mut letters) = (0usize, 0usize);
    for c in query.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if c.is_ascii_alphabetic() || ('\u{00C0}'..='\u{024F}').contains(&c) {
            latin += 1;
        }
    }
    if letters == 0 {
        1.0
    } else {
        latin as f32 / letters as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
    }

    #[test]
    fn latin_share_counts_letters_only() {
        assert_eq!(latin_share("weather in Paris 2024"), 1.0);
        assert_eq!(latin_share("查询天气"), 0.0);
        assert_eq!(latin_share("12 + 3"), 1.0);
        assert!((latin_share("ab天气") - 0.5).abs() < 1e-6);
    }

    #[test]
    fn calibration_is_clamped_and_monotonic() {
        let b = Blend::DEFAULT;
        assert_eq!(b.calibrate(-1.0), 0.0);
        assert_eq!(b.calibrate(1.0), 1.0);
        assert!(b.calibrate(0.4) < b.calibrate(0.5));
    }

    #[test]
    fn without_a_model_it_is_the_lexical_ranking() {
        let doc = |name: &str, description: &str| SearchDoc {
            name: name.into(),
            server: "s".into(),
            description: description.into(),
            ..SearchDoc::default()
        };
        let docs = [
            doc("list_issues", "List issues of a repository"),
            doc("create_issue", "Open a new issue in a repository"),
        ];
        let hybrid = HybridIndex::build(&docs, None);
        assert!(!hybrid.is_semantic());
        let lexical = SearchIndex::build(&docs);
        assert_eq!(
            hybrid.search("create a github issue", 5),
            lexical.search("create a github issue", 5)
        );
        // An adjustment reorders matching tools but brings in nothing else.
        let adjusted = hybrid.search_adjusted("issue", 5, |d| if d == 0 { 0.5 } else { 0.0 });
        assert_eq!(adjusted[0].doc, 0);
        assert!(hybrid.search_adjusted("xyzzy", 5, |_| 1.0).is_empty());
    }
}
