//! The signal store on disk: one JSON file per tenant, named by a hash of the
//! tenant, written whole through a temporary file; loading skips what does not
//! parse. Writing happens only in [`SignalStore::flush`] and [`SignalStore::reset`].

use std::{
    collections::HashMap,
    io,
    path::{Path, PathBuf},
    sync::Mutex,
};

use sha2::{Digest, Sha256};

use super::{SignalStore, lock, signal_config::SignalConfig, tenant_signals::TenantSignals};

/// Why the signal store could not read or write its directory.
///
/// Each message names the file and includes the operating system's error:
/// callers show it on its own (the edge's reset endpoint, the flusher's log),
/// so it must say everything; the cause is also kept as the error's source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignalStoreError {
    /// The store's directory could not be created.
    #[error("creating the search signals directory {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// The store's directory could not be listed.
    #[error("reading {}: {source}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A tenant's signals could not be turned into JSON.
    #[error("serialising the search signals of tenant {tenant:?}: {source}")]
    Serialize {
        /// The tenant.
        tenant: String,
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },
    /// A tenant's file could not be written.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The temporary file being written.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A written file could not be moved into place.
    #[error("renaming {}: {source}", path.display())]
    Rename {
        /// The temporary file being renamed.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A tenant's file could not be removed on reset.
    #[error("removing {}: {source}", path.display())]
    Remove {
        /// The tenant's file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
}

/// Why a tenant's signals file is skipped at load (logged; the tenant starts afresh).
#[derive(Debug, thiserror::Error)]
enum UnreadableSignals {
    /// The file could not be read.
    #[error("{0}")]
    Read(std::io::Error),
    /// It is not a tenant's signals.
    #[error("{0}")]
    Parse(serde_json::Error),
}

impl SignalStore {
    /// The store persisted in `dir` (created if missing), with every tenant
    /// file in it loaded. A file that does not parse is skipped and named in
    /// the log (it is replaced at that tenant's next save).
    pub fn open(dir: &Path, config: SignalConfig) -> Result<SignalStore, SignalStoreError> {
        std::fs::create_dir_all(dir).map_err(|source| SignalStoreError::CreateDir {
            dir: dir.to_owned(),
            source,
        })?;
        let read_dir = |source| SignalStoreError::ReadDir {
            dir: dir.to_owned(),
            source,
        };
        let mut tenants = HashMap::new();
        for entry in std::fs::read_dir(dir).map_err(read_dir)? {
            let path = entry.map_err(read_dir)?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let parsed = std::fs::read(&path)
                .map_err(UnreadableSignals::Read)
                .and_then(|b| {
                    serde_json::from_slice::<TenantSignals>(&b).map_err(UnreadableSignals::Parse)
                });
            match parsed {
                Ok(signals) => {
                    tenants.insert(signals.tenant.clone(), signals);
                }
                Err(e) => tracing::warn!("search signals: skipping {}: {e}", path.display()),
            }
        }
        Ok(SignalStore {
            dir: Some(dir.to_owned()),
            config,
            tenants: Mutex::new(tenants),
            dirty: Mutex::default(),
            disk: Mutex::default(),
        })
    }

    /// Forgets everything learned for `tenant`, on disk too.
    pub fn reset(&self, tenant: &str) -> Result<(), SignalStoreError> {
        let _disk = lock(&self.disk);
        self.lock().remove(tenant);
        lock(&self.dirty).remove(tenant);
        if let Some(path) = self.path_of(tenant) {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(SignalStoreError::Remove { path, source }),
            }
        }
        Ok(())
    }

    /// Writes the signals of every tenant changed since its last write
    /// (nothing for a store in memory). A tenant whose file cannot be
    /// written stays marked and is tried again at the next flush.
    pub fn flush(&self) -> Result<(), SignalStoreError> {
        if self.dir.is_none() {
            return Ok(());
        }
        let _disk = lock(&self.disk);
        let changed: Vec<String> = lock(&self.dirty).drain().collect();
        let mut first_error = None;
        for tenant in changed {
            // Serialised under the lock, written outside it: a search waits
            // for a copy, never for the disk.
            let Some(bytes) = self.lock().get(&tenant).map(serde_json::to_vec) else {
                continue;
            };
            let written = bytes
                .map_err(|source| SignalStoreError::Serialize {
                    tenant: tenant.clone(),
                    source,
                })
                .and_then(|bytes| self.write(&tenant, &bytes));
            if let Err(e) = written {
                lock(&self.dirty).insert(tenant);
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn write(&self, tenant: &str, bytes: &[u8]) -> Result<(), SignalStoreError> {
        let Some(path) = self.path_of(tenant) else {
            return Ok(());
        };
        let tmp = path.with_extension("json.tmp");
        if let Err(source) = std::fs::write(&tmp, bytes) {
            return Err(SignalStoreError::Write { path: tmp, source });
        }
        if let Err(source) = std::fs::rename(&tmp, &path) {
            return Err(SignalStoreError::Rename { path: tmp, source });
        }
        Ok(())
    }

    /// One file per tenant, named by a hash so any tenant name is a safe file name.
    fn path_of(&self, tenant: &str) -> Option<PathBuf> {
        let digest = Sha256::digest(tenant.as_bytes());
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}.json", hex::encode(&digest[..12]))))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::{SignalConfig, SignalStore, UncalledTool, ZeroHitQuery, test_support::*};

    #[test]
    fn query_vectors_survive_a_round_trip_through_a_file() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let now = 1_000 * DAY;
        let v = unit(1, 4, 0.2);
        {
            let store = SignalStore::open(dir.path(), SignalConfig::default())?;
            store.record_embedded_search("a", "alpha", Some(&v), &shown(&["s/t"]), now);
            store.record_call("a", "s/t", true, now);
            store.flush()?;
        }
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        let a = store.embedded_adjustments("a", "omega", Some(&v), now);
        assert!(a["s/t"] > 0.0, "{a:?}");
        Ok(())
    }

    #[test]
    fn signals_persist_and_reset_removes_them() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let now = 1_000 * DAY;
        {
            let store = SignalStore::open(dir.path(), SignalConfig::default())?;
            store.record_search(
                "tenant/with odd name",
                "create an issue",
                &shown(&["gh/create", "gh/list"]),
                now,
            );
            store.record_search("tenant/with odd name", "qwxz", &[], now);
            store.record_call("tenant/with odd name", "gh/create", true, now);
            store.record_search("b", "create an issue", &shown(&["gh/list"]), now);
            store.flush()?;
        }
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        assert_eq!(store.tenants(), ["b", "tenant/with odd name"]);
        assert!(store.adjustments("tenant/with odd name", "create issue", now)["gh/create"] > 0.0);
        let stats = store.stats("tenant/with odd name");
        assert_eq!(
            stats.zero_hit_queries,
            [ZeroHitQuery {
                query: "qwxz".into(),
                count: 1
            }]
        );
        assert_eq!(
            stats.found_never_called,
            [UncalledTool {
                tool: "gh/list".into(),
                shown: 1
            }]
        );
        store.reset("tenant/with odd name")?;
        assert!(
            store
                .adjustments("tenant/with odd name", "create issue", now)
                .is_empty()
        );
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        assert_eq!(store.tenants(), ["b"]);
        Ok(())
    }

    #[test]
    fn searches_alone_reach_disk_at_the_next_flush_and_nothing_before() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        store.record_search("a", "nothing matches this", &[], 5);
        store.record_search("a", "weather", &shown(&["w/now"]), 5);
        // Recording never writes: the search path does not wait for the disk.
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
        store.flush()?;
        let files = || -> anyhow::Result<Vec<PathBuf>> {
            Ok(std::fs::read_dir(dir.path())?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()?)
        };
        let written = files()?;
        assert_eq!(written.len(), 1, "{written:?}");
        let saved = std::fs::read(&written[0])?;
        // Nothing changed since: the next flush writes nothing.
        std::fs::remove_file(&written[0])?;
        store.flush()?;
        assert!(files()?.is_empty());
        std::fs::write(&written[0], saved)?;
        let reopened = SignalStore::open(dir.path(), SignalConfig::default())?;
        let stats = reopened.stats("a");
        assert_eq!(stats.zero_hit_queries[0].query, "nothing matches this");
        assert_eq!(stats.found_never_called[0].tool, "w/now");
        Ok(())
    }

    #[test]
    fn a_flush_after_a_reset_does_not_bring_the_tenant_back() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        store.record_search("a", "qwxz", &[], 5);
        store.flush()?;
        store.record_search("a", "qwxz again", &[], 6);
        store.reset("a")?;
        store.flush()?;
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
        assert!(
            SignalStore::open(dir.path(), SignalConfig::default())?
                .tenants()
                .is_empty()
        );
        Ok(())
    }
}
