//! [`TenantViews`] kept current: a background task follows the manifest and
//! the tenants and swaps in new views atomically. A new manifest updates the
//! shared index from the previous version's (off the async threads, before
//! the swap, so no request waits for it); new tenants alone keep the views
//! already derived. The edge and the executor both answer from one of these.

use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use quiver_proto::{Manifest, tenant::TenantDirectory};
use tokio::sync::watch;

use crate::TenantViews;

/// The current [`TenantViews`], swapped atomically.
pub struct LiveViews {
    current: ArcSwap<TenantViews>,
    installed: watch::Sender<u64>,
}

impl LiveViews {
    /// Views that follow `manifests` and `tenants` until the manifest sender
    /// is dropped (or the returned value is). Needs a Tokio runtime.
    pub fn follow(
        mut manifests: watch::Receiver<Arc<Manifest>>,
        mut tenants: watch::Receiver<Arc<TenantDirectory>>,
    ) -> Arc<LiveViews> {
        let first = TenantViews::new(
            manifests.borrow_and_update().clone(),
            tenants.borrow_and_update().clone(),
        );
        let live = Arc::new(LiveViews {
            current: ArcSwap::from_pointee(first),
            installed: watch::channel(0).0,
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
