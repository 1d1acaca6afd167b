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
    /// `None` for a table bounded by what operators create rather than by a
    /// number of its own (see [`count`]).
    capacity: Option<u64>,
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
                        if let Some(capacity) = capacity {
                            observer.observe(capacity, &[KeyValue::new("quiver.table", name)]);
                        }
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
    register(name, Some(capacity as u64), len);
}

/// Counts table `name` like [`watch`], for a table with no bound of its
/// own: one whose entries follow only what operators create (tenants,
/// secrets, grants), never what a client chooses. It has no
/// `quiver_table_capacity`.
pub fn count(name: &'static str, len: impl Fn() -> Option<usize> + Send + Sync + 'static) {
    register(name, None, len);
}

fn register(
    name: &'static str,
    capacity: Option<u64>,
    len: impl Fn() -> Option<usize> + Send + Sync + 'static,
) {
    let read: Read = Arc::new(move || len().map(|n| n as u64));
    registry()
        .watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Watched {
            name,
            capacity,
            read,
        });
}

/// Every table counted now: name → (entries, capacity), tables of one name
/// added up (a table of [`count`] has no capacity). Tables whose owner is
/// gone are forgotten.
pub fn snapshot() -> BTreeMap<&'static str, (u64, Option<u64>)> {
    // Read outside the lock: a reader may take locks of its own.
    let watched: Vec<(&'static str, Option<u64>, Read)> = registry()
        .watched
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|w| (w.name, w.capacity, w.read.clone()))
        .collect();
    let mut tables: BTreeMap<&'static str, (u64, Option<u64>)> = BTreeMap::new();
    let mut gone: Vec<Read> = Vec::new();
    for (name, capacity, read) in &watched {
        match read() {
            Some(entries) => {
                let table = tables.entry(name).or_insert((0, Some(0)));
                table.0 += entries;
                table.1 = table.1.zip(*capacity).map(|(a, b)| a + b);
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
        assert_eq!(snapshot().get("test.table"), Some(&(3, Some(10))));
        size.store(7, Ordering::Relaxed);
        assert_eq!(snapshot().get("test.table"), Some(&(7, Some(10))));
        drop(size);
        assert_eq!(snapshot().get("test.table"), None);
    }

    #[test]
    fn a_table_without_a_bound_is_counted_without_a_capacity() {
        let size = Arc::new(AtomicUsize::new(2));
        let weak = Arc::downgrade(&size);
        count("test.unbounded", move || {
            weak.upgrade().map(|s| s.load(Ordering::Relaxed))
        });
        assert_eq!(snapshot().get("test.unbounded"), Some(&(2, None)));
        drop(size);
        assert_eq!(snapshot().get("test.unbounded"), None);
    }
}
