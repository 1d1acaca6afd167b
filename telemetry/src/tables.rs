//! Every table a client, a tenant or a peer can grow, counted in one place:
//! its owner registers how to read its size with [`watch`], and `/metrics`
//! shows `quiver_table_entries{quiver_table="…"}` beside the bound,
//! `quiver_table_capacity`. docs/security.md ("Bounds") lists the tables;
//! a test checks that every listed table is counted here.
//!
//! It only counts: each owner enforces its own bound.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, OnceLock},
};

use opentelemetry::{KeyValue, metrics::ObservableGauge};

use crate::{instruments::names, metrics::meter};

/// Reads a table's current size; `None` once its owner is gone.
type Read = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

struct Watched {
    name: &'static str,
    capacity: u64,
    read: Read,
}

struct Registry {
    watched: Mutex<Vec<Watched>>,
    _gauges: [ObservableGauge<u64>; 2],
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        watched: Mutex::new(Vec::new()),
        _gauges: [
            meter()
                .u64_observable_gauge(names::TABLE_ENTRIES)
                .with_description("Entries held by a table clients or tenants can grow")
                .with_callback(|observer| {
                    for (name, (entries, _)) in snapshot() {
                        observer.observe(entries, &[KeyValue::new("quiver.table", name)]);
                    }
                })
                .build(),
            meter()
                .u64_observable_gauge(names::TABLE_CAPACITY)
                .with_description("The most entries such a table holds")
                .with_callback(|observer| {
                    for (name, (_, capacity)) in snapshot() {
                        observer.observe(capacity, &[KeyValue::new("quiver.table", name)]);
                    }
                })
                .build(),
        ],
    })
}

/// Counts table `name`, whose bound is `capacity` entries, by calling
/// `len` at each scrape; `len` returns `None` once the table is gone (hold
/// the table weakly in it). Two tables of one name (two gateways in one
/// process) add up.
pub fn watch(
    name: &'static str,
    capacity: usize,
    len: impl Fn() -> Option<usize> + Send + Sync + 'static,
) {
    let read: Read = Arc::new(move || len().map(|n| n as u64));
    registry()
        .watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Watched {
            name,
            capacity: capacity as u64,
            read,
        });
}

/// Every table counted now: name → (entries, capacity), tables of one name
/// added up. Tables whose owner is gone are forgotten.
pub fn snapshot() -> BTreeMap<&'static str, (u64, u64)> {
    // Read outside the lock: a reader may take locks of its own.
    let watched: Vec<(&'static str, u64, Read)> = registry()
        .watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|w| (w.name, w.capacity, w.read.clone()))
        .collect();
    let mut tables: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    let mut gone: Vec<Read> = Vec::new();
    for (name, capacity, read) in &watched {
        match read() {
            Some(entries) => {
                let table = tables.entry(name).or_default();
                table.0 += entries;
                table.1 += capacity;
            }
            None => gone.push(read.clone()),
        }
    }
    if !gone.is_empty() {
        let mut watched = registry().watched.lock().unwrap_or_else(|p| p.into_inner());
        watched.retain(|w| !gone.iter().any(|g| Arc::ptr_eq(g, &w.read)));
    }
    tables
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    #[test]
    fn tables_are_counted_until_their_owner_goes() {
        let size = Arc::new(AtomicUsize::new(3));
        let weak = Arc::downgrade(&size);
        watch("test.table", 10, move || {
            weak.upgrade().map(|s| s.load(Ordering::Relaxed))
        });
        assert_eq!(snapshot().get("test.table"), Some(&(3, 10)));
        size.store(7, Ordering::Relaxed);
        assert_eq!(snapshot().get("test.table"), Some(&(7, 10)));
        drop(size);
        assert_eq!(snapshot().get("test.table"), None);
    }
}
