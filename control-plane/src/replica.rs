//! This member's hold on the replicated state: it proposes commands through
//! Raft (answering once they are committed and applied), reads linearizably,
//! and says who leads when it does not. It knows nothing of gRPC or of the
//! operator requests built on it (`operator.rs`).

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use openraft::error::{InitializeError, RaftError};

use crate::{
    admin::{AdminError, Committed},
    command::{Command, Envelope},
    node_metrics::timed_commit,
    outcome::Outcome,
    raft::{Node, NodeId, Raft, state_machine::SharedState, typ},
    state::ControlState,
};

/// How long a write or a consistent read waits for a majority of the voters.
pub const QUORUM_WAIT: Duration = Duration::from_secs(5);

/// TEST ONLY — never set it on a real cluster. When `1` at node start, a node
/// that believes it leads answers reads from its own state without confirming
/// with a quorum that it still leads: the broken read path that
/// `tests/control_plane_linearizability.rs` must catch (a deposed leader then
/// serves stale reads).
pub const UNSAFE_STALE_READS_ENV: &str = "QUIVER_TEST_UNSAFE_STALE_READS";

/// Why a node could not be made a one-node cluster.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// Raft stopped (shutting down, or a storage failure).
    #[error("Raft is not running")]
    Stopped(#[source] openraft::error::Fatal<NodeId>),
    /// Raft refused to initialise.
    #[error("cannot initialise the cluster")]
    Initialize(#[source] RaftError<NodeId, InitializeError<NodeId, Node>>),
}

/// One member's Raft handle and applied state.
#[derive(Clone)]
pub struct Replica {
    id: NodeId,
    addr: String,
    raft: Raft,
    shared: Arc<SharedState>,
    /// [`UNSAFE_STALE_READS_ENV`], read once when the node starts.
    unsafe_stale_reads: bool,
}

impl Replica {
    /// Member `id`, reachable by the others at `addr`.
    pub fn new(id: NodeId, addr: String, raft: Raft, shared: Arc<SharedState>) -> Replica {
        let unsafe_stale_reads = std::env::var(UNSAFE_STALE_READS_ENV).is_ok_and(|v| v == "1");
        if unsafe_stale_reads {
            tracing::error!(
                node = id,
                "{UNSAFE_STALE_READS_ENV}=1: THIS NODE SKIPS THE LINEARIZABLE-READ BARRIER AND MAY SERVE STALE READS (a test-only switch; unset it)"
            );
        }
        Replica {
            id,
            addr,
            raft,
            shared,
            unsafe_stale_reads,
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The address other nodes use.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The Raft handle.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// The replicated state as applied here.
    pub fn shared(&self) -> &Arc<SharedState> {
        &self.shared
    }

    /// Initialises a fresh node as a one-node cluster; a node that already has
    /// state is left as it is (`false`).
    pub async fn bootstrap(&self) -> Result<bool, BootstrapError> {
        if self
            .raft
            .is_initialized()
            .await
            .map_err(BootstrapError::Stopped)?
        {
            tracing::info!("data directory already holds a cluster; --bootstrap ignored");
            return Ok(false);
        }
        let members = BTreeMap::from([(self.id, Node::new(self.addr.clone()))]);
        self.raft
            .initialize(members)
            .await
            .map_err(BootstrapError::Initialize)?;
        Ok(true)
    }

    /// The leader as far as this node knows, with its address.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        let metrics = self.raft.metrics().borrow().clone();
        let id = metrics.current_leader?;
        let addr = metrics
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
            .unwrap_or_default();
        Some((id, addr))
    }

    /// "Ask the leader instead", naming it when known.
    pub fn not_leader(&self) -> AdminError {
        AdminError::NotLeader {
            this: self.id,
            leader: self.leader().filter(|(id, _)| *id != self.id),
        }
    }

    /// The current membership config.
    pub fn membership(&self) -> openraft::Membership<NodeId, Node> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    /// Proposes a command; resolves once it is committed and applied.
    pub async fn write(&self, actor: &str, command: Command) -> Result<Committed, AdminError> {
        let write = timed_commit(self.raft.client_write(Envelope::now(actor, command)));
        let response = tokio::time::timeout(QUORUM_WAIT, write)
            .await
            .map_err(|_| {
                AdminError::NoQuorum(format!(
                    "the write was not committed within {} s: fewer than a majority of the voters answer (quorum lost?); it may still be applied once they are back, so read before retrying",
                    QUORUM_WAIT.as_secs()
                ))
            })?
            .map_err(|e| self.write_error(e))?;
        match response.data {
            Outcome::Applied {
                result,
                manifest_version,
            } => Ok(Committed {
                result,
                manifest_version,
                log_index: response.log_id.index,
            }),
            Outcome::Refused { code, message } => Err(AdminError::Refused { code, message }),
        }
    }

    /// A failed write or membership change as an operator error.
    pub fn write_error(&self, e: RaftError<NodeId, typ::ClientWriteError>) -> AdminError {
        if e.forward_to_leader::<Node>().is_some() {
            return self.not_leader();
        }
        match e {
            RaftError::APIError(typ::ClientWriteError::ChangeMembershipError(e)) => {
                AdminError::Invalid(e.to_string())
            }
            other => AdminError::Unavailable(format!("the write was not committed: {other}")),
        }
    }

    /// Reads the state after confirming leadership with a quorum: the answer
    /// includes every write acknowledged before the read began (unless the
    /// test-only [`UNSAFE_STALE_READS_ENV`] switch is on).
    pub async fn read<T>(&self, f: impl FnOnce(&mut ControlState) -> T) -> Result<T, AdminError> {
        if self.unsafe_stale_reads {
            // The broken path under test: trust this node's own belief that it leads.
            if self.raft.metrics().borrow().current_leader != Some(self.id) {
                return Err(self.not_leader());
            }
            return Ok(f(&mut self.shared.lock()));
        }
        let confirm = tokio::time::timeout(QUORUM_WAIT, self.raft.ensure_linearizable())
            .await
            .map_err(|_| {
                AdminError::NoQuorum(format!(
                    "cannot confirm within {} s that this node still leads: fewer than a majority of the voters answer (quorum lost?)",
                    QUORUM_WAIT.as_secs()
                ))
            })?;
        confirm.map_err(|e| {
            if e.forward_to_leader::<Node>().is_some() {
                self.not_leader()
            } else {
                AdminError::Unavailable(format!(
                    "cannot confirm a quorum for a consistent read ({e}); are a majority of nodes up?"
                ))
            }
        })?;
        let mut state = self.shared.lock();
        Ok(f(&mut state))
    }
}
