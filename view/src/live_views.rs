//! [`TenantViews`] kept current: a background task follows the manifest and
//! the tenants and swaps in new views atomically. A new manifest updates the
//! shared index from the previous version's (off the async threads, before
//! the swap, so no request waits for it); new tenants alone keep the views
//! already derived. The edge and the executor both answer from one of these.

use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use opentelemetry::metrics::{ObservableCounter, ObservableGauge};
use quiver_proto::{Manifest, tenant::TenantDirectory};
use quiver_telemetry::{instruments::names, metrics::meter};
use tokio::sync::watch;

use crate::{TenantViews, tenant_views::DEFAULT_MAX_VIEWS};

/// The current [`TenantViews`], swapped atomically.
pub struct LiveViews {
    current: ArcSwap<TenantViews>,
    installed: watch::Sender<u64>,
    /// What `/metrics` reads of the current views (kept to stay registered).
    _gauges: Vec<ObservableGauge<u64>>,
    _evictions: ObservableCounter<u64>,
}

impl LiveViews {
    /// Views that follow `manifests` and `tenants` until the manifest sender
    /// is dropped (or the returned value is), keeping at most
    /// [`DEFAULT_MAX_VIEWS`] distinct views. Needs a Tokio runtime.
    pub fn follow(
        manifests: watch::Receiver<Arc<Manifest>>,
        tenants: watch::Receiver<Arc<TenantDirectory>>,
    ) -> Arc<LiveViews> {
        LiveViews::follow_capped(manifests, tenants, DEFAULT_MAX_VIEWS)
    }

    /// Like [`LiveViews::follow`], keeping at most `max_views` distinct
    /// views (the least recently used is forgotten, and derived again on
    /// its next use).
    pub fn follow_capped(
        mut manifests: watch::Receiver<Arc<Manifest>>,
        mut tenants: watch::Receiver<Arc<TenantDirectory>>,
        max_views: usize,
    ) -> Arc<LiveViews> {
        let first = TenantViews::new(
            manifests.borrow_and_update().clone(),
            tenants.borrow_and_update().clone(),
        )
        .with_max_views(max_views);
        let live = Arc::new_cyclic(|weak: &Weak<LiveViews>| LiveViews {
            current: ArcSwap::from_pointee(first),
            installed: watch::channel(0).0,
            _gauges: gauges(weak),
            _evictions: {
                let live = weak.clone();
                meter()
                    .u64_observable_counter(names::VIEW_EVICTIONS)
                    .with_description("Views forgotten at the view cap")
                    .with_callback(move |observer| {
                        if let Some(live) = live.upgrade() {
                            observer.observe(live.current().stats().evictions, &[]);
                        }
                    })
                    .build()
            },
        });
        let weak: Weak<LiveViews> = Arc::downgrade(&live);
        tokio::spawn(async move {
            let mut tenants_open = true;
            loop {
                tokio::select! {
                    changed = manifests.changed() => if changed.is_err() { return },
                    changed = tenants.changed(), if tenants_open => {
                        // A source without tenants keeps the ones it has.
                        tenants_open = changed.is_ok();
                    }
                }
                let Some(live) = weak.upgrade() else { return };
                let manifest = manifests.borrow_and_update().clone();
                let directory = tenants.borrow_and_update().clone();
                let current = live.current();
                let next = if Arc::ptr_eq(&manifest, current.manifest()) {
                    Ok(current.with_tenants(directory))
                } else {
                    tokio::task::spawn_blocking(move || current.next(manifest, directory)).await
                };
                match next {
                    Ok(next) => {
                        tracing::debug!(
                            version = next.manifest().version,
                            tools = next.manifest().tools.len(),
                            tenants = next.tenants().len(),
                            "tool views installed"
                        );
                        live.current.store(Arc::new(next));
                        live.installed.send_modify(|n| *n += 1);
                    }
                    Err(e) => tracing::error!("building the tool views failed: {e}"),
                }
            }
        });
        live
    }

    /// The view of `tenant`. A tenant the directory does not hold (such as
    /// the built-in `default`) sees every tool when `anonymous` (behind edges
    /// that authenticate nobody), and nothing otherwise (`None`).
    pub fn view_of(&self, tenant: &str, anonymous: bool) -> Option<Arc<crate::ToolView>> {
        let views = self.current();
        (views.for_tenant(tenant)).or_else(|| anonymous.then(|| views.all().clone()))
    }

    /// The current views.
    pub fn current(&self) -> Arc<TenantViews> {
        self.current.load_full()
    }

    /// Ticks every time new views are installed.
    pub fn installed(&self) -> watch::Receiver<u64> {
        self.installed.subscribe()
    }
}

/// The gauges of what grows with tenants and tools, read from `live`'s
/// current views at each scrape.
fn gauges(live: &Weak<LiveViews>) -> Vec<ObservableGauge<u64>> {
    type Read = fn(&TenantViews) -> u64;
    let read: [(&'static str, &'static str, Read); 6] = [
        (
            names::VIEWS,
            "Distinct tenant views held (the view of every tool not counted)",
            |v| v.stats().views as u64,
        ),
        (
            names::VIEW_BYTES,
            "Heap bytes the tenant views hold of their own",
            |v| v.stats().bytes as u64,
        ),
        (names::VIEW_TENANTS, "Tenants with a derived view", |v| {
            v.stats().tenants as u64
        }),
        (
            names::SEARCH_INDEX_TOOLS,
            "Tools in the current search index",
            |v| v.index().search().len() as u64,
        ),
        (
            names::SEARCH_INDEX_BYTES,
            "Heap bytes of the current search index, vectors included",
            |v| {
                let search = v.index().search();
                (search.lexical().heap_bytes() + search.vector_bytes()) as u64
            },
        ),
        (
            names::SEARCH_INDEX_SEMANTIC,
            "1 once the current search index ranks semantically",
            |v| u64::from(v.index().search().is_semantic()),
        ),
    ];
    read.into_iter()
        .map(|(name, description, read)| {
            let live = live.clone();
            meter()
                .u64_observable_gauge(name)
                .with_description(description)
                .with_callback(move |observer| {
                    if let Some(live) = live.upgrade() {
                        observer.observe(read(&live.current()), &[]);
                    }
                })
                .build()
        })
        .collect()
}
