//! Every tenant's view of one manifest version. A tenant's view is built the
//! first time the tenant is served and shared by every tenant whose policy
//! shows the same tools, so two tenants with the same visible set share one
//! search index, and a tool hidden from a tenant never enters its index (it
//! cannot even shift the scores of the tools it does see).

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

use crate::ToolView;

/// How many distinct views one [`TenantViews`] keeps before it forgets the
/// least recently used (a forgotten view is rebuilt on its next use).
pub const DEFAULT_MAX_VIEWS: usize = 1024;

/// Every tenant's view of one manifest, built lazily.
pub struct TenantViews {
    manifest: Arc<Manifest>,
    tenants: Arc<TenantDirectory>,
    all: Arc<ToolView>,
    cache: Mutex<ViewCache>,
}

/// Views by tenant id and by visible set, with a use clock for eviction.
struct ViewCache {
    by_tenant: HashMap<String, Arc<Cached>>,
    by_tools: HashMap<(Vec<usize>, Option<ValidationMode>), Arc<Cached>>,
    clock: u64,
    max_views: usize,
}

/// One view (built once, by the first request that needs it, outside the
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
    /// The views of `manifest` for `tenants`; the view of every tool is built
    /// now (it serves anonymous callers), the others on first use.
    pub fn new(manifest: Arc<Manifest>, tenants: Arc<TenantDirectory>) -> TenantViews {
        let all = Arc::new(ToolView::all(manifest.clone()));
        TenantViews::from_parts(all, tenants, None)
    }

    /// The same manifest with other tenants: the views already built are
    /// kept, and so is the view of every tenant whose visibility did not
    /// change (a key issued or revoked rebuilds no index and costs no
    /// tenant a new scan of the manifest).
    pub fn with_tenants(&self, tenants: Arc<TenantDirectory>) -> TenantViews {
        let previous = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let next = TenantViews::from_parts(self.all.clone(), tenants, Some(&previous));
        {
            let mut cache = next.cache.lock().unwrap_or_else(|p| p.into_inner());
            for (id, cached) in &previous.by_tenant {
                let same = match (self.tenants.get(id), next.tenants.get(id)) {
                    (Some(old), Some(new)) => same_visibility(old, new),
                    _ => false,
                };
                if same {
                    cache.by_tenant.insert(id.clone(), cached.clone());
                }
            }
        }
        next
    }

    fn from_parts(
        all: Arc<ToolView>,
        tenants: Arc<TenantDirectory>,
        previous: Option<&ViewCache>,
    ) -> TenantViews {
        let mut cache = ViewCache {
            by_tenant: HashMap::new(),
            by_tools: HashMap::new(),
            clock: 0,
            max_views: previous.map_or(DEFAULT_MAX_VIEWS, |p| p.max_views),
        };
        if let Some(previous) = previous {
            cache.by_tools = previous.by_tools.clone();
            cache.clock = previous.clock;
        }
        TenantViews {
            manifest: all.manifest().clone(),
            tenants,
            all,
            cache: Mutex::new(cache),
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

    /// The manifest.
    pub fn manifest(&self) -> &Arc<Manifest> {
        &self.manifest
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
                // The scan runs outside the lock; so does the build below.
                let key = (visible_tools(&self.manifest, tenant), tenant.validation);
                let every_tool = key.0.len() == self.manifest.tools.len() && key.1.is_none();
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
                // Tenants with the same visible set wait for the one build;
                // everyone else goes on.
                cached.view.get_or_init(|| {
                    Arc::new(
                        ToolView::with_tools(self.manifest.clone(), key.0.clone())
                            .with_validation(key.1),
                    )
                });
                cached
            }
        };
        // A tenant seen before whose view another request is still building
        // waits for that build.
        Some(cached.view.wait().clone())
    }

    /// Number of distinct views built and kept (the view of every tool not counted).
    pub fn views_built(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_tools
            .len()
    }
}

impl ViewCache {
    fn insert(&mut self, key: (Vec<usize>, Option<ValidationMode>), cached: Arc<Cached>) {
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

/// The manifest tool indices `tenant`'s policy shows, in manifest order.
pub fn visible_tools(manifest: &Manifest, tenant: &Tenant) -> Vec<usize> {
    let servers: Vec<bool> = manifest
        .servers
        .iter()
        .map(|s| tenant.sees_server(s))
        .collect();
    manifest
        .tools
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            servers[t.server_index]
                && tenant.sees_tool_id(&t.id.server, &t.id.tool)
                && tenant.tolerates(&t.findings)
        })
        .map(|(i, _)| i)
        .collect()
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
