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
    log_store::{DataDir, SNAPSHOT, read_raw, read_value},
    typ,
};
use crate::{command::Outcome, state::ControlState};

/// Snapshot payload format written by this build.
const SNAPSHOT_FORMAT: u32 = 1;

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

    /// Sees every manifest version this node applies.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Manifest>> {
        self.manifests.subscribe()
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

fn sm_error(verb: ErrorVerb, e: impl ToString) -> typ::StorageError {
    StorageIOError::new(
        ErrorSubject::StateMachine,
        verb,
        AnyError::error(e.to_string()),
    )
    .into()
}

impl StateMachine {
    /// Loads the last snapshot of `data`, if any.
    pub fn open(data: DataDir) -> Result<StateMachine, String> {
        let meta: Option<SnapshotMeta<NodeId, Node>> = read_value(&data.db, SNAPSHOT, "meta")
            .map_err(|e| format!("{}: snapshot metadata: {e}", data.path.display()))?;
        let (mut state, last_applied, membership) = match meta {
            Some(meta) => {
                let bytes = read_raw(&data.db, SNAPSHOT, "data")
                    .map_err(|e| format!("{}: snapshot: {e}", data.path.display()))?
                    .ok_or_else(|| {
                        format!(
                            "{}: snapshot metadata without its data",
                            data.path.display()
                        )
                    })?;
                let state = decode_snapshot(&bytes)
                    .map_err(|e| format!("{}: snapshot: {e}", data.path.display()))?;
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

    fn save_snapshot(&self, meta: &SnapshotMeta<NodeId, Node>, bytes: &[u8]) -> Result<(), String> {
        let meta = serde_json::to_vec(meta).map_err(|e| e.to_string())?;
        let txn = self.data.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut table = txn.open_table(SNAPSHOT).map_err(|e| e.to_string())?;
            table.insert("data", bytes).map_err(|e| e.to_string())?;
            table
                .insert("meta", meta.as_slice())
                .map_err(|e| e.to_string())?;
        }
        txn.commit().map_err(|e| e.to_string())
    }
}

fn decode_snapshot(bytes: &[u8]) -> Result<ControlState, String> {
    let payload: SnapshotPayload =
        serde_json::from_slice(bytes).map_err(|e| format!("does not decode: {e}"))?;
    if payload.format > SNAPSHOT_FORMAT {
        return Err(format!(
            "format {} is newer than this build reads ({SNAPSHOT_FORMAT})",
            payload.format
        ));
    }
    Ok(payload.state)
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, typ::StorageError> {
        // Serialise under the state lock so the payload and its log id agree.
        let (bytes, last_applied, membership) = {
            let state = self.shared.lock();
            let payload = serde_json::to_vec(&SnapshotPayload {
                format: SNAPSHOT_FORMAT,
                state: state.clone(),
            })
            .map_err(|e| sm_error(ErrorVerb::Read, e))?;
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
            .map_err(|e| sm_error(ErrorVerb::Write, e))?;
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
                    result: serde_json::Value::Null,
                    manifest_version: state.manifest_version(),
                },
                EntryPayload::Normal(command) => {
                    let outcome = state.apply(command);
                    if let Outcome::Refused { code, message } = &outcome {
                        tracing::debug!(command = command.command.name(), code, message, "refused");
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
                        result: serde_json::Value::Null,
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
                AnyError::error(e),
            ))
        })?;
        self.save_snapshot(meta, &bytes)
            .map_err(|e| sm_error(ErrorVerb::Write, e))?;
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
        let meta: Option<SnapshotMeta<NodeId, Node>> = read_value(&self.data.db, SNAPSHOT, "meta")
            .map_err(|e| sm_error(ErrorVerb::Read, e))?;
        let Some(meta) = meta else {
            return Ok(None);
        };
        let bytes = read_raw(&self.data.db, SNAPSHOT, "data")
            .map_err(|e| sm_error(ErrorVerb::Read, e))?
            .unwrap_or_default();
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        }))
    }
}
