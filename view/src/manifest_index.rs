//! Everything derived from one manifest version that does not depend on who
//! looks: the search index and its tool vectors, the name tables, compiled
//! argument checks, each tool's listing size. Built once per version (the
//! next version from this one, re-analysing only the tools that changed) and
//! shared by every view of the version, so memory grows with tools plus
//! tenants, not tools times tenants. It holds no policy: which of these
//! tools a tenant sees is the view's business ([`crate::ToolView`]).

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use quiver_proto::{Manifest, ManifestTool};

use crate::{
    app_tools::AppTools,
    argument_check::ArgumentCheck,
    search::{HybridIndex, SearchDoc, SearchParam, semantic},
    view_names::ManifestNames,
};

/// What every view of one manifest version shares.
pub struct ManifestIndex {
    manifest: Arc<Manifest>,
    search: HybridIndex,
    names: ManifestNames,
    /// Compiled on first use, per tool.
    checks: Vec<OnceLock<ArgumentCheck>>,
    /// Bytes of each tool's definition in a `tools/list` answer.
    listed_bytes: Vec<u32>,
    /// The tools of MCP Apps: which only a view may call, and what a view's
    /// call by name reaches.
    apps: AppTools,
    /// What other crates derive from the whole manifest, one of each type
    /// (see [`ManifestIndex::shared`]).
    shared: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl ManifestIndex {
    /// The index of `manifest`, built from scratch (tool vectors from the
    /// installed model's cache, or embedded in the background).
    pub fn build(manifest: Arc<Manifest>) -> ManifestIndex {
        let docs = search_docs(&manifest);
        let search = HybridIndex::build_deferred(&docs, semantic::installed());
        ManifestIndex::with_search(manifest, search)
    }

    /// The index of `manifest`, the version after this one: tools whose
    /// searchable text did not change keep their analysis, and their vectors
    /// come from the model's cache. Ranks exactly as [`ManifestIndex::build`].
    pub fn update(&self, manifest: Arc<Manifest>) -> ManifestIndex {
        let docs = search_docs(&manifest);
        let search = self.search.update(&docs, semantic::installed());
        ManifestIndex::with_search(manifest, search)
    }

    fn with_search(manifest: Arc<Manifest>, search: HybridIndex) -> ManifestIndex {
        let names = ManifestNames::build(&manifest);
        let checks = manifest.tools.iter().map(|_| OnceLock::new()).collect();
        let listed_bytes = manifest
            .tools
            .iter()
            .map(|t| u32::try_from(listed_bytes(t)).unwrap_or(u32::MAX))
            .collect();
        ManifestIndex {
            apps: AppTools::build(&manifest),
            manifest,
            search,
            names,
            checks,
            listed_bytes,
            shared: Mutex::new(HashMap::new()),
        }
    }

    /// The manifest.
    pub fn manifest(&self) -> &Arc<Manifest> {
        &self.manifest
    }

    /// The search index over every tool of the manifest (documents are
    /// manifest tool indices).
    pub fn search(&self) -> &HybridIndex {
        &self.search
    }

    pub(crate) fn names(&self) -> &ManifestNames {
        &self.names
    }

    pub(crate) fn apps(&self) -> &AppTools {
        &self.apps
    }

    /// The compiled argument check of manifest tool `tool` (compiled on first use).
    pub fn check(&self, tool: usize) -> &ArgumentCheck {
        self.checks[tool]
            .get_or_init(|| ArgumentCheck::compile(&self.manifest.tools[tool].def.input_schema))
    }

    /// Bytes of manifest tool `tool`'s definition in a `tools/list` answer.
    pub fn listed_bytes(&self, tool: usize) -> usize {
        self.listed_bytes.get(tool).map_or(0, |&b| b as usize)
    }

    /// A structure derived from the whole manifest (every tool's MCP
    /// definition, say), built by `build` the first time it is asked for
    /// and shared by every view of this version. One value per type.
    pub fn shared<T: Any + Send + Sync>(&self, build: impl FnOnce(&ManifestIndex) -> T) -> Arc<T> {
        let key = TypeId::of::<T>();
        let held = self
            .shared
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
            .shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_insert_with(|| built.clone())
            .clone();
        stored.downcast::<T>().unwrap_or(built)
    }
}

/// Bytes of `tool`'s definition in a `tools/list` answer, under its exposed name.
fn listed_bytes(tool: &ManifestTool) -> usize {
    let definition = serde_json::to_string(&*tool.def).map_or(0, |d| d.len());
    (definition + tool.exposed_name.len()).saturating_sub(tool.def.name.len())
}

/// One search document per manifest tool, in manifest order.
fn search_docs(manifest: &Manifest) -> Vec<SearchDoc> {
    manifest
        .tools
        .iter()
        .map(|tool| {
            let server = &manifest.servers[tool.server_index];
            SearchDoc {
                name: tool.def.name.clone(),
                server: server.id.clone(),
                server_description: server.description.clone(),
                description: tool.def.description.clone(),
                params: SearchParam::from_schema(&tool.def.input_schema),
            }
        })
        .collect()
}
