//! The current manifest, swapped atomically, with a watch for new versions.

use std::sync::Arc;

use arc_swap::ArcSwap;
use quiver_proto::{Manifest, manifest::ServerEntry};
use tokio::sync::watch;

/// Holds the current [`Manifest`] and hands out new versions to watchers.
pub struct ManifestStore {
    current: ArcSwap<Manifest>,
    changes: watch::Sender<Arc<Manifest>>,
    publish: std::sync::Mutex<()>,
}

impl Default for ManifestStore {
    fn default() -> Self {
        ManifestStore::new()
    }
}

impl ManifestStore {
    /// An empty store (version 0).
    pub fn new() -> ManifestStore {
        let empty = Arc::new(Manifest::empty());
        let (changes, _) = watch::channel(empty.clone());
        ManifestStore {
            current: ArcSwap::new(empty),
            changes,
            publish: std::sync::Mutex::new(()),
        }
    }

    /// The current version (cheap: an atomic load).
    pub fn current(&self) -> Arc<Manifest> {
        self.current.load_full()
    }

    /// A receiver that sees every version published from now on.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Manifest>> {
        self.changes.subscribe()
    }

    /// Builds a manifest from `entries` and publishes it as the next version,
    /// unless nothing a client can see changed. Returns the current manifest.
    pub fn publish(&self, entries: Vec<ServerEntry>) -> Arc<Manifest> {
        let _serialised = self.publish.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.current.load_full();
        let mut next = Manifest::build(current.version + 1, entries);
        if same_content(&current, &next) {
            return current;
        }
        next.version = current.version + 1;
        let next = Arc::new(next);
        self.current.store(next.clone());
        self.changes.send_replace(next.clone());
        tracing::info!(version = next.version, tools = next.tools.len(), stub_hash = %next.stub_hash, "manifest published");
        next
    }
}

/// Same stubs and same server metadata: nothing a client could observe changed.
fn same_content(a: &Manifest, b: &Manifest) -> bool {
    a.stub_hash == b.stub_hash
        && a.servers.len() == b.servers.len()
        && a.servers.iter().zip(&b.servers).all(|(x, y)| {
            x.id == y.id
                && x.description == y.description
                && x.validation == y.validation
                && x.tags == y.tags
                && x.features == y.features
        })
        && a.tools
            .iter()
            .zip(&b.tools)
            .all(|(x, y)| x.canonical_json == y.canonical_json)
}
