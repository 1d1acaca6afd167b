//! The current manifest, swapped atomically, with a watch for new versions;
//! beside it the tenant directory as the control plane last sent it.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use arc_swap::ArcSwap;
use quiver_proto::{Manifest, manifest::ServerEntry, tenant::TenantDirectory};
use tokio::sync::{Notify, watch};

use crate::discovery::DiscoverySink;

/// Holds the current [`Manifest`] and hands out new versions to watchers.
pub struct ManifestStore {
    current: ArcSwap<Manifest>,
    changes: watch::Sender<Arc<Manifest>>,
    publish: std::sync::Mutex<()>,
    tenants: watch::Sender<Arc<TenantDirectory>>,
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
            tenants: watch::channel(Arc::new(TenantDirectory::default())).0,
        }
    }

    /// The tenants as last received (empty until the control plane sends them).
    pub fn tenants(&self) -> Arc<TenantDirectory> {
        self.tenants.borrow().clone()
    }

    /// A receiver that sees every tenant directory installed from now on.
    pub fn subscribe_tenants(&self) -> watch::Receiver<Arc<TenantDirectory>> {
        self.tenants.subscribe()
    }

    /// Installs the tenants the control plane sent.
    pub fn install_tenants(&self, tenants: TenantDirectory) {
        tracing::debug!(tenants = tenants.len(), "tenants installed");
        self.tenants.send_replace(Arc::new(tenants));
    }

    /// The current version (cheap: an atomic load).
    pub fn current(&self) -> Arc<Manifest> {
        self.current.load_full()
    }

    /// A receiver that sees every version published from now on.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Manifest>> {
        self.changes.subscribe()
    }

    /// Installs a manifest built elsewhere (the control plane's watch stream).
    pub fn install(&self, manifest: Arc<Manifest>) {
        let _serialised = self.publish.lock().unwrap_or_else(|p| p.into_inner());
        tracing::info!(version = manifest.version, tools = manifest.tools.len(), stub_hash = %manifest.stub_hash, "manifest installed");
        self.current.store(manifest.clone());
        self.changes.send_replace(manifest);
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
pub fn same_content(a: &Manifest, b: &Manifest) -> bool {
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

/// A discovery sink for a node without a control plane: keeps every upstream's
/// last entry and publishes a new manifest version into a [`ManifestStore`],
/// coalescing bursts (70 upstreams coming up give one version, not 70).
pub struct LocalCatalogue {
    store: Arc<ManifestStore>,
    holds: BTreeMap<String, quiver_proto::finding::HoldAt>,
    entries: Mutex<BTreeMap<String, ServerEntry>>,
    dirty: Notify,
}

impl LocalCatalogue {
    /// A catalogue publishing into `store`; its publisher task runs until `shutdown`.
    pub fn new(
        store: Arc<ManifestStore>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Arc<LocalCatalogue> {
        LocalCatalogue::holding(store, BTreeMap::new(), shutdown)
    }

    /// A catalogue that holds back tools by each upstream's hold level
    /// (`holds`, by upstream id; the default level for the others).
    pub fn holding(
        store: Arc<ManifestStore>,
        holds: BTreeMap<String, quiver_proto::finding::HoldAt>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Arc<LocalCatalogue> {
        let catalogue = Arc::new(LocalCatalogue {
            store,
            holds,
            entries: Mutex::new(BTreeMap::new()),
            dirty: Notify::new(),
        });
        let c = catalogue.clone();
        tokio::spawn(async move {
            let publish = async {
                loop {
                    c.dirty.notified().await;
                    tokio::time::sleep(Duration::from_millis(25)).await;
                    c.publish_now();
                }
            };
            tokio::select! {
                () = publish => {}
                () = shutdown.cancelled() => {}
            }
        });
        catalogue
    }

    /// Publishes what has been discovered so far, now.
    pub fn publish_now(&self) -> Arc<Manifest> {
        let entries: Vec<ServerEntry> = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        self.store.publish(entries)
    }
}

impl DiscoverySink for LocalCatalogue {
    fn catalogue(&self) -> quiver_screen::Catalogue {
        quiver_screen::Catalogue::of_entries(
            self.entries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values(),
        )
    }

    fn discovered(&self, mut entry: ServerEntry) {
        // Without a control plane nobody can approve a held tool: the
        // upstream's hold level decides alone.
        let hold = self.holds.get(&entry.id).copied().unwrap_or_default();
        let findings = std::mem::take(&mut entry.findings);
        entry.tools.retain(|tool| {
            let found = findings.get(&tool.name).map_or(&[][..], Vec::as_slice);
            let held = hold.holds_any(found);
            if held {
                tracing::warn!(
                    upstream = %entry.id,
                    tool = %tool.name,
                    "tool held back by screening: {}",
                    found.first().map(|f| format!("{} ({}) in {}: {}", f.rule, f.severity, f.field, f.excerpt)).unwrap_or_default()
                );
            }
            !held
        });
        entry.findings = findings
            .into_iter()
            .filter(|(name, _)| entry.tools.iter().any(|t| &t.name == name))
            .collect();
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(entry.id.clone(), entry);
        self.dirty.notify_one();
    }

    fn removed(&self, id: &str) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        self.dirty.notify_one();
    }
}
