//! The edge's shared state: the current tool view (swapped atomically when a new
//! manifest version arrives), where calls and scripts run, and the sessions
//! to tell when the passthrough tool list changes. It knows nothing of modes
//! or sessions; a session holds a gateway, never the reverse.

use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use quiver_contract::{Dispatch, Scripts};
use quiver_proto::Manifest;
use rmcp::{RoleServer, service::Peer};
use tokio::sync::watch;

use quiver_view::ToolView;

use crate::config::EdgeConfig;

/// State shared by every session of one edge.
pub struct Gateway {
    view: ArcSwap<ToolView>,
    dispatch: Arc<dyn Dispatch>,
    config: EdgeConfig,
    listeners: Mutex<Vec<Peer<RoleServer>>>,
    scripts: Option<Arc<dyn Scripts>>,
}

impl Gateway {
    /// A gateway serving `manifests` (kept current by a background task that
    /// ends when the sender is dropped), running calls through `dispatch` and,
    /// when given, code mode's `execute` on `scripts`.
    pub fn with_scripts(
        mut manifests: watch::Receiver<Arc<Manifest>>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Option<Arc<dyn Scripts>>,
        config: EdgeConfig,
    ) -> Arc<Gateway> {
        let data = config.search_data_dir.as_deref();
        quiver_view::search::semantic::install(
            config.search_model_dir.as_deref(),
            data.map(|d| d.join("vectors")).as_deref(),
        );
        quiver_view::search::signals::install(
            data.map(|d| d.join("signals")).as_deref(),
            std::time::Duration::from_secs(config.search_signal_flush_secs.max(1)),
        );
        let first = manifests.borrow_and_update().clone();
        let gateway = Arc::new(Gateway {
            view: ArcSwap::from_pointee(ToolView::all(first)),
            dispatch,
            config,
            listeners: Mutex::new(Vec::new()),
            scripts,
        });
        let weak: Weak<Gateway> = Arc::downgrade(&gateway);
        tokio::spawn(async move {
            while manifests.changed().await.is_ok() {
                let manifest = manifests.borrow_and_update().clone();
                let Some(gateway) = weak.upgrade() else {
                    return;
                };
                let view = tokio::task::spawn_blocking(move || ToolView::all(manifest)).await;
                match view {
                    Ok(view) => gateway.install(view).await,
                    Err(e) => tracing::error!("building the tool view failed: {e}"),
                }
            }
        });
        gateway
    }

    async fn install(&self, view: ToolView) {
        tracing::debug!(
            version = view.manifest().version,
            tools = view.len(),
            "tool view installed"
        );
        self.view.store(Arc::new(view));
        let peers: Vec<Peer<RoleServer>> = {
            let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            listeners.retain(|p| !p.is_transport_closed());
            listeners.clone()
        };
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    /// The current view.
    pub fn view(&self) -> Arc<ToolView> {
        self.view.load_full()
    }

    /// The dispatcher.
    pub fn dispatch(&self) -> &Arc<dyn Dispatch> {
        &self.dispatch
    }

    /// Where `execute` runs, when scripts are enabled.
    pub fn scripts(&self) -> Option<&Arc<dyn Scripts>> {
        self.scripts.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &EdgeConfig {
        &self.config
    }

    /// Tells `peer` about tool-list changes from now on.
    pub(crate) fn listen_for_changes(&self, peer: Peer<RoleServer>) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|p| !p.is_transport_closed());
        listeners.push(peer);
    }
}
