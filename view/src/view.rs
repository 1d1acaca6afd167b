//! A tenant's view of a manifest: the tools its policy lets it see, over the
//! version's shared [`ManifestIndex`] (search, names, argument checks). A
//! view holds its visibility (a bitset) and a few numbers; hidden tools are
//! absent from everything it answers, so no list, search result,
//! description or error built from a view can mention them.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::{Arc, Mutex},
};

use quiver_proto::{
    Manifest, ManifestTool,
    manifest::{ManifestServer, ValidationMode},
};

use crate::{
    argument_check::ArgumentCheck,
    manifest_index::ManifestIndex,
    search::{Subset, signals},
    token_estimate::estimate_tokens,
    tool_set::ToolSet,
    view_names::ViewNames,
};

/// The tools one tenant may see in one manifest version. Immutable; derived
/// per version from the version's [`ManifestIndex`].
pub struct ToolView {
    pub(crate) index: Arc<ManifestIndex>,
    /// The visible tools (manifest indices) with their search statistics.
    subset: Subset,
    /// Servers with at least one visible tool (manifest indices).
    servers: ToolSet,
    /// The tenant's tools that only an MCP App's view may call: in no list,
    /// search or stub of the view (see [`crate::app_tools`]).
    pub(crate) app_only: Option<ToolSet>,
    /// The tenant's validation level, over each server's own.
    validation: Option<ValidationMode>,
    /// Estimated tokens of listing every visible tool (see
    /// [`ToolView::listing_tokens`]).
    listing_tokens: u64,
    /// What other crates derive from this view, one of each type (see
    /// [`ToolView::derived`]).
    derived: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

/// A tool as seen through a view.
#[derive(Clone, Copy)]
pub struct ViewTool<'a> {
    /// Position in the view.
    pub index: usize,
    /// Index in the manifest.
    pub manifest_index: usize,
    /// The manifest entry.
    pub tool: &'a ManifestTool,
    /// Its server.
    pub server: &'a ManifestServer,
}

impl ToolView {
    /// The view of every tool in `manifest` (no tenant policy yet narrows it),
    /// over an index of its own.
    pub fn all(manifest: Arc<Manifest>) -> ToolView {
        let tools = ToolSet::full(manifest.tools.len());
        ToolView::new(Arc::new(ManifestIndex::build(manifest)), tools)
    }

    /// The view of the given manifest tool indices, over an index of its own.
    pub fn with_tools(manifest: Arc<Manifest>, tools: Vec<usize>) -> ToolView {
        let tools = ToolSet::from_sorted(manifest.tools.len(), tools);
        ToolView::new(Arc::new(ManifestIndex::build(manifest)), tools)
    }

    /// The view of `tools` (a set of `index`'s manifest tool indices) over
    /// the shared `index`: a bitset and a few sums, no index of its own.
    /// Tools only an MCP App's view may call are set apart from the
    /// visible ones (see [`crate::app_tools`]).
    pub fn new(index: Arc<ManifestIndex>, tools: ToolSet) -> ToolView {
        let (tools, app_only) = index.apps().split(tools);
        let manifest = index.manifest().clone();
        let servers = ToolSet::from_sorted(
            manifest.servers.len(),
            tools.iter().map(|t| manifest.tools[t].server_index),
        );
        let listing_bytes = tools.iter().map(|t| index.listed_bytes(t)).sum();
        let subset = index.search().subset(tools);
        ToolView {
            index,
            subset,
            servers,
            app_only,
            validation: None,
            listing_tokens: estimate_tokens(listing_bytes),
            derived: Mutex::new(HashMap::new()),
        }
    }

    /// Estimated tokens a client loads when `tools/list` shows every visible
    /// tool (as passthrough does): computed once, when the view is built, so
    /// the modes that list less can count what they saved at no cost.
    pub fn listing_tokens(&self) -> u64 {
        self.listing_tokens
    }

    /// The same view, checking every call's arguments at `validation`
    /// instead of each server's own level (`None`: the server's).
    pub fn with_validation(mut self, validation: Option<ValidationMode>) -> ToolView {
        self.validation = validation;
        self
    }

    /// How calls to `server`'s tools are checked in this view.
    pub fn validation_of(&self, server: &ManifestServer) -> ValidationMode {
        self.validation.unwrap_or(server.validation)
    }

    /// The manifest this view is of.
    pub fn manifest(&self) -> &Arc<Manifest> {
        self.index.manifest()
    }

    /// The shared index this view reads.
    pub fn index(&self) -> &Arc<ManifestIndex> {
        &self.index
    }

    /// The visible tools, as manifest indices.
    pub fn tools(&self) -> &ToolSet {
        self.subset.tools()
    }

    /// Heap bytes this view holds of its own (its sets; the shared index
    /// and what [`ToolView::derived`] built not counted).
    pub fn own_bytes(&self) -> usize {
        size_of::<ToolView>()
            + self.subset.heap_bytes()
            + self.servers.heap_bytes()
            + self.app_only.as_ref().map_or(0, ToolSet::heap_bytes)
    }

    /// Number of visible tools.
    pub fn len(&self) -> usize {
        self.subset.len()
    }

    /// True when nothing is visible.
    pub fn is_empty(&self) -> bool {
        self.subset.is_empty()
    }

    /// The visible tool at view position `index`.
    ///
    /// # Panics
    /// When `index` is not below [`ToolView::len`].
    pub fn get(&self, index: usize) -> ViewTool<'_> {
        let Some(tool) = self.tools().select(index) else {
            panic!(
                "view position {index} out of range: the view has {} tools",
                self.len()
            )
        };
        self.tool_at(index, tool)
    }

    /// The visible tool with manifest index `tool`, or `None` when hidden.
    pub fn by_manifest_index(&self, tool: usize) -> Option<ViewTool<'_>> {
        self.tools()
            .contains(tool)
            .then(|| self.tool_at(self.tools().rank(tool), tool))
    }

    pub(crate) fn tool_at(&self, position: usize, tool: usize) -> ViewTool<'_> {
        let manifest = self.index.manifest();
        let entry = &manifest.tools[tool];
        ViewTool {
            index: position,
            manifest_index: tool,
            tool: entry,
            server: &manifest.servers[entry.server_index],
        }
    }

    /// Every visible tool, in manifest order.
    pub fn iter(&self) -> impl Iterator<Item = ViewTool<'_>> {
        self.tools()
            .iter()
            .enumerate()
            .map(|(position, tool)| self.tool_at(position, tool))
    }

    /// The visible tool exposed as `name`.
    pub fn by_exposed(&self, name: &str) -> Option<ViewTool<'_>> {
        self.by_manifest_index(self.manifest().tool_index_by_exposed(name)?)
    }

    /// The visible tool `tool` of upstream `server` (upstream ids, not exposed names).
    pub fn by_id(&self, server: &str, tool: &str) -> Option<ViewTool<'_>> {
        self.by_manifest_index(self.names().by_id(server, tool)?)
    }

    /// The view's name tables (shared by every view of the manifest, read
    /// through this view's visibility): what resolves a name without
    /// scanning the view.
    pub fn names(&self) -> ViewNames<'_> {
        ViewNames::new(
            self.index.manifest(),
            self.index.names(),
            self.subset.tools(),
            &self.servers,
        )
    }

    /// A structure derived from this view, built by `build` the first time
    /// it is asked for and shared by every later request for the view's
    /// lifetime, so per-request work does not repeat what depends only on
    /// the view. One value per type. What depends on the manifest alone
    /// belongs in [`ManifestIndex::shared`], built once for every view.
    pub fn derived<T: Any + Send + Sync>(&self, build: impl FnOnce(&ToolView) -> T) -> Arc<T> {
        let key = TypeId::of::<T>();
        let held = self
            .derived
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(value) = held.and_then(|v| v.downcast::<T>().ok()) {
            return value;
        }
        // Built outside the lock; two first requests may both build, and the
        // first stored wins.
        let built = Arc::new(build(self));
        let stored = self
            .derived
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_insert_with(|| built.clone())
            .clone();
        stored.downcast::<T>().unwrap_or(built)
    }

    /// Servers with at least one visible tool, in id order.
    pub fn servers(&self) -> impl Iterator<Item = &ManifestServer> {
        let manifest = self.index.manifest();
        self.servers.iter().map(move |s| &manifest.servers[s])
    }

    /// A visible server by id or JavaScript name.
    pub fn server(&self, name: &str) -> Option<&ManifestServer> {
        let server = self.names().server(name)?;
        Some(&self.index.manifest().servers[server])
    }

    /// Visible tools of one server.
    pub fn tools_of<'a>(
        &'a self,
        server: &'a ManifestServer,
    ) -> impl Iterator<Item = ViewTool<'a>> + 'a {
        let tools: &[usize] = match self.names().server_with_id(&server.id) {
            Some(s) => &self.index.manifest().servers[s].tools,
            None => &[],
        };
        tools.iter().filter_map(|&t| self.by_manifest_index(t))
    }

    /// A visible tool by exposed name, `server.tool` (JS names) or `server/tool`.
    pub fn resolve(&self, name: &str) -> Option<ViewTool<'_>> {
        let name = name.trim().trim_start_matches("tools.");
        if let Some(t) = self.by_exposed(name) {
            return Some(t);
        }
        let (server, tool) = name.split_once('.').or_else(|| name.split_once('/'))?;
        let names = self.names();
        let server = names.server(server)?;
        names
            .tool(server, tool)
            .and_then(|t| self.by_manifest_index(t))
    }

    /// Ranked matches for `query`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(ViewTool<'_>, f32)> {
        let search = self.index.search();
        let vector = search.query_vector(query);
        search
            .search_embedded_in(&self.subset, query, vector.as_deref(), limit, |_| 0.0)
            .into_iter()
            .filter_map(|hit| Some((self.by_manifest_index(hit.doc)?, hit.score)))
            .collect()
    }

    /// Ranked matches for `query` by `tenant`, adjusted by what the tenant's
    /// earlier searches led to (the process's installed signal store, if
    /// any), and recorded there.
    pub fn search_for(&self, tenant: &str, query: &str, limit: usize) -> Vec<(ViewTool<'_>, f32)> {
        self.search_learning(tenant, query, limit, true)
    }

    /// Like [`ToolView::search_for`], without recording the search (a person
    /// browsing in the console is not the model choosing a tool).
    pub fn search_without_learning(
        &self,
        tenant: &str,
        query: &str,
        limit: usize,
    ) -> Vec<(ViewTool<'_>, f32)> {
        self.search_learning(tenant, query, limit, false)
    }

    fn search_learning(
        &self,
        tenant: &str,
        query: &str,
        limit: usize,
        record: bool,
    ) -> Vec<(ViewTool<'_>, f32)> {
        let Some(store) = signals::installed() else {
            return self.search(query, limit);
        };
        let now = signals::now_secs();
        let search = self.index.search();
        // Embedded once: it ranks the tools (through the query adapter) and
        // matches past queries by meaning (the model's own vector).
        let (vector, own) = search.query_vectors(query).unzip();
        let adjustments = store.embedded_adjustments(tenant, query, own.as_deref(), now);
        let manifest = self.index.manifest();
        let hits: Vec<(ViewTool<'_>, f32)> = search
            .search_embedded_in(&self.subset, query, vector.as_deref(), limit, |doc| {
                if adjustments.is_empty() {
                    return 0.0;
                }
                adjustments
                    .get(&signal_key(&manifest.tools[doc]))
                    .copied()
                    .unwrap_or(0.0)
            })
            .into_iter()
            .filter_map(|hit| Some((self.by_manifest_index(hit.doc)?, hit.score)))
            .collect();
        if record {
            let shown: Vec<String> = hits.iter().map(|(t, _)| signal_key(t.tool)).collect();
            store.record_embedded_search(tenant, query, own.as_deref(), &shown, now);
        }
        hits
    }

    /// Records the outcome of a call of `tool` by `tenant` in the installed
    /// signal store, if any.
    pub fn record_call(&self, tenant: &str, tool: ViewTool<'_>, success: bool) {
        if let Some(store) = signals::installed() {
            store.record_call(tenant, &signal_key(tool.tool), success, signals::now_secs());
        }
    }

    /// Records that `tenant` asked for the full description of `tool` in the
    /// installed signal store, if any.
    pub fn record_describe(&self, tenant: &str, tool: ViewTool<'_>) {
        if let Some(store) = signals::installed() {
            store.record_describe(tenant, &signal_key(tool.tool), signals::now_secs());
        }
    }

    /// The compiled argument check of the tool at view position `index` (compiled on first use).
    pub fn check(&self, index: usize) -> &ArgumentCheck {
        self.index.check(self.get(index).manifest_index)
    }

    /// Names every visible tool could be called by (for "did you mean").
    pub fn exposed_names(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|t| t.tool.exposed_name.as_str())
    }
}

/// How signals name a tool: `server/tool`, stable across manifest versions.
fn signal_key(tool: &ManifestTool) -> String {
    format!("{}/{}", tool.id.server, tool.id.tool)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::test_manifest::manifest;

    #[test]
    fn names_resolve_by_server_and_tool_and_hidden_tools_are_absent() {
        let manifest = manifest(&[
            ("github", &["create_issue", "get-issue"]),
            ("maps", &["route"]),
            ("secret", &["read"]),
        ]);
        // A view without `secret`.
        let visible: Vec<usize> = (0..manifest.tools.len())
            .filter(|&i| manifest.tools[i].id.server != "secret")
            .collect();
        let view = ToolView::with_tools(manifest.clone(), visible);
        let name = |t: Option<ViewTool<'_>>| t.map(|t| t.tool.exposed_name.clone());
        assert_eq!(
            name(view.resolve("github.create_issue")).as_deref(),
            Some("github__create_issue")
        );
        assert_eq!(
            name(view.resolve("tools.github.get_issue")).as_deref(),
            Some("github__get-issue")
        );
        assert_eq!(
            name(view.resolve("github/get-issue")).as_deref(),
            Some("github__get-issue")
        );
        assert_eq!(
            name(view.resolve("maps__route")).as_deref(),
            Some("maps__route")
        );
        assert!(view.resolve("secret.read").is_none());
        assert!(view.resolve("github.read").is_none());
        assert!(view.by_id("secret", "read").is_none());
        assert_eq!(
            name(view.by_id("maps", "route")).as_deref(),
            Some("maps__route")
        );
        let github = view.server("github").unwrap();
        assert_eq!(view.tools_of(github).count(), 2);

        let names = view.names();
        assert_eq!(
            names.script_names(None),
            Some(vec!["github".to_string(), "maps".to_string()])
        );
        assert_eq!(
            names.script_names(Some("github")),
            Some(vec!["create_issue".to_string(), "get_issue".to_string()])
        );
        assert_eq!(names.script_names(Some("secret")), None);
        assert!(names.script_has("github", Some("get_issue")));
        assert!(
            !names.script_has("github", Some("get-issue")),
            "scripts use JavaScript names"
        );
        assert!(!names.script_has("secret", None));
    }

    #[test]
    fn a_derived_structure_is_built_once_per_view() {
        let view = ToolView::all(manifest(&[("maps", &["route"])]));
        let builds = AtomicUsize::new(0);
        let count = |view: &ToolView| {
            builds.fetch_add(1, Ordering::SeqCst);
            view.len()
        };
        assert_eq!(*view.derived(count), 1);
        assert_eq!(*view.derived(count), 1);
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        // Another type is another structure.
        assert_eq!(*view.derived(|v| v.len().to_string()), "1");
    }
}
