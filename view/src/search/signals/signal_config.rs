//! How much the signal store keeps and how fast what it learned fades. Plain
//! settings with documented defaults; the store reads them, nothing else.

/// Limits and rates of the store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalConfig {
    /// Seconds after which a signal counts half. Default 14 days.
    pub half_life_secs: f64,
    /// Query → tool associations kept per tenant. Default 512.
    pub max_associations: usize,
    /// Recent searches a call can be matched to. Default 32.
    pub max_pending: usize,
    /// Distinct zero-hit queries kept per tenant. Default 128.
    pub max_zero_hit: usize,
    /// Tools with counts kept per tenant. Default 2048.
    pub max_tools: usize,
    /// Tenants whose signals are kept; a tenant past it is not learned
    /// from (tenants are the operator's, so this is a backstop). Default
    /// 100,000.
    pub max_tenants: usize,
    /// Largest adjustment of a tool's score (scores are in `0..=1`). Default 0.15.
    pub max_adjustment: f32,
    /// A call is matched to a search at most this many seconds before it. Default 600.
    pub call_window_secs: u64,
    /// Query similarity below which an association says nothing about a
    /// query. Similarity is the Jaccard index of analysed terms or, when
    /// both queries were embedded, the larger of that and their rescaled
    /// cosine. Default 0.1.
    pub min_similarity: f32,
    /// Cosine of two query vectors that counts as no similarity; cosines
    /// above it are rescaled to `0..=1` (MiniLM puts unrelated sentences
    /// near 0.1–0.3 and paraphrases above 0.7). Default 0.8: only a
    /// near-paraphrase counts by meaning; words shared with a past query
    /// still count by their Jaccard index.
    ///
    /// The three defaults were chosen on the tune splits of MetaTool,
    /// azure-mcp and APIBench HuggingFace with the query adapter on
    /// (`tune_signals` in `view/tests/semantic_search.rs`: half replayed,
    /// half measured, the best mean lift harming no set). The earlier ones
    /// (0.25, 0.1, 0.3), chosen on MetaTool alone, cost azure-mcp 0.08 test
    /// MRR: its sibling tools' past queries are close in meaning, and every
    /// one of them moved scores.
    pub cosine_floor: f32,
}

impl Default for SignalConfig {
    fn default() -> Self {
        SignalConfig {
            half_life_secs: 14.0 * 86_400.0,
            max_associations: 512,
            max_pending: 32,
            max_zero_hit: 128,
            max_tools: 2048,
            max_tenants: 100_000,
            max_adjustment: 0.15,
            call_window_secs: 600,
            min_similarity: 0.1,
            cosine_floor: 0.8,
        }
    }
}
