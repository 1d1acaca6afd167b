//! Every tenant's view of one manifest version. The version's
//! [`ManifestIndex`] (search index, vectors, names) is built once, from the
//! previous version's where there is one, and shared; a tenant's view is
//! derived from it the first time the tenant is served (its visibility, a
//! bitset, and a few sums: microseconds, kilobytes) and shared by every
//! tenant whose policy shows the same tools. A tool hidden from a tenant
//! never enters its statistics (it cannot even shift the scores of the
//! tools it does see).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

use quiver_proto::{
    Manifest,
    manifest::ValidationMode,
    tenant::{Tenant, TenantDirectory},
};

use crate::{ToolView, manifest_index::ManifestIndex, tool_set::ToolSet};

/// How many distinct views one [`TenantViews`] keeps before it forgets the
/// least recently used (a forgotten view is derived again on its next use).
/// A view of 10,000 tools holds about 2 KiB, so the default lets as many
/// tenants as this keep distinct views for a few tens of MiB.
pub const DEFAULT_MAX_VIEWS: usize = 16_384;

/// Every tenant's view of one manifest, derived lazily.
pub struct TenantViews {
    index: Arc<ManifestIndex>,
    tenants: Arc<TenantDirectory>,
    all: Arc<ToolView>,
    cache: Mutex<ViewCache>,
    /// Views forgotten at the cap, over every version (carried along).
    evictions: Arc<AtomicU64>,
}

/// What a [`TenantViews`] holds, for metrics and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ViewStats {
    /// Distinct views held (the view of every tool not counted).
    pub views: usize,
    /// Tenants that have a view.
    pub tenants: usize,
    /// Heap bytes those views hold of their own.
    pub bytes: usize,
    /// Views forgotten at the cap so far (this version and earlier ones).
    pub evictions: u64,
    /// The most views kept.
    pub max_views: usize,
}

/// What identifies a view: the tools it shows and how it checks arguments.
type ViewKey = (ToolSet, Option<ValidationMode>);

/// Views by tenant id and by visible set, with a use clock for eviction.
struct ViewCache {
    by_tenant: HashMap<String, Arc<Cached>>,
    by_tools: HashMap<ViewKey, Arc<Cached>>,
    clock: u64,
    max_views: usize,
    evictions: Arc<AtomicU64>,
}

/// One view (derived once, by the first request that needs it, outside the
/// cache's lock) and when it was last used.
struct Cached {
    view: OnceLock<Arc<ToolView>>,
    used: AtomicU64,
}

impl Cached {
    fn new(now: u64) -> Arc<Cached> {
        Arc::new(Cached {
            view: OnceLock::new(),
            used: AtomicU64::new(now),
        })
    }
}

impl TenantViews {
    /// The views of `manifest` for `tenants`, over an index built from
    /// scratch; the view of every tool is made now (it serves anonymous
    /// callers), the others on first use.
    pub fn new(manifest: Arc<Manifest>, tenants: Arc<TenantDirectory>) -> TenantViews {
        TenantViews::over(
            Arc::new(ManifestIndex::build(manifest)),
            tenants,
            None,
            Arc::default(),
        )
    }

    /// The views of a new manifest version for `tenants`: the index is this
    /// version's index [`ManifestIndex::update`]d (only changed tools are
    /// analysed again); views are derived again on first use, and the view
    /// cap carries over. Nothing of this version is kept by the new one.
    pub fn next(&self, manifest: Arc<Manifest>, tenants: Arc<TenantDirectory>) -> TenantViews {
        let index = Arc::new(self.index.update(manifest));
        TenantViews::over(
            index,
            tenants,
            Some(self.max_views()),
            self.evictions.clone(),
        )
    }

    fn over(
        index: Arc<ManifestIndex>,
        tenants: Arc<TenantDirectory>,
        max_views: Option<usize>,
        evictions: Arc<AtomicU64>,
    ) -> TenantViews {
        let all = Arc::new(ToolView::new(
            index.clone(),
            ToolSet::full(index.manifest().tools.len()),
        ));
        TenantViews {
            index,
            tenants,
            all,
            cache: Mutex::new(ViewCache {
                by_tenant: HashMap::new(),
                by_tools: HashMap::new(),
                clock: 0,
                max_views: max_views.unwrap_or(DEFAULT_MAX_VIEWS),
                evictions: evictions.clone(),
            }),
            evictions,
        }
    }

    /// The same manifest with other tenants: the views already made are
    /// kept, and so is the view of every tenant whose visibility did not
    /// change (a key issued or revoked costs no tenant a new scan of the
    /// manifest).
    pub fn with_tenants(&self, tenants: Arc<TenantDirectory>) -> TenantViews {
        let previous = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut by_tenant = HashMap::new();
        for (id, cached) in &previous.by_tenant {
            let same = match (self.tenants.get(id), tenants.get(id)) {
                (Some(old), Some(new)) => same_visibility(old, new),
                _ => false,
            };
            if same {
                by_tenant.insert(id.clone(), cached.clone());
            }
        }
        TenantViews {
            index: self.index.clone(),
            tenants,
            all: self.all.clone(),
            cache: Mutex::new(ViewCache {
                by_tenant,
                by_tools: previous.by_tools.clone(),
                clock: previous.clock,
                max_views: previous.max_views,
                evictions: self.evictions.clone(),
            }),
            evictions: self.evictions.clone(),
        }
    }

    /// Keeps at most `max` distinct views (at least 1).
    pub fn with_max_views(self, max: usize) -> TenantViews {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .max_views = max.max(1);
        self
    }

    fn max_views(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .max_views
    }

    /// The manifest.
    pub fn manifest(&self) -> &Arc<Manifest> {
        self.index.manifest()
    }

    /// The index every view of this version shares.
    pub fn index(&self) -> &Arc<ManifestIndex> {
        &self.index
    }

    /// The tenants.
    pub fn tenants(&self) -> &Arc<TenantDirectory> {
        &self.tenants
    }

    /// The view of every tool.
    pub fn all(&self) -> &Arc<ToolView> {
        &self.all
    }

    /// The view of tenant `id`, or `None` for a tenant the directory does not hold.
    pub fn for_tenant(&self, id: &str) -> Option<Arc<ToolView>> {
        let tenant = self.tenants.get(id)?;
        let cached = {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.clock += 1;
            let now = cache.clock;
            cache.by_tenant.get(id).map(|cached| {
                cached.used.store(now, Ordering::Relaxed);
                cached.clone()
            })
        };
        let cached = match cached {
            Some(cached) => cached,
            None => {
                // The scan runs outside the lock; so does the derivation below.
                let key = (visible_tools(self.manifest(), tenant), tenant.validation);
                let every_tool = key.0.is_full() && key.1.is_none();
                let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                cache.clock += 1;
                let now = cache.clock;
                let cached = if every_tool {
                    // The shared view of all, never counted or evicted.
                    let cached = Cached::new(now);
                    let _ = cached.view.set(self.all.clone());
                    cached
                } else if let Some(cached) = cache.by_tools.get(&key) {
                    cached.used.store(now, Ordering::Relaxed);
                    cached.clone()
                } else {
                    let cached = Cached::new(now);
                    cache.insert(key.clone(), cached.clone());
                    cached
                };
                cache.by_tenant.insert(id.to_string(), cached.clone());
                drop(cache);
                // Tenants with the same visible set wait for the one
                // derivation; everyone else goes on.
                cached.view.get_or_init(|| {
                    let (tools, validation) = key;
                    Arc::new(ToolView::new(self.index.clone(), tools).with_validation(validation))
                });
                cached
            }
        };
        // A tenant seen before whose view another request is still deriving
        // waits for that.
        Some(cached.view.wait().clone())
    }

    /// What this holds: views, tenants, bytes, evictions.
    pub fn stats(&self) -> ViewStats {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = cache
            .by_tools
            .values()
            .filter_map(|c| c.view.get())
            .map(|v| v.own_bytes())
            .sum();
        ViewStats {
            views: cache.by_tools.len(),
            tenants: cache.by_tenant.len(),
            bytes,
            evictions: self.evictions.load(Ordering::Relaxed),
            max_views: cache.max_views,
        }
    }

    /// Number of distinct views made and kept (the view of every tool not counted).
    pub fn views_built(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_tools
            .len()
    }
}

impl ViewCache {
    fn insert(&mut self, key: ViewKey, cached: Arc<Cached>) {
        while self.by_tools.len() >= self.max_views {
            let Some(oldest) = self
                .by_tools
                .iter()
                .min_by_key(|(_, c)| c.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(evicted) = self.by_tools.remove(&oldest) {
                self.by_tenant.retain(|_, c| !Arc::ptr_eq(c, &evicted));
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.by_tools.insert(key, cached);
    }
}

/// Whether two versions of a tenant see the same tools the same way.
fn same_visibility(a: &Tenant, b: &Tenant) -> bool {
    a.servers == b.servers
        && a.tools == b.tools
        && a.tags == b.tags
        && a.validation == b.validation
        && a.hold_findings == b.hold_findings
}

/// The manifest tools `tenant`'s policy shows. Servers are decided first,
/// so a tenant that sees a few servers costs a few servers' tools, and
/// tool globs and findings are read only where the policy has them.
pub fn visible_tools(manifest: &Manifest, tenant: &Tenant) -> ToolSet {
    let mut words = vec![0u64; manifest.tools.len().div_ceil(64)];
    let per_tool = !tenant.tools.is_empty() || tenant.hold_findings.is_some();
    for server in manifest.servers.iter().filter(|s| tenant.sees_server(s)) {
        for &t in &server.tools {
            let shown = !per_tool || {
                let tool = &manifest.tools[t];
                tenant.sees_tool_id(&tool.id.server, &tool.id.tool)
                    && tenant.tolerates(&tool.findings)
            };
            if shown {
                words[t / 64] |= 1 << (t % 64);
            }
        }
    }
    ToolSet::from_words(manifest.tools.len(), words)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn manifest() -> Arc<Manifest> {
        crate::test_manifest::manifest(&[("a", &["t"]), ("b", &["t"])])
    }

    fn directory(tenants: &[(&str, &str)]) -> Arc<TenantDirectory> {
        Arc::new(TenantDirectory::new(tenants.iter().map(|(id, server)| {
            serde_json::from_value(json!({"id": id, "display_name": id, "created_ms": 0,
                "updated_ms": 0, "servers": [server]}))
            .unwrap()
        })))
    }

    fn names(view: &ToolView) -> Vec<String> {
        view.iter().map(|t| t.tool.exposed_name.clone()).collect()
    }

    #[test]
    fn new_tenants_keep_unchanged_views_and_a_changed_tenant_gets_its_new_one() {
        let views = TenantViews::new(manifest(), directory(&[("x", "a"), ("y", "a")]));
        let x = views.for_tenant("x").unwrap();
        assert_eq!(names(&x), vec!["a__t"]);
        assert!(
            Arc::ptr_eq(&x, &views.for_tenant("y").unwrap()),
            "one view per set"
        );
        // y now sees b; x is unchanged and keeps its very view.
        let next = views.with_tenants(directory(&[("x", "a"), ("y", "b")]));
        assert!(Arc::ptr_eq(&x, &next.for_tenant("x").unwrap()));
        assert_eq!(names(&next.for_tenant("y").unwrap()), vec!["b__t"]);
        // A tenant that is gone has no view.
        let gone = next.with_tenants(directory(&[("y", "b")]));
        assert!(gone.for_tenant("x").is_none());
    }
}
