//! Quiver's own log store with a tap on votes: every vote the node saves is
//! reported to the [`History`] as soon as the store has it on disk, and
//! before openraft acts on it (openraft saves a vote before it answers a
//! vote request, and a new leader saves its committed vote before it
//! replicates anything). Everything else goes to the store unchanged.

use std::{fmt::Debug, ops::RangeBounds, sync::Arc};

use openraft::{
    LogId, LogState, RaftLogReader, Vote,
    storage::{LogFlushed, RaftLogStorage},
};
use quiver_control_plane::raft::{NodeId, TypeConfig, log_store::LogStore, typ};

use super::history::History;

/// A node's [`LogStore`], reporting its votes.
#[derive(Clone)]
pub struct VoteTap {
    store: LogStore,
    node: NodeId,
    history: Arc<History>,
}

impl VoteTap {
    /// Taps `store`, the store of `node`.
    pub fn new(store: LogStore, node: NodeId, history: Arc<History>) -> VoteTap {
        VoteTap {
            store,
            node,
            history,
        }
    }
}

impl RaftLogReader<TypeConfig> for VoteTap {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<typ::Entry>, typ::StorageError> {
        self.store.try_get_log_entries(range).await
    }
}

impl RaftLogStorage<TypeConfig> for VoteTap {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, typ::StorageError> {
        self.store.get_log_state().await
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.store.get_log_reader().await
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), typ::StorageError> {
        self.store.save_vote(vote).await?;
        self.history.vote_saved(self.node, *vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, typ::StorageError> {
        self.store.read_vote().await
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), typ::StorageError> {
        self.store.save_committed(committed).await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, typ::StorageError> {
        self.store.read_committed().await
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
        self.store.append(entries, callback).await
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), typ::StorageError> {
        self.store.truncate(log_id).await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), typ::StorageError> {
        self.store.purge(log_id).await
    }
}
