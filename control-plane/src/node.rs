//! One control-plane node: its data directory, its Raft instance, its gRPC
//! listener (Raft between nodes, `ControlPlane` for operators, edges and
//! executors), the fleet registry, and discovery while it leads. Writes and
//! linearizable reads are here; the operator requests built on them are in
//! `operator.rs`, leader discovery in `leader_discovery.rs`.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use openraft::{Config, SnapshotPolicy, error::RaftError};
use quiver_upstream::UpstreamSet;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{
    command::{Command, Envelope, Outcome},
    discovery::Discovery,
    fleet::FleetRegistry,
    leader_discovery::{RaftSink, lead_discovery},
    raft::{
        Node, NodeId, Raft,
        log_store::{DataDir, LogStore},
        network::{ClusterTls, GrpcNetwork, TlsMaterial},
        state_machine::{SharedState, StateMachine},
        typ,
    },
    state::ControlState,
};

/// How long a write or a consistent read waits for a majority of the voters.
pub const QUORUM_WAIT: Duration = Duration::from_secs(5);

/// Raft timing and log compaction.
#[derive(Debug, Clone)]
pub struct RaftTuning {
    /// Leader heartbeat, ms. Default 100.
    pub heartbeat_ms: u64,
    /// Election timeout range, ms. Default 400-800.
    pub election_ms: (u64, u64),
    /// Build a snapshot after this many entries since the last one. Default 1000.
    pub snapshot_every: u64,
    /// Entries kept behind a snapshot for slow followers. Default 200.
    pub keep_behind_snapshot: u64,
}

impl Default for RaftTuning {
    fn default() -> Self {
        RaftTuning {
            heartbeat_ms: 100,
            election_ms: (400, 800),
            snapshot_every: 1000,
            keep_behind_snapshot: 200,
        }
    }
}

/// How to start a node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// This node's id (stable; recorded in its data directory).
    pub node_id: NodeId,
    /// Where to listen for gRPC.
    pub listen: SocketAddr,
    /// The address other nodes and clients use (default: the bound address).
    pub advertise: Option<String>,
    /// Data directory.
    pub data: PathBuf,
    /// Make a fresh data directory a one-node cluster.
    pub bootstrap: bool,
    /// mTLS for every gRPC connection, when set.
    pub tls: Option<ClusterTls>,
    /// Raft timing.
    pub tuning: RaftTuning,
}

/// Why an admin request failed; mapped to gRPC statuses by the service.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// Ask the leader instead.
    #[error("node {this} is not the leader{}", match leader { Some((id, addr)) => format!("; the leader is node {id} at {addr}"), None => "; no leader is elected yet (is a quorum of nodes up?)".to_string() })]
    NotLeader {
        /// This node.
        this: NodeId,
        /// The leader as far as this node knows.
        leader: Option<(NodeId, String)>,
    },
    /// The state machine refused the command.
    #[error("{message}")]
    Refused {
        /// `not_found`, `already_exists`, `invalid`, `unsupported`.
        code: String,
        /// What to do.
        message: String,
    },
    /// The request itself is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The cluster cannot answer now (shutting down, a transport failure).
    #[error("{0}")]
    Unavailable(String),
    /// A majority of the voters did not answer in time.
    #[error("{0}")]
    NoQuorum(String),
}

impl From<Outcome> for AdminError {
    /// A state-machine refusal as an operator error.
    fn from(outcome: Outcome) -> AdminError {
        match outcome {
            Outcome::Refused { code, message } => AdminError::Refused { code, message },
            Outcome::Applied { .. } => {
                AdminError::Invalid("an applied command is not an error".into())
            }
        }
    }
}

/// A running control-plane node.
pub struct ControlPlaneNode {
    pub(crate) id: NodeId,
    addr: String,
    pub(crate) raft: Raft,
    pub(crate) shared: Arc<SharedState>,
    pub(crate) fleet: FleetRegistry,
    pub(crate) tls: Option<TlsMaterial>,
    pub(crate) discovery: Arc<Discovery>,
    sink: Arc<RaftSink>,
    pub(crate) shutdown: CancellationToken,
}

impl ControlPlaneNode {
    /// Opens the data directory, starts Raft and binds the listener; returns the
    /// node and its bound address. The gRPC server runs until `shutdown`.
    pub async fn start(
        config: NodeConfig,
        shutdown: CancellationToken,
    ) -> anyhow::Result<(Arc<ControlPlaneNode>, SocketAddr)> {
        Self::start_with(config, Arc::new(UpstreamSet::default()), shutdown).await
    }

    /// Like [`ControlPlaneNode::start`], with discovery using (and keeping in
    /// step with the registry) an upstream set the caller shares, e.g. with
    /// the in-process executor of `quiver dev`.
    pub async fn start_with(
        config: NodeConfig,
        upstreams: Arc<UpstreamSet>,
        shutdown: CancellationToken,
    ) -> anyhow::Result<(Arc<ControlPlaneNode>, SocketAddr)> {
        let tls = config.tls.as_ref().map(ClusterTls::load).transpose()?;
        let data = DataDir::open(&config.data, config.node_id)?;
        let state_machine = StateMachine::open(data.clone()).map_err(anyhow::Error::msg)?;
        let shared = state_machine.shared();
        let tuning = &config.tuning;
        let raft_config = Config {
            cluster_name: "quiver".into(),
            heartbeat_interval: tuning.heartbeat_ms,
            election_timeout_min: tuning.election_ms.0,
            election_timeout_max: tuning.election_ms.1,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(tuning.snapshot_every),
            max_in_snapshot_log_to_keep: tuning.keep_behind_snapshot,
            install_snapshot_timeout: 10_000,
            ..Config::default()
        }
        .validate()?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("control plane: cannot listen on {}: {e} (another quiver dev or control-plane node? choose another address, or port 0 for a free one)", config.listen))?;
        let bound = listener.local_addr()?;
        let addr = config
            .advertise
            .clone()
            .unwrap_or_else(|| bound.to_string());
        let raft = Raft::new(
            config.node_id,
            Arc::new(raft_config),
            GrpcNetwork::new(tls.clone()),
            LogStore::new(data),
            state_machine,
        )
        .await?;
        let sink = Arc::new(RaftSink::new(raft.clone()));
        let node = Arc::new(ControlPlaneNode {
            id: config.node_id,
            addr: addr.clone(),
            raft: raft.clone(),
            shared: shared.clone(),
            fleet: FleetRegistry::new(config.node_id),
            tls: tls.clone(),
            discovery: Discovery::new(upstreams, sink.clone(), shutdown.clone()),
            sink,
            shutdown: shutdown.clone(),
        });
        crate::service::serve(node.clone(), listener, tls, shutdown.clone());
        if config.bootstrap {
            node.bootstrap().await?;
        }
        tokio::spawn(lead_discovery(node.clone()));
        tracing::info!(node = config.node_id, %addr, data = %config.data.display(), "control-plane node started");
        Ok((node, bound))
    }

    /// Initialises a fresh node as a one-node cluster; a node that already has
    /// state is left as it is.
    pub async fn bootstrap(&self) -> anyhow::Result<bool> {
        if self.raft.is_initialized().await? {
            tracing::info!("data directory already holds a cluster; --bootstrap ignored");
            return Ok(false);
        }
        let members = BTreeMap::from([(self.id, Node::new(self.addr.clone()))]);
        self.raft.initialize(members).await?;
        Ok(true)
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

    /// The fleet registry.
    pub fn fleet(&self) -> &FleetRegistry {
        &self.fleet
    }

    /// TLS material, when the cluster uses mTLS.
    pub fn tls(&self) -> Option<&TlsMaterial> {
        self.tls.as_ref()
    }

    /// Resolves once every registered upstream has been listed (or failed) once
    /// by this node's discovery (it must be leading).
    pub async fn first_discovery(&self) {
        let ids: Vec<String> = self.shared.lock().upstreams.keys().cloned().collect();
        self.discovery.first_round_of(&ids).await;
    }

    /// Resolves when no discovery result is waiting to be committed.
    pub async fn discoveries_committed(&self) {
        self.sink.committed().await;
    }

    /// Waits until this node knows a leader (or `timeout` passes).
    pub async fn wait_for_leader(&self, timeout: Duration) -> Option<NodeId> {
        let mut metrics = self.raft.metrics();
        let wait = metrics.wait_for(|m| m.current_leader.is_some());
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(m)) => m.current_leader,
            _ => None,
        }
    }

    /// Stops Raft (the gRPC server stops with the shutdown token).
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let _ = self.raft.shutdown().await;
    }

    pub(crate) fn leader(&self) -> Option<(NodeId, String)> {
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

    pub(crate) fn not_leader(&self) -> AdminError {
        AdminError::NotLeader {
            this: self.id,
            leader: self.leader().filter(|(id, _)| *id != self.id),
        }
    }

    /// Proposes a command; resolves once it is committed and applied.
    pub async fn write(&self, actor: &str, command: Command) -> Result<Value, AdminError> {
        let write = self.raft.client_write(Envelope::now(actor, command));
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
            } => Ok(
                json!({"result": result, "manifest_version": manifest_version, "log_index": response.log_id.index}),
            ),
            refused @ Outcome::Refused { .. } => Err(refused.into()),
        }
    }

    pub(crate) fn write_error(&self, e: RaftError<NodeId, typ::ClientWriteError>) -> AdminError {
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
    /// includes every write acknowledged before the read began.
    pub async fn read<T>(&self, f: impl FnOnce(&mut ControlState) -> T) -> Result<T, AdminError> {
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
