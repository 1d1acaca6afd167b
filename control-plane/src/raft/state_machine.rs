//! The Raft state machine: [`ControlState`] in memory, its snapshot in the data
//! directory. Applying a committed entry publishes the new manifest to watchers.
//! A restarted node loads its last snapshot and openraft re-applies the
//! committed entries after it.

use std::{
    io::Cursor,
    sync::{Arc, Mutex, MutexGuard},
};

use openraft::{
    AnyError, EntryPayload, ErrorSubject, ErrorVerb, LogId, RaftSnapshotBuilder, SnapshotMeta,
    StorageIOError, StoredMembership,
    storage::{RaftStateMachine, Snapshot},
};
use quiver_proto::Manifest;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{
    Node, NodeId, TypeConfig,
    log_store::{DataDir, SNAPSHOT, read_raw, read_value, storage_error},
    store_error::StoreError,
    typ,
};
use crate::{
    outcome::{CommandResult, Outcome},
    state::ControlState,
};

/// Snapshot payload format written by this build.
const SNAPSHOT_FORMAT: u32 = 1;

/// Why a snapshot could not be loaded or saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The data file could not be read or written.
    #[error("snapshot storage")]
    Store(#[from] StoreError),
    /// Metadata names a snapshot whose data is missing.
    #[error("snapshot metadata without its data")]
    MissingData,
    /// The payload is not the JSON this build writes.
    #[error("the snapshot does not decode")]
    Decode(#[source] serde_json::Error),
    /// The payload was written by a newer build.
    #[error("snapshot format {0} is newer than this build reads ({SNAPSHOT_FORMAT})")]
    TooNew(u32),
}

/// Why a data directory could not be seeded from a backup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeedError {
    /// It holds Raft data already.
    #[error(
        "{}: the data directory already holds Raft data; a restore seeds a new cluster: point --data at an empty directory",
        path.display()
    )]
    NotEmpty {
        /// The directory's data file.
        path: std::path::PathBuf,
    },
    /// The state could not be encoded.
    #[error("encoding the restored state")]
    Encode(#[source] serde_json::Error),
    /// The data file could not be read or written.
    #[error("writing the restored state")]
    Store(#[from] StoreError),
}

#[derive(Serialize, Deserialize)]
struct SnapshotPayload {
    format: u32,
    state: ControlState,
}

/// What the rest of the node reads: the state, and change notifications.
pub struct SharedState {
    state: Mutex<ControlState>,
    last_applied: Mutex<Option<LogId<NodeId>>>,
    membership: Mutex<StoredMembership<NodeId, Node>>,
    manifests: watch::Sender<Arc<Manifest>>,
    applied: watch::Sender<u64>,
}

impl SharedState {
    /// Locks the replicated state for reading (never hold it across an await).
    pub fn lock(&self) -> MutexGuard<'_, ControlState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current manifest.
    pub fn manifest(&self) -> Arc<Manifest> {
        self.manifests.borrow().clone()
    }

    /// Fires after every batch of applied entries (with the last applied index).
    pub fn subscribe_applied(&self) -> watch::Receiver<u64> {
        self.applied.subscribe()
    }

    /// The last log id applied here.
    pub fn last_applied(&self) -> Option<LogId<NodeId>> {
        *self.last_applied.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, state: &mut ControlState) {
        let index = self.last_applied().map_or(0, |l| l.index);
        self.applied.send_replace(index);
        let manifest = state.manifest();
        if manifest.version != self.manifests.borrow().version {
            self.manifests.send_replace(manifest);
        }
    }
}

/// openraft's state machine over [`SharedState`] and [`DataDir`].
#[derive(Clone)]
pub struct StateMachine {
    shared: Arc<SharedState>,
    data: DataDir,
}

impl StateMachine {
    /// Loads the last snapshot of `data`, if any.
    pub fn open(data: DataDir) -> Result<StateMachine, SnapshotError> {
        let meta: Option<SnapshotMeta<NodeId, Node>> = read_value(&data.db, SNAPSHOT, "meta")?;
        let (mut state, last_applied, membership) = match meta {
            Some(meta) => {
                let bytes =
                    read_raw(&data.db, SNAPSHOT, "data")?.ok_or(SnapshotError::MissingData)?;
                let state = decode_snapshot(&bytes)?;
                (state, meta.last_log_id, meta.last_membership)
            }
            None => (ControlState::default(), None, StoredMembership::default()),
        };
        let manifest = state.manifest();
        let (manifests, _) = watch::channel(manifest);
        let (applied, _) = watch::channel(last_applied.map_or(0, |l| l.index));
        Ok(StateMachine {
            shared: Arc::new(SharedState {
                state: Mutex::new(state),
                last_applied: Mutex::new(last_applied),
                membership: Mutex::new(membership),
                manifests,
                applied,
            }),
            data,
        })
    }

    /// The handle the services read through.
    pub fn shared(&self) -> Arc<SharedState> {
        self.shared.clone()
    }

    fn save_snapshot(
        &self,
        meta: &SnapshotMeta<NodeId, Node>,
        bytes: &[u8],
    ) -> Result<(), StoreError> {
        save_snapshot(&self.data, meta, bytes)
    }
}

/// Stores `bytes` as `data`'s snapshot described by `meta`.
fn save_snapshot(
    data: &DataDir,
    meta: &SnapshotMeta<NodeId, Node>,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let last_log_id = meta.last_log_id;
    let meta = serde_json::to_vec(meta).map_err(|source| StoreError::Encode {
        key: "meta".into(),
        source,
    })?;
    let txn = data.db.begin_write()?;
    {
        let mut table = txn.open_table(SNAPSHOT)?;
        table.insert("data", bytes)?;
        table.insert("meta", meta.as_slice())?;
    }
    txn.commit()?;
    data.snapshot_saved.send_replace(last_log_id);
    Ok(())
}

/// The snapshot payload of `state` (what [`decode_snapshot`] reads).
pub(crate) fn encode_snapshot(state: &ControlState) -> Result<Vec<u8>, serde_json::Error> {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        format: u32,
        state: &'a ControlState,
    }
    serde_json::to_vec(&Borrowed {
        format: SNAPSHOT_FORMAT,
        state,
    })
}

/// Makes the empty data directory `data` hold `state` as a snapshot at log
/// `index`, with `node` (reached at `addr`) the only member: a one-node
/// cluster that elects itself and continues the log after `index`, to
/// which the other nodes are added as at a first start. Refused unless the
/// directory holds nothing yet.
pub(crate) fn seed(
    data: &DataDir,
    state: &ControlState,
    index: u64,
    node: NodeId,
    addr: &str,
) -> Result<(), SeedError> {
    if !data.is_empty()? {
        return Err(SeedError::NotEmpty {
            path: data.path().to_path_buf(),
        });
    }
    // Term 0: the new cluster's first election (term 1) is newer than it.
    let log_id = LogId::new(openraft::CommittedLeaderId::new(0, node), index);
    let members = std::collections::BTreeMap::from([(node, Node::new(addr))]);
    let membership =
        openraft::Membership::new(vec![std::collections::BTreeSet::from([node])], members);
    let meta = SnapshotMeta {
        last_log_id: Some(log_id),
        last_membership: StoredMembership::new(Some(log_id), membership),
        snapshot_id: format!("restored-{index}"),
    };
    let bytes = encode_snapshot(state).map_err(SeedError::Encode)?;
    Ok(save_snapshot(data, &meta, &bytes)?)
}

pub(crate) fn decode_snapshot(bytes: &[u8]) -> Result<ControlState, SnapshotError> {
    let payload: SnapshotPayload = serde_json::from_slice(bytes).map_err(SnapshotError::Decode)?;
    if payload.format > SNAPSHOT_FORMAT {
        return Err(SnapshotError::TooNew(payload.format));
    }
    Ok(payload.state)
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, typ::StorageError> {
        // Serialise under the state lock so the payload and its log id agree.
        let (bytes, last_applied, membership) = {
            let state = self.shared.lock();
            let payload = encode_snapshot(&state).map_err(|source| {
                let error = StoreError::Encode {
                    key: "snapshot".into(),
                    source,
                };
                storage_error(ErrorSubject::StateMachine, ErrorVerb::Read, &error)
            })?;
            (
                payload,
                self.shared.last_applied(),
                self.shared
                    .membership
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            )
        };
        let snapshot_id = match last_applied {
            Some(id) => format!("{}-{}", id.leader_id, id.index),
            None => "empty".to_string(),
        };
        let meta = SnapshotMeta {
            last_log_id: last_applied,
            last_membership: membership,
            snapshot_id,
        };
        self.save_snapshot(&meta, &bytes)
            .map_err(|e| storage_error(ErrorSubject::StateMachine, ErrorVerb::Write, &e))?;
        tracing::info!(bytes = bytes.len(), last = ?last_applied, "snapshot built");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Node>), typ::StorageError> {
        let membership = self
            .shared
            .membership
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Ok((self.shared.last_applied(), membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Outcome>, typ::StorageError>
    where
        I: IntoIterator<Item = typ::Entry> + Send,
        I::IntoIter: Send,
    {
        let mut outcomes = Vec::new();
        let mut state = self.shared.lock();
        for entry in entries {
            let outcome = match &entry.payload {
                EntryPayload::Blank => Outcome::Applied {
                    result: CommandResult::Nothing,
                    manifest_version: state.manifest_version(),
                },
                EntryPayload::Normal(command) => {
                    let outcome = state.apply(command);
                    if let Outcome::Refused { code, message } = &outcome {
                        tracing::debug!(command = command.command.name(), %code, message, "refused");
                    }
                    outcome
                }
                EntryPayload::Membership(membership) => {
                    *self
                        .shared
                        .membership
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) =
                        StoredMembership::new(Some(entry.log_id), membership.clone());
                    Outcome::Applied {
                        result: CommandResult::Nothing,
                        manifest_version: state.manifest_version(),
                    }
                }
            };
            *self
                .shared
                .last_applied
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(entry.log_id);
            outcomes.push(outcome);
        }
        self.shared.publish(&mut state);
        Ok(outcomes)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, typ::StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), typ::StorageError> {
        let bytes = snapshot.into_inner();
        let mut installed = decode_snapshot(&bytes).map_err(|e| {
            typ::StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                AnyError::new(&e),
            ))
        })?;
        self.save_snapshot(meta, &bytes)
            .map_err(|e| storage_error(ErrorSubject::StateMachine, ErrorVerb::Write, &e))?;
        let mut state = self.shared.lock();
        installed.manifest();
        *state = installed;
        *self
            .shared
            .last_applied
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = meta.last_log_id;
        *self
            .shared
            .membership
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = meta.last_membership.clone();
        self.shared.publish(&mut state);
        tracing::info!(bytes = bytes.len(), last = ?meta.last_log_id, "snapshot installed");
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, typ::StorageError> {
        let read_error = |e| storage_error(ErrorSubject::StateMachine, ErrorVerb::Read, &e);
        let meta: Option<SnapshotMeta<NodeId, Node>> =
            read_value(&self.data.db, SNAPSHOT, "meta").map_err(read_error)?;
        let Some(meta) = meta else {
            return Ok(None);
        };
        let bytes = read_raw(&self.data.db, SNAPSHOT, "data")
            .map_err(read_error)?
            .unwrap_or_default();
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        }))
    }
}
