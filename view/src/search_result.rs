//! One search result as every search surface shows it (code mode's `search`
//! tool, search mode's `search_tools`, a script's `search()`): one shape, one
//! rounding of the score, one limit.

use std::time::Instant;

use serde::Serialize;

use crate::{
    ToolView, ViewTool,
    search_telemetry::{self, SearchSurface},
};

/// The most results one search returns, whatever limit the caller asks for.
pub const MAX_SEARCH_RESULTS: usize = 20;

/// One ranked tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// Exposed (namespaced) name, as `call_tool` and `tools.call` take it.
    pub name: String,
    /// Upstream id.
    pub server: String,
    /// Tool name on that upstream.
    pub tool: String,
    /// One-line TypeScript signature from the tool on, `tool(args): result`
    /// (the server is its own field, so it is not repeated: answers stay small).
    pub signature: String,
    /// First sentence of the description.
    pub summary: String,
    /// Relevance, rounded to three decimals.
    pub score: f64,
    /// The `ui://` resource of the tool's MCP App view, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
}

impl SearchResult {
    /// The hit for `tool` at `score`.
    pub fn new(tool: ViewTool<'_>, score: f32) -> SearchResult {
        SearchResult {
            name: tool.tool.exposed_name.clone(),
            server: tool.tool.id.server.clone(),
            tool: tool.tool.id.tool.clone(),
            signature: relative_signature(tool),
            summary: tool.tool.stub.summary.clone(),
            score: (f64::from(score) * 1000.0).round() / 1000.0,
            app: tool.tool.def.app_resource().map(str::to_string),
        }
    }
}

/// The stub's signature without its `server.` prefix.
fn relative_signature(tool: ViewTool<'_>) -> String {
    let signature = &tool.tool.stub.signature;
    signature
        .strip_prefix(tool.server.js.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(signature)
        .to_string()
}

/// `requested` (or `default` when absent) within `1..=MAX_SEARCH_RESULTS`.
pub fn search_limit(requested: Option<usize>, default: usize) -> usize {
    requested.unwrap_or(default).clamp(1, MAX_SEARCH_RESULTS)
}

impl ToolView {
    /// The best `limit` tools for `query` by `tenant` (see [`ToolView::search_for`]),
    /// as hits; `limit` is capped at [`MAX_SEARCH_RESULTS`]. The search is
    /// measured under `surface` (see [`search_telemetry`]).
    pub fn search_results(
        &self,
        surface: SearchSurface,
        tenant: &str,
        query: &str,
        limit: usize,
    ) -> Vec<(ViewTool<'_>, SearchResult)> {
        let started = Instant::now();
        let limit = limit.clamp(1, MAX_SEARCH_RESULTS);
        let hits = match surface {
            SearchSurface::Console => self.search_without_learning(tenant, query, limit),
            _ => self.search_for(tenant, query, limit),
        };
        search_telemetry::searched(surface, started.elapsed(), hits.iter().map(|(t, _)| *t));
        hits.into_iter()
            .map(|(tool, score)| (tool, SearchResult::new(tool, score)))
            .collect()
    }
}
