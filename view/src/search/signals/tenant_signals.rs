//! One tenant's signals as kept in memory and on disk, and the rules that keep
//! them bounded and fading: associations of queries with tools, recent
//! searches a call can be matched to, zero-hit queries and per-tool counts.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::{query_vector::QueryVector, signal_config::SignalConfig, tenant_stats::ToolCounts};
use crate::search::Analyzer;

/// One tenant's signals (what is persisted).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TenantSignals {
    pub(crate) tenant: String,
    pub(crate) associations: Vec<Association>,
    pub(crate) pending: VecDeque<PendingSearch>,
    pub(crate) zero_hit: Vec<ZeroHit>,
    pub(crate) tools: HashMap<String, ToolCounts>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Association {
    /// Analysed query terms, sorted and distinct.
    pub(crate) terms: Vec<String>,
    /// The query's vector, when a model embedded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) vector: Option<QueryVector>,
    pub(crate) tool: String,
    /// Weight as of `at`.
    pub(crate) weight: f32,
    pub(crate) at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PendingSearch {
    pub(crate) terms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) vector: Option<QueryVector>,
    pub(crate) shown: Vec<String>,
    pub(crate) at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ZeroHit {
    pub(crate) query: String,
    pub(crate) count: u32,
    pub(crate) at: u64,
}

pub(crate) fn counts<'a>(
    t: &'a mut TenantSignals,
    tool: &str,
    now: u64,
    max: usize,
) -> &'a mut ToolCounts {
    if !t.tools.contains_key(tool) && t.tools.len() >= max {
        // Forget the tool least recently seen.
        if let Some(oldest) = t
            .tools
            .iter()
            .min_by_key(|(_, c)| c.at)
            .map(|(k, _)| k.clone())
        {
            t.tools.remove(&oldest);
        }
    }
    let c = t.tools.entry(tool.to_owned()).or_default();
    c.at = now;
    c
}

/// The latest search within the window that showed `tool`, and its position.
pub(crate) fn matching_search<'a>(
    t: &'a TenantSignals,
    tool: &str,
    now: u64,
    window: u64,
) -> Option<(&'a PendingSearch, usize)> {
    t.pending
        .iter()
        .rev()
        .filter(|s| now.saturating_sub(s.at) <= window)
        .find_map(|s| s.shown.iter().position(|x| x == tool).map(|p| (s, p)))
}

pub(crate) fn associate(
    t: &mut TenantSignals,
    config: &SignalConfig,
    search: &PendingSearch,
    tool: &str,
    weight: f32,
    now: u64,
) {
    if search.terms.is_empty() && search.vector.is_none() {
        return;
    }
    if let Some(a) = t
        .associations
        .iter_mut()
        .find(|a| a.tool == tool && a.terms == search.terms && a.vector == search.vector)
    {
        a.weight = decayed(a.weight, a.at, now, config) + weight;
        a.at = now;
        return;
    }
    if t.associations.len() >= config.max_associations {
        // Forget the association that says least today.
        let weakest = (0..t.associations.len()).min_by(|&i, &j| {
            let w = |k: usize| {
                decayed(t.associations[k].weight, t.associations[k].at, now, config).abs()
            };
            w(i).total_cmp(&w(j))
        });
        if let Some(i) = weakest {
            t.associations.swap_remove(i);
        }
    }
    t.associations.push(Association {
        terms: search.terms.clone(),
        vector: search.vector.clone(),
        tool: tool.to_owned(),
        weight,
        at: now,
    });
}

pub(crate) fn decayed(weight: f32, at: u64, now: u64, config: &SignalConfig) -> f32 {
    let age = now.saturating_sub(at) as f64;
    (weight as f64 * 0.5f64.powf(age / config.half_life_secs)) as f32
}

/// Analysed terms of a query, sorted and distinct.
/// Terms of a query kept in the signals, at most: a query is a few words;
/// a longer one (a pasted document) is remembered by its first ones, so a
/// tenant's signals stay small whatever it searches for.
pub(crate) const MAX_QUERY_TERMS: usize = 32;

/// Characters of a query kept as a zero-hit query, at most.
pub(crate) const MAX_QUERY_CHARS: usize = 256;

pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    Analyzer::new().analyze(query, |term, _| {
        if terms.len() < MAX_QUERY_TERMS * 4 {
            terms.push(term.to_owned());
        }
    });
    terms.sort_unstable();
    terms.dedup();
    terms.truncate(MAX_QUERY_TERMS);
    terms
}

/// `query`, trimmed and cut to [`MAX_QUERY_CHARS`] characters.
pub(crate) fn kept_query(query: &str) -> String {
    query.trim().chars().take(MAX_QUERY_CHARS).collect()
}

pub(crate) fn jaccard(a: &[String], b: &[String]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let common = a.iter().filter(|t| b.binary_search(t).is_ok()).count();
    common as f32 / (a.len() + b.len() - common) as f32
}
