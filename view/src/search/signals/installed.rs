//! The process's one signal store: opened once, flushed by a background
//! thread while the process lives and once more at shutdown.

use std::{
    path::Path,
    sync::{Arc, OnceLock, Weak},
    time::Duration,
};

use super::{SignalStore, signal_config::SignalConfig};

static INSTALLED: OnceLock<Arc<SignalStore>> = OnceLock::new();

/// Opens this process's store once (in `dir`, or in memory when `None`);
/// later calls return the first. A directory that cannot be used is logged
/// and the store is kept in memory. A persisted store gets a flusher thread
/// writing changed tenants every `flush_every` (at most one write per tenant
/// per interval, whatever the search rate; a crash loses at most that much);
/// call [`flush_installed`] at shutdown for the last changes.
pub fn install(dir: Option<&Path>, flush_every: Duration) -> Arc<SignalStore> {
    INSTALLED
        .get_or_init(|| {
            let store = match dir {
                Some(dir) => SignalStore::open(dir, SignalConfig::default()).unwrap_or_else(|e| {
                    tracing::warn!("search signals kept in memory only: {e}");
                    SignalStore::in_memory(SignalConfig::default())
                }),
                None => SignalStore::in_memory(SignalConfig::default()),
            };
            let store = Arc::new(store);
            let counted = Arc::downgrade(&store);
            // One entry per tenant that searched (each bounded inside).
            quiver_telemetry::tables::watch(
                "search.signal_tenants",
                SignalConfig::default().max_tenants,
                move || counted.upgrade().map(|s| s.tenants().len()),
            );
            if store.dir.is_some() {
                spawn_flusher(Arc::downgrade(&store), flush_every);
            }
            store
        })
        .clone()
}

/// Writes `store`'s changed tenants every `interval` until it is dropped.
fn spawn_flusher(store: Weak<SignalStore>, interval: Duration) {
    let spawned = std::thread::Builder::new()
        .name("search-signals".into())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                let Some(store) = store.upgrade() else {
                    return;
                };
                if let Err(e) = store.flush() {
                    tracing::warn!("search signals not saved (retrying): {e}");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("search signals are written only at shutdown: no flusher thread ({e})");
    }
}

/// The store [`install`]ed in this process, if any.
pub fn installed() -> Option<Arc<SignalStore>> {
    INSTALLED.get().cloned()
}

/// Writes the installed store's last changes (at shutdown); failures are logged.
pub fn flush_installed() {
    if let Some(store) = installed()
        && let Err(e) = store.flush()
    {
        tracing::warn!("search signals: the last changes were not saved: {e}");
    }
}

/// Seconds since the Unix epoch (signals are stamped with it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
