//! What tool search measures: how long each search took and whether it
//! found nothing, by the surface that asked, and how many distinct tools some
//! search returned that nobody called afterwards in this process. It only
//! records; ranking is [`crate::search`]'s.

use std::{
    collections::HashSet,
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Mutex, OnceLock},
    time::Duration,
};

use opentelemetry::KeyValue;
use quiver_telemetry::{instruments, instruments::names, metrics::meter};

use crate::ViewTool;

/// Most tools remembered as returned and not yet called; past it, newly
/// returned tools are not added (the gauge stays at the bound).
pub const MAX_UNCALLED: usize = 10_000;

/// Which surface asked for a search, as the `quiver.mode` attribute names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchSurface {
    /// Search mode's `search_tools`.
    Search,
    /// Code mode's `search` tool, or a script's `search()`.
    Code,
    /// The Gateway gRPC API's `SearchTools`.
    Api,
    /// The web console's tool search (a person browsing: measured, never
    /// learned from).
    Console,
}

impl SearchSurface {
    /// The `quiver.mode` value.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchSurface::Search => "search",
            SearchSurface::Code => "code",
            SearchSurface::Api => "api",
            SearchSurface::Console => "console",
        }
    }
}

/// Tools returned by a search and not called since, by [`tool_key`].
fn uncalled() -> &'static Mutex<HashSet<u64>> {
    static UNCALLED: OnceLock<Mutex<HashSet<u64>>> = OnceLock::new();
    UNCALLED.get_or_init(|| {
        meter()
            .u64_observable_gauge(names::SEARCHED_NEVER_CALLED)
            .with_description("Distinct tools some search returned that were not called since")
            .with_callback(|observer| {
                let n = uncalled().lock().unwrap_or_else(|p| p.into_inner()).len();
                observer.observe(u64::try_from(n).unwrap_or(u64::MAX), &[]);
            })
            .build();
        Mutex::new(HashSet::new())
    })
}

/// A tool's identity across views and manifest versions (its upstream and
/// tool ids), hashed so that remembering and forgetting it allocate nothing.
fn tool_key(tool: ViewTool<'_>) -> u64 {
    let mut hasher = DefaultHasher::new();
    tool.tool.id.server.hash(&mut hasher);
    tool.tool.id.tool.hash(&mut hasher);
    hasher.finish()
}

/// Records one search from `surface` that took `took` and returned `hits`.
pub(crate) fn searched<'a>(
    surface: SearchSurface,
    took: Duration,
    hits: impl ExactSizeIterator<Item = ViewTool<'a>>,
) {
    let mode = [KeyValue::new("quiver.mode", surface.as_str())];
    let instruments = instruments();
    instruments
        .search_duration
        .record(took.as_secs_f64(), &mode);
    if hits.len() == 0 {
        instruments.search_zero_hits.add(1, &mode);
        return;
    }
    let mut uncalled = uncalled().lock().unwrap_or_else(|p| p.into_inner());
    for tool in hits {
        if uncalled.len() >= MAX_UNCALLED {
            break;
        }
        uncalled.insert(tool_key(tool));
    }
}

/// Records that `tool` was called: it is no longer "returned, never called".
pub(crate) fn called(tool: ViewTool<'_>) {
    uncalled()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&tool_key(tool));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use quiver_proto::{Manifest, ServerEntry, ToolDef};

    use serde_json::{Value, json};

    use super::*;
    use crate::ToolView;

    /// A view of two tools on an upstream no other test uses.
    fn view() -> ToolView {
        let tool = |name: &str, description: &str| ToolDef {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            meta: None,
        };
        let server = ServerEntry {
            id: "search-telemetry".into(),
            description: String::new(),
            namespace: "search-telemetry".into(),
            tags: Vec::new(),
            group: String::new(),
            validation: Default::default(),
            features: Vec::new(),
            tools: vec![
                tool("create_invoice", "Create an invoice for a customer"),
                tool("send_invoice", "Send an invoice to a customer by email"),
            ],
            findings: Default::default(),
        };
        ToolView::all(Arc::new(Manifest::build(1, vec![server])))
    }

    fn sample(name: &str, labels: &str) -> f64 {
        quiver_telemetry::metrics::sample(name, labels).unwrap_or(0.0)
    }

    // No other unit test here searches through a view or calls this
    // upstream's tools, so the counts it reads move only because of it.
    #[test]
    fn searches_are_timed_empty_ones_counted_and_returned_tools_forgotten_once_called() {
        let view = view();
        let zero = "quiver_mode=\"code\"";
        let (empty_before, timed_before, uncalled_before) = (
            sample("quiver_search_zero_hits_total", zero),
            sample("quiver_search_duration_seconds_count", zero),
            sample("quiver_search_never_called_tools", ""),
        );
        let hits = view.search_results(SearchSurface::Code, "t", "invoice", 5);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            sample("quiver_search_never_called_tools", "") - uncalled_before,
            2.0
        );
        assert!(
            view.search_results(SearchSurface::Code, "t", "zebra", 5)
                .is_empty()
        );
        assert_eq!(
            sample("quiver_search_zero_hits_total", zero) - empty_before,
            1.0
        );
        assert_eq!(
            sample("quiver_search_duration_seconds_count", zero) - timed_before,
            2.0
        );
        // Calling one takes it out; returned again, it is back, once.
        let create = view
            .iter()
            .find(|t| t.tool.id.tool == "create_invoice")
            .unwrap();
        view.prepare_call("t", create, &Value::Null).unwrap();
        assert_eq!(
            sample("quiver_search_never_called_tools", "") - uncalled_before,
            1.0
        );
        view.search_results(SearchSurface::Code, "t", "invoice", 5);
        assert_eq!(
            sample("quiver_search_never_called_tools", "") - uncalled_before,
            2.0
        );
    }
}
