//! The durable Raft log, vote and snapshot store: one redb file in the node's
//! data directory. Every write is a committed (fsynced) redb transaction before
//! openraft is told it is done; what is read back is checked, and a damaged
//! file is an error naming the file, never a silently shorter log.

use std::{
    fmt::Debug,
    ops::{Bound, RangeBounds},
    path::{Path, PathBuf},
    sync::Arc,
};

use openraft::{
    AnyError, ErrorSubject, ErrorVerb, LogId, LogState, RaftLogReader, StorageIOError, Vote,
    storage::{LogFlushed, RaftLogStorage},
};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Serialize, de::DeserializeOwned};

use super::{NodeId, TypeConfig, store_error::StoreError, typ};
use crate::error_chain::with_causes;

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("raft_log");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("raft_meta");
pub(crate) const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

/// The file name inside the data directory.
pub const DATA_FILE: &str = "raft.redb";

/// Beside [`DATA_FILE`]: the id of the process that last opened it, so a
/// second process refused by redb's lock can say who holds the directory.
pub const OWNER_FILE: &str = "raft.redb.pid";

/// Why a data directory could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The directory cannot be created or read.
    #[error("data directory {path}: {source}")]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Another live process holds the database open (redb's file lock).
    #[error(
        "{path} is in use by another running Quiver process{}; stop that process, or start this one with another --data directory",
        holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    InUse {
        /// The file.
        path: PathBuf,
        /// The holder's process id, when its owner file names a live process.
        holder: Option<u32>,
    },
    /// The file exists but cannot be read or written (permissions, disk).
    #[error("cannot open {path}: {source}; check the file's permissions and the disk")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The database file is damaged or not a redb file.
    #[error(
        "{path} is damaged or not a Quiver data file ({detail}); restore it from a backup, or remove this node's data directory and re-add the node to the cluster so it catches up from the others"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// The directory belongs to another node id.
    #[error(
        "{path} holds the data of node {found}, not node {wanted}; pass --node-id {found} or use another --data directory"
    )]
    WrongNode {
        /// The file.
        path: PathBuf,
        /// Node id recorded in the file.
        found: NodeId,
        /// Node id asked for.
        wanted: NodeId,
    },
}

/// An open data directory, shared by the log store and the state machine.
#[derive(Clone)]
pub struct DataDir {
    pub(crate) db: Arc<Database>,
    pub(crate) path: PathBuf,
    /// The last log id of the snapshot on disk, as soon as it is saved.
    pub(crate) snapshot_saved: Arc<tokio::sync::watch::Sender<Option<LogId<NodeId>>>>,
}

impl DataDir {
    /// Opens (or creates) `dir/raft.redb` for `node_id` and checks that what it
    /// holds is readable and consistent.
    pub fn open(dir: &Path, node_id: NodeId) -> Result<DataDir, OpenError> {
        std::fs::create_dir_all(dir).map_err(|source| OpenError::Directory {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(DATA_FILE);
        let damaged = |detail: String| OpenError::Damaged {
            path: path.clone(),
            detail,
        };
        let db = match Database::create(&path) {
            Ok(db) => db,
            Err(
                redb::DatabaseError::DatabaseAlreadyOpen
                | redb::DatabaseError::LockProtocolMismatch,
            ) => {
                return Err(OpenError::InUse {
                    holder: live_owner(dir),
                    path,
                });
            }
            // redb reports a foreign file as InvalidData: that one is damage.
            Err(redb::DatabaseError::Storage(redb::StorageError::Io(source)))
                if is_access_problem(&source) =>
            {
                return Err(OpenError::Unreadable { path, source });
            }
            Err(e) => return Err(damaged(e.to_string())),
        };
        // Only a process holding the lock writes this, so it names the holder.
        if let Err(e) = std::fs::write(dir.join(OWNER_FILE), std::process::id().to_string()) {
            tracing::warn!(
                "cannot record this process in {}: {e}",
                dir.join(OWNER_FILE).display()
            );
        }
        DataDir::claim(db, path, node_id)
    }

    /// Opens (or creates) a data store kept by `backend` rather than a file in
    /// a directory, with the same checks as [`DataDir::open`]; `name` labels
    /// its errors. For tests that model the disk: the Raft simulation's disk
    /// loses what was written but not synced when its node loses power.
    pub fn open_on_backend(
        backend: impl redb::StorageBackend,
        name: &Path,
        node_id: NodeId,
    ) -> Result<DataDir, OpenError> {
        let path = name.to_path_buf();
        let db = Database::builder()
            .create_with_backend(backend)
            .map_err(|e| OpenError::Damaged {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        DataDir::claim(db, path, node_id)
    }

    /// Takes an opened database for `node_id`: records the node in a fresh
    /// one, refuses another node's, and checks the log.
    fn claim(db: Database, path: PathBuf, node_id: NodeId) -> Result<DataDir, OpenError> {
        let damaged = |detail: String| OpenError::Damaged {
            path: path.clone(),
            detail,
        };
        let data = DataDir {
            db: Arc::new(db),
            path: path.clone(),
            snapshot_saved: Arc::new(tokio::sync::watch::channel(None).0),
        };
        let saved: Option<openraft::SnapshotMeta<NodeId, super::Node>> =
            read_value(&data.db, SNAPSHOT, "meta").map_err(|e| damaged(with_causes(&e)))?;
        data.snapshot_saved
            .send_replace(saved.and_then(|m| m.last_log_id));
        // Claim the file for this node, or check it is ours.
        match data
            .meta::<NodeId>("node_id")
            .map_err(|e| damaged(with_causes(&e)))?
        {
            Some(found) if found != node_id => {
                return Err(OpenError::WrongNode {
                    path,
                    found,
                    wanted: node_id,
                });
            }
            Some(_) => {}
            None => data
                .put_meta("node_id", &node_id)
                .map_err(|e| damaged(with_causes(&e)))?,
        }
        data.check_log().map_err(|e| damaged(with_causes(&e)))?;
        Ok(data)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry decodes, indexes are contiguous and start right after the
    /// purged prefix: a torn or edited file is found here, not mid-election.
    fn check_log(&self) -> Result<(), StoreError> {
        let purged: Option<LogId<NodeId>> = self.meta("last_purged")?;
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(LOG) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut expected = purged.map(|p| p.index + 1);
        for item in table.iter()? {
            let (key, value) = item?;
            let index = key.value();
            if purged.is_some_and(|p| index <= p.index) {
                // Left by a purge interrupted after recording its point: harmless.
                continue;
            }
            let entry: typ::Entry = serde_json::from_slice(value.value())
                .map_err(|source| StoreError::Entry { index, source })?;
            if entry.log_id.index != index {
                return Err(StoreError::Misplaced {
                    stored: index,
                    claimed: entry.log_id.index,
                });
            }
            if let Some(want) = expected
                && index != want
            {
                return Err(StoreError::Gap {
                    expected: want,
                    found: index,
                });
            }
            expected = Some(index + 1);
        }
        Ok(())
    }

    /// Whether the directory holds no Raft data at all: no vote, no log
    /// entry, no snapshot (a fresh directory, which a restore may seed).
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        if self.meta::<serde_json::Value>("vote")?.is_some()
            || read_raw(&self.db, SNAPSHOT, "meta")?.is_some()
        {
            return Ok(false);
        }
        let txn = self.db.begin_read()?;
        match txn.open_table(LOG) {
            Ok(table) => Ok(table.first()?.is_none()),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }

    fn meta<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        read_value(&self.db, META, key)
    }

    fn put_meta<T: Serialize>(&self, key: &str, value: &T) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(value).map_err(|source| StoreError::Encode {
            key: key.to_string(),
            source,
        })?;
        let txn = self.db.begin_write()?;
        {
            let mut table = txn.open_table(META)?;
            table.insert(key, bytes.as_slice())?;
        }
        Ok(txn.commit()?)
    }
}

/// Errors of the file system around a file, not of its contents.
fn is_access_problem(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        PermissionDenied
            | ReadOnlyFilesystem
            | StorageFull
            | QuotaExceeded
            | ResourceBusy
            | IsADirectory
    )
}

/// The process id in `dir`'s owner file, if that process is still running.
fn live_owner(dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(dir.join(OWNER_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // Where /proc exists, a pid that is not running is a leftover, not the holder.
    let proc = Path::new("/proc");
    (!proc.exists() || proc.join(pid.to_string()).exists()).then_some(pid)
}

/// Reads one JSON value from a string-keyed table (absent table or key: `None`).
pub(crate) fn read_value<T: DeserializeOwned>(
    db: &Database,
    def: TableDefinition<&str, &[u8]>,
    key: &str,
) -> Result<Option<T>, StoreError> {
    match read_raw(db, def, key)? {
        Some(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| StoreError::Decode {
                    key: key.to_string(),
                    source,
                })
        }
        None => Ok(None),
    }
}

/// Reads one value's bytes from a string-keyed table (absent table or key: `None`).
pub(crate) fn read_raw(
    db: &Database,
    def: TableDefinition<&str, &[u8]>,
    key: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let txn = db.begin_read()?;
    let table = match txn.open_table(def) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(table.get(key)?.map(|v| v.value().to_vec()))
}

/// `error` as openraft's storage error (its causes kept).
pub(crate) fn storage_error(
    subject: ErrorSubject<NodeId>,
    verb: ErrorVerb,
    error: &StoreError,
) -> typ::StorageError {
    StorageIOError::new(subject, verb, AnyError::new(error)).into()
}

/// openraft's log storage over [`DataDir`].
#[derive(Clone)]
pub struct LogStore {
    data: DataDir,
}

impl LogStore {
    /// The log store of an open data directory.
    pub fn new(data: DataDir) -> LogStore {
        LogStore { data }
    }

    fn write_meta<T: Serialize>(
        &self,
        key: &str,
        value: &T,
        subject: ErrorSubject<NodeId>,
    ) -> Result<(), typ::StorageError> {
        self.data
            .put_meta(key, value)
            .map_err(|e| storage_error(subject, ErrorVerb::Write, &e))
    }

    fn read_meta<T: DeserializeOwned>(
        &self,
        key: &str,
        subject: ErrorSubject<NodeId>,
    ) -> Result<Option<T>, typ::StorageError> {
        self.data
            .meta(key)
            .map_err(|e| storage_error(subject, ErrorVerb::Read, &e))
    }

    fn last_entry_id(&self) -> Result<Option<LogId<NodeId>>, StoreError> {
        let txn = self.data.db.begin_read()?;
        let table = match txn.open_table(LOG) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Some((key, value)) = table.last()? else {
            return Ok(None);
        };
        let entry: typ::Entry =
            serde_json::from_slice(value.value()).map_err(|source| StoreError::Entry {
                index: key.value(),
                source,
            })?;
        Ok(Some(entry.log_id))
    }

    /// Deletes the entries in `range` in one transaction.
    fn delete_range(&self, range: (Bound<u64>, Bound<u64>)) -> Result<(), StoreError> {
        let txn = self.data.db.begin_write()?;
        {
            let mut table = txn.open_table(LOG)?;
            let keys: Vec<u64> = table
                .range(range)?
                .filter_map(|item| item.ok().map(|(k, _)| k.value()))
                .collect();
            for key in keys {
                table.remove(key)?;
            }
        }
        Ok(txn.commit()?)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<typ::Entry>, typ::StorageError> {
        let read = || -> Result<Vec<typ::Entry>, StoreError> {
            let txn = self.data.db.begin_read()?;
            let table = match txn.open_table(LOG) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            };
            let bounds = (range.start_bound().cloned(), range.end_bound().cloned());
            let purged: Option<LogId<NodeId>> = self.data.meta("last_purged")?;
            // Only the unbroken run from the start of the range: a batch
            // that skips purged entries would reach a follower as entries
            // that do not follow their `prev_log_id` (a hole in its log).
            let mut next = match range.start_bound() {
                Bound::Included(i) => Some(*i),
                Bound::Excluded(i) => Some(i + 1),
                Bound::Unbounded => None,
            };
            let mut entries = Vec::new();
            for item in table.range(bounds)? {
                let (key, value) = item?;
                if purged.is_some_and(|p| key.value() <= p.index) {
                    continue;
                }
                if next.is_some_and(|n| n != key.value()) {
                    break;
                }
                next = Some(key.value() + 1);
                let entry: typ::Entry =
                    serde_json::from_slice(value.value()).map_err(|source| StoreError::Entry {
                        index: key.value(),
                        source,
                    })?;
                entries.push(entry);
            }
            Ok(entries)
        };
        read().map_err(|e| storage_error(ErrorSubject::Logs, ErrorVerb::Read, &e))
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, typ::StorageError> {
        let last_purged_log_id: Option<LogId<NodeId>> =
            self.read_meta("last_purged", ErrorSubject::Logs)?;
        let last = self
            .last_entry_id()
            .map_err(|e| storage_error(ErrorSubject::Logs, ErrorVerb::Read, &e))?;
        Ok(LogState {
            last_purged_log_id,
            // Entries at or below the purge point left by an interrupted
            // purge are not the log: openraft needs last >= purged.
            last_log_id: std::cmp::max(last, last_purged_log_id),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), typ::StorageError> {
        self.write_meta("vote", vote, ErrorSubject::Vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, typ::StorageError> {
        self.read_meta("vote", ErrorSubject::Vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), typ::StorageError> {
        self.write_meta("committed", &committed, ErrorSubject::Store)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, typ::StorageError> {
        Ok(self
            .read_meta::<Option<LogId<NodeId>>>("committed", ErrorSubject::Store)?
            .flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), typ::StorageError>
    where
        I: IntoIterator<Item = typ::Entry> + Send,
        I::IntoIter: Send,
    {
        let write = || -> Result<(), StoreError> {
            let txn = self.data.db.begin_write()?;
            {
                let mut table = txn.open_table(LOG)?;
                for entry in entries {
                    let index = entry.log_id.index;
                    let bytes =
                        serde_json::to_vec(&entry).map_err(|source| StoreError::Encode {
                            key: format!("raft log entry {index}"),
                            source,
                        })?;
                    table.insert(index, bytes.as_slice())?;
                }
            }
            // A redb commit is durable (fsync) by default: the entries are on disk
            // before openraft counts this node towards a quorum.
            Ok(txn.commit()?)
        };
        match write() {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(with_causes(&e))));
                Err(storage_error(ErrorSubject::Logs, ErrorVerb::Write, &e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), typ::StorageError> {
        self.delete_range((Bound::Included(log_id.index), Bound::Unbounded))
            .map_err(|e| storage_error(ErrorSubject::Logs, ErrorVerb::Delete, &e))
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), typ::StorageError> {
        // openraft 0.9 purges for an installed snapshot before the state
        // machine has saved it: wait until a snapshot covers what goes, or a
        // crash in between leaves a log the saved snapshot does not reach.
        let mut saved = self.data.snapshot_saved.subscribe();
        let _ = saved.wait_for(|s| s.as_ref() >= Some(&log_id)).await;
        // Record the purge point first: a crash between the two leaves extra
        // entries below it, which the next purge removes, never a gap.
        self.write_meta("last_purged", &log_id, ErrorSubject::Logs)?;
        self.delete_range((Bound::Unbounded, Bound::Included(log_id.index)))
            .map_err(|e| storage_error(ErrorSubject::Logs, ErrorVerb::Delete, &e))
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, Entry, EntryPayload};

    use super::*;

    fn entry(index: u64) -> typ::Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    fn write_entries(data: &DataDir, range: std::ops::RangeInclusive<u64>) {
        let txn = data.db.begin_write().unwrap();
        {
            let mut table = txn.open_table(LOG).unwrap();
            for i in range {
                let bytes = serde_json::to_vec(&entry(i)).unwrap();
                table.insert(i, bytes.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    #[test]
    fn a_directory_held_open_is_in_use_not_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let held = DataDir::open(dir.path(), 7).unwrap();
        match DataDir::open(dir.path(), 7) {
            Err(e @ OpenError::InUse { .. }) => {
                let OpenError::InUse { holder, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(*holder, Some(std::process::id()));
                let message = e.to_string();
                assert!(message.contains("in use"), "{message}");
                assert!(message.contains("--data"), "{message}");
                assert!(!message.contains("remove"), "{message}");
            }
            Err(other) => panic!("expected InUse, got: {other}"),
            Ok(_) => panic!("opened a directory another handle holds"),
        }
        drop(held);
        assert!(
            DataDir::open(dir.path(), 7).is_ok(),
            "free again once closed"
        );
    }

    #[test]
    fn a_reopened_directory_keeps_its_log_and_owner() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path(), 7).unwrap();
        write_entries(&data, 1..=5);
        drop(data);
        assert!(DataDir::open(dir.path(), 7).is_ok());
        let err = DataDir::open(dir.path(), 8).err().expect("another node id");
        assert!(
            matches!(
                err,
                OpenError::WrongNode {
                    found: 7,
                    wanted: 8,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("--node-id 7"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_refused_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(DATA_FILE),
            b"this is not a redb file at all, sorry",
        )
        .unwrap();
        let err = DataDir::open(dir.path(), 1).err().expect("garbage refused");
        let text = err.to_string();
        assert!(matches!(err, OpenError::Damaged { .. }), "{text}");
        assert!(
            text.contains(DATA_FILE) && text.contains("restore it from a backup"),
            "{text}"
        );
    }

    #[test]
    fn a_truncated_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path(), 1).unwrap();
        write_entries(&data, 1..=200);
        drop(data);
        let path = dir.path().join(DATA_FILE);
        let len = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len / 3).unwrap();
        drop(file);
        match DataDir::open(dir.path(), 1) {
            Err(OpenError::Damaged { .. }) => {}
            Err(other) => panic!("unexpected error: {other}"),
            Ok(data) => {
                // redb may recover to its last good commit; then every entry
                // that remains must still decode and be contiguous.
                data.check_log().expect("a recovered log is consistent");
            }
        }
    }

    #[test]
    fn an_undecodable_entry_or_a_gap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path(), 1).unwrap();
        write_entries(&data, 1..=3);
        write_entries(&data, 5..=6);
        let err = data.check_log().unwrap_err().to_string();
        assert!(
            err.contains("gap") && err.contains("expected entry 4"),
            "{err}"
        );

        let txn = data.db.begin_write().unwrap();
        {
            let mut table = txn.open_table(LOG).unwrap();
            table.insert(4u64, b"{not json".as_slice()).unwrap();
        }
        txn.commit().unwrap();
        drop(data);
        let err = DataDir::open(dir.path(), 1)
            .err()
            .expect("bad entry refused");
        assert!(err.to_string().contains("entry 4 does not decode"), "{err}");
    }
}
