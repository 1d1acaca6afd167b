//! One control-plane node: its data directory, its Raft instance, its gRPC
//! listener (Raft between nodes, `ControlPlane` for operators, edges and
//! executors), the fleet registry, and discovery while it leads.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use openraft::{ChangeMembers, Config, ServerState, SnapshotPolicy, error::RaftError};
use quiver_proto::{Manifest, manifest::ServerEntry};
use quiver_upstream::{UpstreamConfig, UpstreamSet};
use rand::RngExt as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{
    admin::{AdminRequest, FleetMember},
    command::{Command, Envelope, Outcome},
    discovery::{Discovery, DiscoverySink},
    fleet::FleetRegistry,
    raft::{
        Node, NodeId, Raft,
        log_store::{DataDir, LogStore},
        network::{ClusterTls, GrpcNetwork, TlsMaterial},
        state_machine::{SharedState, StateMachine},
        typ,
    },
    state::ControlState,
    tenant::hash_key,
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

/// A running control-plane node.
pub struct ControlPlaneNode {
    id: NodeId,
    addr: String,
    raft: Raft,
    shared: Arc<SharedState>,
    fleet: FleetRegistry,
    tls: Option<TlsMaterial>,
    discovery: Arc<Discovery>,
    sink: Arc<RaftSink>,
    shutdown: CancellationToken,
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
        let sink = Arc::new(RaftSink {
            raft: raft.clone(),
            in_flight: Arc::new(tokio::sync::watch::channel(0).0),
            batch: Arc::default(),
        });
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
        let mut rx = self.sink.in_flight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
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

    fn leader(&self) -> Option<(NodeId, String)> {
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

    fn not_leader(&self) -> AdminError {
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
            Outcome::Refused { code, message } => Err(AdminError::Refused { code, message }),
        }
    }

    fn write_error(&self, e: RaftError<NodeId, typ::ClientWriteError>) -> AdminError {
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

    /// Serves one operator request.
    pub async fn admin(&self, request: AdminRequest) -> Result<Value, AdminError> {
        match request {
            AdminRequest::ClusterInit => match self.bootstrap().await {
                Ok(true) => Ok(json!({"initialized": true, "node": self.id})),
                Ok(false) => Err(AdminError::Refused {
                    code: "already_exists".into(),
                    message: format!("node {} already belongs to a cluster", self.id),
                }),
                Err(e) => Err(AdminError::Unavailable(e.to_string())),
            },
            AdminRequest::ClusterStatus => self.cluster_status().await,
            AdminRequest::AddLearner { node_id, addr } => {
                if addr.parse::<SocketAddr>().is_err() && !addr.contains(':') {
                    return Err(AdminError::Invalid(format!(
                        "`{addr}` is not a host:port address"
                    )));
                }
                let r = self
                    .raft
                    .add_learner(node_id, Node::new(addr), true)
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"added": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::Promote { node_id } => {
                self.ensure_member(node_id)?;
                let r = self
                    .raft
                    .change_membership(
                        ChangeMembers::AddVoterIds(BTreeSet::from([node_id])),
                        false,
                    )
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"promoted": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::Remove { node_id } => {
                self.ensure_member(node_id)?;
                let voters: BTreeSet<NodeId> = self.membership().voter_ids().collect();
                if voters.contains(&node_id) {
                    self.raft
                        .change_membership(
                            ChangeMembers::RemoveVoters(BTreeSet::from([node_id])),
                            false,
                        )
                        .await
                        .map_err(|e| self.write_error(e))?;
                }
                let r = self
                    .raft
                    .change_membership(
                        ChangeMembers::RemoveNodes(BTreeSet::from([node_id])),
                        false,
                    )
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"removed": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::TransferLeader { node_id } => self.transfer_leader(node_id).await,
            AdminRequest::SetElection { enabled } => {
                self.raft.runtime_config().elect(enabled);
                Ok(json!({"node": self.id, "elect": enabled}))
            }
            AdminRequest::Fleet => Ok(serde_json::to_value(self.fleet.members()).unwrap_or_default()),
            AdminRequest::Verify => self.verify().await,
            AdminRequest::UpstreamAdd {
                upstream,
                quarantine,
                replace,
            } => {
                self.write(
                    "ctl",
                    Command::PutUpstream {
                        upstream,
                        quarantine,
                        replace,
                    },
                )
                .await
            }
            AdminRequest::UpstreamList => {
                let statuses = self.discovery.statuses();
                self.read(|s| {
                    let list: Vec<Value> = s
                        .upstreams
                        .values()
                        .map(|u| upstream_summary(s, &u.config, u.quarantine, &statuses))
                        .collect();
                    Value::Array(list)
                })
                .await
            }
            AdminRequest::UpstreamShow { id } => {
                let statuses = self.discovery.statuses();
                self.read(|s| {
                    let record = s.upstreams.get(&id)?;
                    let mut value = upstream_summary(s, &record.config, record.quarantine, &statuses);
                    value["config"] = serde_json::to_value(&record.config).unwrap_or_default();
                    value["tools"] = s
                        .catalogue
                        .get(&id)
                        .map(|e| e.tools.iter().map(|t| json!({"name": t.name, "description": t.description})).collect())
                        .unwrap_or(Value::Array(vec![]));
                    value["pending"] = serde_json::to_value(s.pending.get(&id)).unwrap_or_default();
                    Some(value)
                })
                .await?
                .ok_or_else(|| self.unknown_upstream(&id))
            }
            AdminRequest::UpstreamRemove { id } => {
                self.write("ctl", Command::RemoveUpstream { id }).await
            }
            AdminRequest::UpstreamRefresh { id } => {
                // Discovery runs on the leader: check leadership first.
                self.read(|_| ()).await?;
                if let Some(id) = &id
                    && !self.shared.lock().upstreams.contains_key(id)
                {
                    return Err(self.unknown_upstream(id));
                }
                self.discovery
                    .refresh(id.as_deref())
                    .map_err(|e| AdminError::Invalid(e.to_string()))?;
                Ok(json!({"refreshing": id.map_or(Value::String("all".into()), Value::String)}))
            }
            AdminRequest::UpstreamDrift { id } => {
                self.read(|s| {
                    let events: Vec<&crate::state::Event> = s
                        .events
                        .iter()
                        .filter(|e| e.kind == "drift")
                        .filter(|e| id.is_none() || e.upstream == id)
                        .collect();
                    let pending: BTreeMap<&String, Vec<&String>> = s
                        .pending
                        .iter()
                        .filter(|(u, _)| id.as_ref().is_none_or(|i| i == *u))
                        .map(|(u, p)| (u, p.keys().collect()))
                        .collect();
                    json!({"events": events, "pending": pending})
                })
                .await
            }
            AdminRequest::UpstreamApprove { id, tool } => {
                self.write(
                    "ctl",
                    Command::ApproveDrift {
                        upstream: id,
                        tool,
                    },
                )
                .await
            }
            AdminRequest::TenantCreate { id, patch } => {
                self.write("ctl", Command::CreateTenant { id, patch }).await
            }
            AdminRequest::TenantList => {
                self.read(|s| {
                    Value::Array(s.tenants.values().map(tenant_public).collect())
                })
                .await
            }
            AdminRequest::TenantShow { id } => self
                .read(|s| s.tenants.get(&id).map(tenant_public))
                .await?
                .ok_or_else(|| AdminError::Refused {
                    code: "not_found".into(),
                    message: format!("unknown tenant `{id}`; `quiver ctl tenant list` shows the tenants"),
                }),
            AdminRequest::TenantUpdate { id, patch } => {
                self.write("ctl", Command::UpdateTenant { id, patch }).await
            }
            AdminRequest::TenantDelete { id } => {
                self.write("ctl", Command::DeleteTenant { id }).await
            }
            AdminRequest::KeyIssue { tenant } => {
                let (key_id, key) = new_api_key();
                let sha256 = hash_key(&key);
                self.write(
                    "ctl",
                    Command::IssueKey {
                        tenant: tenant.clone(),
                        key_id: key_id.clone(),
                        sha256,
                    },
                )
                .await?;
                Ok(json!({"tenant": tenant, "key_id": key_id, "key": key}))
            }
            AdminRequest::KeyRevoke { tenant, key_id } => {
                self.write("ctl", Command::RevokeKey { tenant, key_id }).await
            }
            AdminRequest::ManifestShow { version } => {
                self.read(|s| {
                    let current = s.manifest();
                    match version {
                        None => Some(manifest_summary(&current)),
                        Some(v) if v == current.version => Some(manifest_summary(&current)),
                        Some(v) => s
                            .history
                            .iter()
                            .find(|r| r.version == v)
                            .map(|r| serde_json::to_value(r).unwrap_or_default()),
                    }
                })
                .await?
                .ok_or_else(|| AdminError::Refused {
                    code: "not_found".into(),
                    message: "that manifest version is not kept; `quiver ctl manifest show` gives the current one".into(),
                })
            }
            AdminRequest::ManifestDiff { from, to } => {
                self.read(|s| {
                    let find = |v: u64| s.history.iter().find(|r| r.version == v).cloned();
                    let oldest = s.history.front().map_or(0, |r| r.version);
                    let (Some(a), Some(b)) = (find(from), find(to)) else {
                        return Err(AdminError::Refused {
                            code: "not_found".into(),
                            message: format!(
                                "versions {from} and {to} must both be kept; kept versions are {oldest}..={}",
                                s.manifest_version()
                            ),
                        });
                    };
                    Ok(manifest_diff(&a, &b))
                })
                .await?
            }
            AdminRequest::ManifestHash => {
                self.read(|s| {
                    let m = s.manifest();
                    json!({"version": m.version, "stub_hash": m.stub_hash.to_hex(), "tools": m.tools.len()})
                })
                .await
            }
        }
    }

    fn membership(&self) -> openraft::Membership<NodeId, Node> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    fn ensure_member(&self, node_id: NodeId) -> Result<(), AdminError> {
        if self.membership().get_node(&node_id).is_none() {
            let known: Vec<String> = self
                .membership()
                .nodes()
                .map(|(id, _)| id.to_string())
                .collect();
            return Err(AdminError::Refused {
                code: "not_found".into(),
                message: format!(
                    "node {node_id} is not a member (members: {}); add it first with `quiver ctl cluster add-learner --node-id {node_id} --addr HOST:PORT`",
                    known.join(", ")
                ),
            });
        }
        Ok(())
    }

    fn unknown_upstream(&self, id: &str) -> AdminError {
        let known: Vec<String> = self.shared.lock().upstreams.keys().cloned().collect();
        AdminError::Refused {
            code: "not_found".into(),
            message: format!(
                "unknown upstream `{id}`; registered: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        }
    }

    async fn cluster_status(&self) -> Result<Value, AdminError> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.current_leader != Some(self.id) {
            return Err(self.not_leader());
        }
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let replication = metrics.replication.clone().unwrap_or_default();
        let members: Vec<Value> = membership
            .nodes()
            .map(|(id, node)| {
                let role = if *id == self.id {
                    "leader"
                } else if voters.contains(id) {
                    "follower"
                } else {
                    "learner"
                };
                let matched = if *id == self.id {
                    metrics.last_log_index
                } else {
                    replication.get(id).and_then(|m| m.map(|l| l.index))
                };
                json!({"id": id, "addr": node.addr, "role": role, "matched_index": matched})
            })
            .collect();
        let (version, hash) = {
            let m = self.shared.manifest();
            (m.version, m.stub_hash.to_hex())
        };
        Ok(json!({
            "leader": self.id,
            "term": metrics.current_term,
            "last_log_index": metrics.last_log_index,
            "last_applied": metrics.last_applied.map(|l| l.index),
            "snapshot": metrics.snapshot.map(|l| l.index),
            "purged": metrics.purged.map(|l| l.index),
            "members": members,
            "manifest_version": version,
            "stub_hash": hash,
        }))
    }

    /// openraft 0.9 has no leader transfer, so the leader arranges one: every
    /// other voter stops standing for election, the leader stops its
    /// heartbeats, and the target's own election timer makes it leader once
    /// the old leader's lease runs out. Everything is switched back on after.
    async fn transfer_leader(&self, node_id: NodeId) -> Result<Value, AdminError> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.current_leader != Some(self.id) {
            return Err(self.not_leader());
        }
        let membership = self.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        if !voters.contains(&node_id) {
            return Err(AdminError::Invalid(format!(
                "node {node_id} is not a voter; promote it first"
            )));
        }
        if node_id == self.id {
            return Ok(json!({"leader": self.id, "changed": false}));
        }
        let others: Vec<String> = membership
            .nodes()
            .filter(|(id, _)| **id != node_id && **id != self.id && voters.contains(id))
            .map(|(_, n)| n.addr.clone())
            .collect();
        let set_election = async |enabled: bool| {
            for addr in &others {
                if let Ok(mut client) =
                    crate::client::AdminClient::connect_one(addr, self.tls.as_ref())
                {
                    let _ = client
                        .call_here(&AdminRequest::SetElection { enabled })
                        .await;
                }
            }
        };
        set_election(false).await;
        let config = self.raft.runtime_config();
        config.elect(false);
        config.heartbeat(false);
        let mut watch = self.raft.metrics();
        let moved = tokio::time::timeout(
            Duration::from_millis(self.raft.config().election_timeout_max * 10),
            watch.wait_for(|m| m.current_leader == Some(node_id)),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        config.heartbeat(true);
        config.elect(true);
        set_election(true).await;
        if moved {
            Ok(json!({"leader": node_id, "changed": true}))
        } else {
            Err(AdminError::Unavailable(format!(
                "node {node_id} did not take over in time; node {} stays leader (is node {node_id} up and caught up?)",
                self.id
            )))
        }
    }

    async fn verify(&self) -> Result<Value, AdminError> {
        let (canonical_version, canonical_hash) = self
            .read(|s| {
                let m = s.manifest();
                (m.version, m.stub_hash.to_hex())
            })
            .await?;
        let mut members: Vec<FleetMember> = self.fleet.members();
        // Reports may have gone to any control-plane node: ask the others too.
        for (id, node) in self.membership().nodes() {
            if *id == self.id {
                continue;
            }
            match crate::client::AdminClient::connect_one(&node.addr, self.tls.as_ref()) {
                Ok(mut client) => match client.call_here(&AdminRequest::Fleet).await {
                    Ok(value) => {
                        if let Ok(more) = serde_json::from_value::<Vec<FleetMember>>(value) {
                            members.extend(more);
                        }
                    }
                    Err(e) => tracing::warn!(node = id, "fleet of node {id}: {e}"),
                },
                Err(e) => tracing::warn!(node = id, "fleet of node {id}: {e}"),
            }
        }
        // One line per reporting node: the freshest report wins.
        let mut latest: BTreeMap<String, FleetMember> = BTreeMap::new();
        for m in members {
            match latest.get(&m.node) {
                Some(seen) if seen.age_ms <= m.age_ms => {}
                _ => {
                    latest.insert(m.node.clone(), m);
                }
            }
        }
        let history: BTreeMap<u64, String> = self
            .shared
            .lock()
            .history
            .iter()
            .map(|r| (r.version, r.stub_hash.clone()))
            .collect();
        let mut disagree = Vec::new();
        let nodes: Vec<Value> = latest
            .values()
            .map(|m| {
                let expected = history.get(&m.manifest_version);
                let verdict =
                    if m.manifest_version == canonical_version && m.stub_hash == canonical_hash {
                        "ok"
                    } else if expected.is_some_and(|h| *h == m.stub_hash) {
                        "behind"
                    } else {
                        "mismatch"
                    };
                if verdict != "ok" {
                    disagree.push(m.node.clone());
                }
                json!({
                    "node": m.node, "role": m.role, "manifest_version": m.manifest_version,
                    "stub_hash": m.stub_hash, "verdict": verdict, "age_ms": m.age_ms,
                    "reported_to": m.reported_to,
                })
            })
            .collect();
        Ok(json!({
            "manifest_version": canonical_version,
            "stub_hash": canonical_hash,
            "ok": disagree.is_empty(),
            "disagree": disagree,
            "nodes": nodes,
        }))
    }
}

/// A new API key and its id: `qk_<id>_<secret>`; the id is public, the secret is
/// 32 random bytes.
fn new_api_key() -> (String, String) {
    let mut rng = rand::rng();
    let id: String = (0..8)
        .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.random_range(0..36)]))
        .collect();
    let secret: [u8; 32] = rng.random();
    (id.clone(), format!("qk_{id}_{}", hex::encode(secret)))
}

fn tenant_public(t: &crate::tenant::Tenant) -> Value {
    let mut value = serde_json::to_value(t).unwrap_or_default();
    // Key ids and dates only: hashes stay inside the cluster.
    value["keys"] = t
        .keys
        .iter()
        .map(|(id, k)| json!({"key_id": id, "created_ms": k.created_ms}))
        .collect();
    value
}

fn upstream_summary(
    s: &ControlState,
    config: &UpstreamConfig,
    quarantine: bool,
    statuses: &BTreeMap<String, String>,
) -> Value {
    let transport = match &config.transport {
        quiver_upstream::Transport::Stdio { command, .. } => format!("stdio: {command}"),
        quiver_upstream::Transport::Http { url, .. } => format!("http: {url}"),
    };
    json!({
        "id": config.id,
        "transport": transport,
        "tools": s.catalogue.get(&config.id).map_or(0, |e| e.tools.len()),
        "pending": s.pending.get(&config.id).map_or(0, BTreeMap::len),
        "quarantine": quarantine,
        "tags": config.tags,
        "group": config.group,
        "state": statuses.get(&config.id).cloned().unwrap_or_else(|| "unknown".into()),
    })
}

fn manifest_summary(m: &Manifest) -> Value {
    json!({
        "version": m.version,
        "stub_hash": m.stub_hash.to_hex(),
        "servers": m.servers.iter().map(|s| json!({
            "id": s.id,
            "tools": m.tools.iter().filter(|t| t.id.server == s.id).count(),
            "stub_hash": s.stub_hash.to_hex(),
        })).collect::<Vec<_>>(),
        "tools": m.tools.len(),
    })
}

fn manifest_diff(a: &crate::state::ManifestRecord, b: &crate::state::ManifestRecord) -> Value {
    let mut added = Vec::new();
    let mut removed = Vec::new();
    let mut changed = Vec::new();
    let servers: BTreeSet<&String> = a.tools.keys().chain(b.tools.keys()).collect();
    let empty = BTreeMap::new();
    for server in servers {
        let old = a.tools.get(server).unwrap_or(&empty);
        let new = b.tools.get(server).unwrap_or(&empty);
        for (tool, hash) in new {
            match old.get(tool) {
                None => added.push(format!("{server}/{tool}")),
                Some(h) if h != hash => changed.push(format!("{server}/{tool}")),
                Some(_) => {}
            }
        }
        for tool in old.keys().filter(|t| !new.contains_key(*t)) {
            removed.push(format!("{server}/{tool}"));
        }
    }
    json!({
        "from": a.version, "to": b.version,
        "from_hash": a.stub_hash, "to_hash": b.stub_hash,
        "added": added, "removed": removed, "changed": changed,
    })
}

/// Discovery's results become replicated commands; results arriving within
/// 25 ms of each other (70 upstreams coming up) go in one entry.
struct RaftSink {
    raft: Raft,
    in_flight: Arc<tokio::sync::watch::Sender<usize>>,
    batch: Arc<std::sync::Mutex<Vec<ServerEntry>>>,
}

impl DiscoverySink for RaftSink {
    fn discovered(&self, entry: ServerEntry) {
        let first = {
            let mut batch = self.batch.lock().unwrap_or_else(|p| p.into_inner());
            let before = batch.len();
            batch.retain(|e| e.id != entry.id);
            if batch.len() == before {
                self.in_flight.send_modify(|n| *n += 1);
            }
            batch.push(entry);
            batch.len() == 1
        };
        if !first {
            return;
        }
        let raft = self.raft.clone();
        let in_flight = self.in_flight.clone();
        let batch = self.batch.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(25)).await;
            let entries = std::mem::take(&mut *batch.lock().unwrap_or_else(|p| p.into_inner()));
            let count = entries.len();
            if let Err(e) = raft
                .client_write(Envelope::now(
                    "discovery",
                    Command::RecordDiscovery { entries },
                ))
                .await
            {
                tracing::warn!("recording discovery of {count} upstreams failed: {e}");
            }
            in_flight.send_modify(|n| *n = n.saturating_sub(count));
        });
    }
}

/// Runs discovery while this node leads, over the registered upstreams; stops
/// (and drops the connections) when it no longer leads.
async fn lead_discovery(node: Arc<ControlPlaneNode>) {
    let mut metrics = node.raft.metrics();
    let mut applied = node.shared.subscribe_applied();
    let mut registry: Option<Vec<UpstreamConfig>> = None;
    loop {
        let leading = {
            let m = metrics.borrow_and_update();
            m.state == ServerState::Leader && m.current_leader == Some(node.id)
        };
        let wanted: Vec<UpstreamConfig> = if leading {
            node.shared
                .lock()
                .upstreams
                .values()
                .map(|u| u.config.clone())
                .collect()
        } else {
            Vec::new()
        };
        if registry.as_ref() != Some(&wanted) {
            node.discovery.sync(wanted.clone()).await;
            registry = Some(wanted);
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { break },
            changed = applied.changed() => if changed.is_err() { break },
            () = node.shutdown.cancelled() => break,
        }
    }
    node.discovery.sync(Vec::new()).await;
}
