//! Every tenant's view of one manifest version. A tenant's view is built the
//! first time the tenant is served and shared by every tenant whose policy
//! shows the same tools, so two tenants with the same visible set share one
//! search index, and a tool hidden from a tenant never enters its index (it
//! cannot even shift the scores of the tools it does see).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
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

/// One built view and when it was last used.
struct Cached {
    view: Arc<ToolView>,
    used: AtomicU64,
}

impl TenantViews {
    /// The views of `manifest` for `tenants`; the view of every tool is built
    /// now (it serves anonymous callers), the others on first use.
    pub fn new(manifest: Arc<Manifest>, tenants: Arc<TenantDirectory>) -> TenantViews {
        let all = Arc::new(ToolView::all(manifest.clone()));
        TenantViews::from_parts(all, tenants, None)
    }

    /// The same manifest with other tenants: the views already built are
    /// kept for the visible sets that still exist (a key revoked or a tenant
    /// added rebuilds no index).
    pub fn with_tenants(&self, tenants: Arc<TenantDirectory>) -> TenantViews {
        let previous = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        TenantViews::from_parts(self.all.clone(), tenants, Some(&previous))
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
        {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.clock += 1;
            let now = cache.clock;
            if let Some(cached) = cache.by_tenant.get(id) {
                cached.used.store(now, Ordering::Relaxed);
                return Some(cached.view.clone());
            }
        }
        let tools = visible_tools(&self.manifest, tenant);
        let key = (tools, tenant.validation);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.clock += 1;
        let now = cache.clock;
        let cached = match cache.by_tools.get(&key) {
            Some(cached) => cached.clone(),
            None => {
                // Built under the lock: two tenants with one visible set
                // never build it twice, and building is bounded by the
                // manifest's size.
                let (tools, validation) = &key;
                if tools.len() == self.manifest.tools.len() && validation.is_none() {
                    // Every tool: the shared view of all, never evicted.
                    let cached = Arc::new(Cached {
                        view: self.all.clone(),
                        used: AtomicU64::new(now),
                    });
                    cache.by_tenant.insert(id.to_string(), cached);
                    return Some(self.all.clone());
                }
                let view = Arc::new(
                    ToolView::with_tools(self.manifest.clone(), tools.clone())
                        .with_validation(*validation),
                );
                let cached = Arc::new(Cached {
                    view,
                    used: AtomicU64::new(now),
                });
                cache.insert(key, cached.clone());
                cached
            }
        };
        cached.used.store(now, Ordering::Relaxed);
        cache.by_tenant.insert(id.to_string(), cached.clone());
        Some(cached.view.clone())
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
            servers[t.server_index] && tenant.sees(&manifest.servers[t.server_index], t)
        })
        .map(|(i, _)| i)
        .collect()
}
