//! What searches led to, per tenant: search → describe → call → success or
//! failure, and tools found but passed over. Later searches of the same
//! tenant are nudged towards tools that worked for similar queries and away
//! from tools that failed or were passed over. One tenant's signals never
//! touch another's ranking.
//!
//! Memory is bounded per tenant (associations, pending searches, zero-hit
//! queries and tool counts are capped), old signals fade with a half-life,
//! and each tenant's signals are one JSON file in the store's directory, so
//! they survive restarts and a reset deletes them. Recording only marks a
//! tenant changed; changed tenants are written by [`SignalStore::flush`]
//! (once a second by the flusher [`install`] starts, and at shutdown), so a
//! search never waits for the disk. This module never ranks: it hands
//! [`super::HybridIndex::search_adjusted`] a score adjustment per tool.
//!
//! The store and its learning are here; its settings are in `signal_config`,
//! the per-tenant records in `tenant_signals` (query vectors in `query_vector`), files in `persistence`,
//! what operators are shown in `tenant_stats`, and the process-wide store in
//! `installed`.

mod installed;
mod persistence;
mod query_vector;
mod signal_config;
mod tenant_signals;
mod tenant_stats;
#[cfg(test)]
mod test_support;

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::Mutex,
};

pub use self::{
    installed::{flush_installed, install, installed, now_secs},
    persistence::SignalStoreError,
    signal_config::SignalConfig,
    tenant_stats::{TenantStats, ToolCounts, UncalledTool, ZeroHitQuery},
};
use self::{
    query_vector::QueryVector,
    tenant_signals::{
        PendingSearch, TenantSignals, ZeroHit, associate, counts, decayed, jaccard, kept_query,
        matching_search, query_terms,
    },
};

/// Weight of a successful call after a search that showed the tool.
const SUCCESS: f32 = 1.0;
/// Weight of a failed call.
const FAILURE: f32 = -0.5;
/// Weight of a `describe` of a shown tool (interest, not yet proof).
const DESCRIBED: f32 = 0.3;
/// Weight given to tools shown above the one called (found, passed over).
const PASSED_OVER: f32 = -0.1;
/// Share of the largest adjustment that a tool's record of successful calls
/// alone (whatever the query) can earn.
const PRIOR_SHARE: f32 = 0.0;

/// Per-tenant outcome signals, optionally persisted in a directory.
#[derive(Debug)]
pub struct SignalStore {
    dir: Option<PathBuf>,
    config: SignalConfig,
    tenants: Mutex<HashMap<String, TenantSignals>>,
    /// Tenants changed since their file was last written.
    dirty: Mutex<HashSet<String>>,
    /// Held while files are written or removed, so that an older snapshot
    /// never lands after a newer one or after a reset.
    disk: Mutex<()>,
}

impl SignalStore {
    /// A store in memory only.
    pub fn in_memory(config: SignalConfig) -> SignalStore {
        SignalStore {
            dir: None,
            config,
            tenants: Mutex::default(),
            dirty: Mutex::default(),
            disk: Mutex::default(),
        }
    }

    /// Records a search and the tools it showed (`server/tool`), best first.
    pub fn record_search(&self, tenant: &str, query: &str, shown: &[String], now: u64) {
        self.record_embedded_search(tenant, query, None, shown, now);
    }

    /// Like [`SignalStore::record_search`], with the query's unit vector
    /// (from the search itself), so that later queries worded differently
    /// but meaning the same learn from this one.
    pub fn record_embedded_search(
        &self,
        tenant: &str,
        query: &str,
        vector: Option<&[f32]>,
        shown: &[String],
        now: u64,
    ) {
        let terms = query_terms(query);
        let vector = vector.map(QueryVector::quantise);
        let config = self.config;
        self.update(tenant, |t| {
            if shown.is_empty() {
                let query = kept_query(query);
                match t.zero_hit.iter_mut().find(|z| z.query == query) {
                    Some(z) => {
                        z.count += 1;
                        z.at = now;
                    }
                    None => {
                        if t.zero_hit.len() >= config.max_zero_hit {
                            let oldest = (0..t.zero_hit.len()).min_by_key(|&i| t.zero_hit[i].at);
                            if let Some(i) = oldest {
                                t.zero_hit.swap_remove(i);
                            }
                        }
                        t.zero_hit.push(ZeroHit {
                            query,
                            count: 1,
                            at: now,
                        });
                    }
                }
                return;
            }
            for tool in shown {
                counts(t, tool, now, config.max_tools).shown += 1;
            }
            if t.pending.len() >= config.max_pending {
                t.pending.pop_front();
            }
            t.pending.push_back(PendingSearch {
                terms,
                vector,
                shown: shown.to_vec(),
                at: now,
            });
        });
    }

    /// Records a `describe` of `tool`.
    pub fn record_describe(&self, tenant: &str, tool: &str, now: u64) {
        let config = self.config;
        self.update(tenant, |t| {
            counts(t, tool, now, config.max_tools).described += 1;
            if let Some(search) =
                matching_search(t, tool, now, config.call_window_secs).map(|(s, _)| s.clone())
            {
                associate(t, &config, &search, tool, DESCRIBED, now);
            }
        });
    }

    /// Records a call of `tool` and whether it succeeded. The latest search
    /// that showed the tool learns from it; tools it showed above this one
    /// were passed over.
    pub fn record_call(&self, tenant: &str, tool: &str, success: bool, now: u64) {
        let config = self.config;
        self.update(tenant, |t| {
            let c = counts(t, tool, now, config.max_tools);
            if success {
                c.succeeded += 1;
            } else {
                c.failed += 1;
            }
            let Some((search, position)) =
                matching_search(t, tool, now, config.call_window_secs).map(|(s, p)| (s.clone(), p))
            else {
                return;
            };
            let weight = if success { SUCCESS } else { FAILURE };
            associate(t, &config, &search, tool, weight, now);
            if success {
                for other in &search.shown[..position] {
                    associate(t, &config, &search, other, PASSED_OVER, now);
                }
            }
        });
    }

    /// The adjustment of each tool's score (`server/tool` → value in
    /// `-max..=max`) for `query` by `tenant`; tools not named are unchanged.
    pub fn adjustments(&self, tenant: &str, query: &str, now: u64) -> HashMap<String, f32> {
        self.embedded_adjustments(tenant, query, None, now)
    }

    /// Like [`SignalStore::adjustments`], with the query's unit vector:
    /// past queries count by meaning as well as by shared words.
    pub fn embedded_adjustments(
        &self,
        tenant: &str,
        query: &str,
        vector: Option<&[f32]>,
        now: u64,
    ) -> HashMap<String, f32> {
        let terms = query_terms(query);
        let tenants = self.lock();
        let Some(t) = tenants.get(tenant) else {
            return HashMap::new();
        };
        let mut raw: HashMap<&str, f32> = HashMap::new();
        for a in &t.associations {
            let mut similarity = jaccard(&terms, &a.terms);
            if let (Some(q), Some(past)) = (vector, &a.vector) {
                let floor = self.config.cosine_floor;
                let semantic = (past.cosine(q) - floor) / (1.0 - floor);
                similarity = similarity.max(semantic);
            }
            if similarity >= self.config.min_similarity {
                *raw.entry(&a.tool).or_default() +=
                    similarity * decayed(a.weight, a.at, now, &self.config);
            }
        }
        let max = self.config.max_adjustment;
        let mut out: HashMap<String, f32> = raw
            .into_iter()
            .map(|(tool, v)| (tool.to_owned(), (1.0 - PRIOR_SHARE) * max * v.tanh()))
            .collect();
        // A tool that keeps working for this tenant earns a little whatever
        // the query; the lexical and semantic match still decide relevance.
        for (tool, c) in &t.tools {
            if c.succeeded > 0 {
                let record = (c.succeeded as f32 - c.failed as f32).max(0.0);
                let prior = PRIOR_SHARE * max * (record / (record + 3.0));
                let prior = decayed(prior, c.at, now, &self.config);
                if prior > 0.0 {
                    *out.entry(tool.clone()).or_default() += prior;
                }
            }
        }
        out
    }

    /// Zero-hit queries and tools found but never called, for `tenant`.
    pub fn stats(&self, tenant: &str) -> TenantStats {
        let tenants = self.lock();
        let Some(t) = tenants.get(tenant) else {
            return TenantStats {
                tenant: tenant.to_owned(),
                ..TenantStats::default()
            };
        };
        let mut zero_hit: Vec<ZeroHitQuery> = t
            .zero_hit
            .iter()
            .map(|z| ZeroHitQuery {
                query: z.query.clone(),
                count: z.count,
            })
            .collect();
        zero_hit.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.query.cmp(&b.query)));
        let mut never: Vec<UncalledTool> = t
            .tools
            .iter()
            .filter(|(_, c)| c.shown > 0 && c.succeeded + c.failed == 0)
            .map(|(tool, c)| UncalledTool {
                tool: tool.clone(),
                shown: c.shown,
            })
            .collect();
        never.sort_by(|a, b| b.shown.cmp(&a.shown).then_with(|| a.tool.cmp(&b.tool)));
        TenantStats {
            tenant: tenant.to_owned(),
            zero_hit_queries: zero_hit,
            found_never_called: never,
            associations: t.associations.len(),
        }
    }

    /// Tenants with signals, sorted.
    pub fn tenants(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock().keys().cloned().collect();
        names.sort();
        names
    }

    fn update(&self, tenant: &str, f: impl FnOnce(&mut TenantSignals)) {
        let mut tenants = self.lock();
        if tenants.len() >= self.config.max_tenants && !tenants.contains_key(tenant) {
            return;
        }
        let t = tenants
            .entry(tenant.to_owned())
            .or_insert_with(|| TenantSignals {
                tenant: tenant.to_owned(),
                ..TenantSignals::default()
            });
        f(t);
        drop(tenants);
        if self.dir.is_some() {
            let mut dirty = lock(&self.dirty);
            if !dirty.contains(tenant) {
                dirty.insert(tenant.to_owned());
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TenantSignals>> {
        lock(&self.tenants)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{test_support::*, *};

    #[test]
    fn a_successful_call_lifts_the_tool_for_similar_queries_of_that_tenant_only() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        store.record_search(
            "a",
            "convert a word document to pdf",
            &shown(&["x/docx", "x/pdf"]),
            now,
        );
        store.record_call("a", "x/pdf", true, now + 5);
        let a = store.adjustments("a", "convert word document into pdf", now + 10);
        assert!(a["x/pdf"] > 0.0, "{a:?}");
        // Shown above the tool that worked: passed over.
        assert!(a["x/docx"] < 0.0, "{a:?}");
        assert!(
            a.values()
                .all(|v| v.abs() <= SignalConfig::default().max_adjustment)
        );
        // Another tenant is untouched.
        assert!(
            store
                .adjustments("b", "convert word document into pdf", now + 10)
                .is_empty()
        );
        // An unrelated query gets only the small per-tool prior.
        let other = store.adjustments("a", "weather in paris", now + 10);
        assert!(other.get("x/pdf").copied().unwrap_or(0.0) < a["x/pdf"]);
        assert!(!other.contains_key("x/docx"));
    }

    #[test]
    fn embedded_queries_learn_from_past_queries_that_mean_the_same_in_other_words() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        let asked = unit(0, 1, 0.0);
        store.record_embedded_search(
            "a",
            "forecast tomorrow",
            Some(&asked),
            &shown(&["w/f"]),
            now,
        );
        store.record_call("a", "w/f", true, now);
        // No word in common; a cosine of about 0.95: the same question.
        let paraphrase = unit(0, 1, 0.33);
        let near = store.embedded_adjustments("a", "will it rain", Some(&paraphrase), now);
        assert!(near["w/f"] > 0.0, "{near:?}");
        // Without vectors only the words count: nothing.
        assert!(store.adjustments("a", "will it rain", now).is_empty());
        // An unrelated meaning (cosine 0) teaches nothing either.
        let unrelated = unit(2, 3, 0.0);
        assert!(
            store
                .embedded_adjustments("a", "will it rain", Some(&unrelated), now)
                .is_empty()
        );
        // Nor another tenant.
        assert!(
            store
                .embedded_adjustments("b", "will it rain", Some(&paraphrase), now)
                .is_empty()
        );
    }

    #[test]
    fn failures_push_down_and_signals_fade() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        store.record_search("a", "send an email", &shown(&["m/send"]), now);
        store.record_call("a", "m/send", false, now);
        assert!(store.adjustments("a", "send an email", now)["m/send"] < 0.0);
        store.record_search("a", "list files", &shown(&["f/ls"]), now);
        store.record_call("a", "f/ls", true, now);
        let fresh = store.adjustments("a", "list files", now)["f/ls"];
        let later = store.adjustments("a", "list files", now + 28 * DAY)["f/ls"];
        assert!(later > 0.0 && later < fresh * 0.5, "{fresh} then {later}");
    }

    #[test]
    fn a_call_long_after_the_search_teaches_nothing_about_the_query() {
        let store = SignalStore::in_memory(SignalConfig::default());
        store.record_search("a", "list files", &shown(&["f/ls"]), 0);
        store.record_call("a", "f/ls", true, 10_000);
        assert_eq!(store.stats("a").associations, 0);
    }

    #[test]
    fn memory_is_bounded() {
        let config = SignalConfig {
            max_associations: 16,
            max_pending: 4,
            max_zero_hit: 8,
            max_tools: 32,
            ..SignalConfig::default()
        };
        let store = SignalStore::in_memory(config);
        for i in 0..500u64 {
            let tool = format!("s/t{i}");
            store.record_search(
                "a",
                &format!("query number {i} word{i}"),
                std::slice::from_ref(&tool),
                i,
            );
            store.record_call("a", &tool, true, i);
            store.record_search("a", &format!("nothing {i}"), &[], i);
        }
        let tenants = store.lock();
        let t = &tenants["a"];
        assert!(t.associations.len() <= 16);
        assert!(t.pending.len() <= 4);
        assert!(t.zero_hit.len() <= 8);
        assert!(t.tools.len() <= 32);
    }
}
