//! One control-plane node, wired together: its data directory, its Raft
//! instance, its gRPC listener (Raft between nodes, `ControlPlane` for
//! operators, edges and executors), the fleet registry, and discovery while it
//! leads. The parts get narrow handles (`replica.rs`, `operator.rs`,
//! `service.rs`, `leader_discovery.rs`); none of them knows this type.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use openraft::{Config, SnapshotPolicy};
use quiver_upstream::UpstreamSet;
use tokio_util::sync::CancellationToken;

use crate::{
    admin::{AdminAnswer, AdminError, AdminFuture, AdminRequest, AdminTransport, Committed},
    cluster_key::ClusterKey,
    command::Command,
    discovery::Discovery,
    fleet::FleetRegistry,
    leader_discovery::{LeaderDiscovery, RaftSink},
    node_metrics,
    operator::Operator,
    raft::{
        NodeId, Raft,
        log_store::{DataDir, LogStore, OpenError},
        network::{ClusterTls, GrpcNetwork, TlsFileError},
        state_machine::{SharedState, SnapshotError, StateMachine},
    },
    replica::{BootstrapError, Replica},
    service::{self, ControlPlaneService},
};

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
    /// Seals tenant secrets (as leader) and opens them for discovery of
    /// per-tenant upstreams; without it `secret set` is refused.
    pub cluster_key: Option<Arc<ClusterKey>>,
    /// The most API keys one tenant may hold (`[control_plane]
    /// max_keys_per_tenant`); [`DEFAULT_MAX_KEYS_PER_TENANT`] by default.
    pub max_keys_per_tenant: u32,
    /// Seed the (empty) data directory from this backup, checked already
    /// (`--restore`): the node starts as a one-node cluster holding it.
    pub restore: Option<Arc<crate::backup::Backup>>,
    /// Write backups while this node leads (`--backup-dir`).
    pub backups: Option<crate::backup::BackupSchedule>,
}

/// The default of [`NodeConfig::max_keys_per_tenant`].
pub const DEFAULT_MAX_KEYS_PER_TENANT: u32 = 100;

/// Why a node did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A certificate or key could not be read.
    #[error("control plane TLS")]
    Tls(#[from] TlsFileError),
    /// The data directory could not be opened (its message names the fix).
    #[error(transparent)]
    DataDir(#[from] OpenError),
    /// The last snapshot could not be loaded.
    #[error("{}: loading the last snapshot", path.display())]
    Snapshot {
        /// The data file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: SnapshotError,
    },
    /// The Raft settings are inconsistent.
    #[error("Raft settings")]
    Config(#[from] openraft::ConfigError),
    /// The listen address cannot be bound.
    #[error(
        "control plane: cannot listen on {addr} (another quiver dev or control-plane node? choose another address, or port 0 for a free one)"
    )]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Raft did not start.
    #[error("starting Raft")]
    Raft(#[source] openraft::error::Fatal<NodeId>),
    /// `--restore` could not seed the data directory.
    #[error("--restore")]
    Restore(#[from] crate::raft::state_machine::SeedError),
    /// `bootstrap` was asked for and failed.
    #[error("--bootstrap")]
    Bootstrap(#[from] BootstrapError),
}

/// A running control-plane node.
pub struct ControlPlaneNode {
    replica: Replica,
    operator: Arc<Operator>,
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
    ) -> Result<(Arc<ControlPlaneNode>, SocketAddr), StartError> {
        Self::start_with(config, Arc::new(UpstreamSet::default()), shutdown).await
    }

    /// Like [`ControlPlaneNode::start`], with discovery using (and keeping in
    /// step with the registry) an upstream set the caller shares, e.g. with
    /// the in-process executor of `quiver dev`.
    pub async fn start_with(
        config: NodeConfig,
        upstreams: Arc<UpstreamSet>,
        shutdown: CancellationToken,
    ) -> Result<(Arc<ControlPlaneNode>, SocketAddr), StartError> {
        let tls = config.tls.as_ref().map(ClusterTls::load).transpose()?;
        let data = DataDir::open(&config.data, config.node_id)?;
        let listen_error = |source| StartError::Listen {
            addr: config.listen,
            source,
        };
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(listen_error)?;
        let bound = listener.local_addr().map_err(listen_error)?;
        let addr = config
            .advertise
            .clone()
            .unwrap_or_else(|| bound.to_string());
        if let Some(backup) = &config.restore {
            restore(&data, backup, config.node_id, &addr)?;
        }
        let state_machine =
            StateMachine::open(data.clone()).map_err(|source| StartError::Snapshot {
                path: data.path().to_path_buf(),
                source,
            })?;
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
        let raft = Raft::new(
            config.node_id,
            Arc::new(raft_config),
            GrpcNetwork::new(tls.clone()),
            LogStore::new(data),
            state_machine,
        )
        .await
        .map_err(StartError::Raft)?;
        let replica = Replica::new(config.node_id, addr.clone(), raft.clone(), shared.clone());
        let sink = Arc::new(RaftSink::new(raft.clone(), shared.clone()));
        let discovery = Discovery::new(upstreams.clone(), sink.clone(), shutdown.clone());
        let fleet = Arc::new(FleetRegistry::new(config.node_id));
        node_metrics::report_node(&raft, &shared, &fleet, &shutdown);
        let operator = Arc::new(Operator::new(
            replica.clone(),
            fleet.clone(),
            discovery.clone(),
            tls.clone(),
            config.cluster_key.clone(),
            config.max_keys_per_tenant,
        ));
        renew_grants(&operator, &shutdown);
        if let Some(schedule) = config.backups.clone() {
            crate::backup_schedule::run(schedule, &operator, raft.clone(), &shutdown);
        }
        upstreams.renew_grants_through(Arc::new(WeakOperator(Arc::downgrade(&operator))));
        service::serve(
            raft.clone(),
            ControlPlaneService {
                shared: shared.clone(),
                fleet,
                operator: operator.clone(),
            },
            listener,
            tls,
            shutdown.clone(),
        );
        if config.bootstrap {
            replica.bootstrap().await?;
        }
        tokio::spawn(
            LeaderDiscovery {
                id: config.node_id,
                raft,
                shared,
                discovery: discovery.clone(),
                upstreams,
                cluster_key: config.cluster_key.clone(),
                shutdown: shutdown.clone(),
            }
            .run(),
        );
        tracing::info!(node = config.node_id, %addr, data = %config.data.display(), "control-plane node started");
        let node = Arc::new(ControlPlaneNode {
            replica,
            operator,
            discovery,
            sink,
            shutdown,
        });
        Ok((node, bound))
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.replica.id()
    }

    /// The address other nodes use.
    pub fn addr(&self) -> &str {
        self.replica.addr()
    }

    /// The Raft handle.
    pub fn raft(&self) -> &Raft {
        self.replica.raft()
    }

    /// The replicated state as applied here.
    pub fn shared(&self) -> &Arc<SharedState> {
        self.replica.shared()
    }

    /// Serves one operator request (as `ControlPlane.Admin` does).
    pub async fn admin(&self, request: AdminRequest) -> Result<AdminAnswer, AdminError> {
        self.operator.serve(request).await
    }

    /// Proposes a command; resolves once it is committed and applied.
    pub async fn write(&self, actor: &str, command: Command) -> Result<Committed, AdminError> {
        self.replica.write(actor, command).await
    }

    /// Resolves once every registered upstream has been listed (or failed) once
    /// by this node's discovery (it must be leading).
    pub async fn first_discovery(&self) {
        let ids: Vec<String> = self.shared().lock().upstreams.keys().cloned().collect();
        self.discovery.first_round_of(&ids).await;
    }

    /// Resolves when no discovery result is waiting to be committed.
    pub async fn discoveries_committed(&self) {
        self.sink.committed().await;
    }

    /// Waits until this node knows a leader (or `timeout` passes).
    pub async fn wait_for_leader(&self, timeout: Duration) -> Option<NodeId> {
        let mut metrics = self.raft().metrics();
        let wait = metrics.wait_for(|m| m.current_leader.is_some());
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(m)) => m.current_leader,
            _ => None,
        }
    }

    /// Stops Raft (the gRPC server stops with the shutdown token).
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let _ = self.raft().shutdown().await;
    }
}

/// Seeds the empty `data` from `backup` as node `node` at `addr`, the
/// start of a new cluster (its manifest version moved past the lost
/// cluster's, the restore recorded as an admin event).
fn restore(
    data: &DataDir,
    backup: &crate::backup::Backup,
    node: NodeId,
    addr: &str,
) -> Result<(), crate::raft::state_machine::SeedError> {
    let header = &backup.header;
    let mut state = backup.state.clone();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    state.begin_after_restore(
        now,
        "restore",
        format!(
            "restored from a backup of Raft index {} (manifest version {}, taken by Quiver {} at {} ms since the epoch)",
            header.raft_index, header.manifest_version, header.quiver_version, header.taken_at_ms
        ),
    );
    crate::raft::state_machine::seed(data, &state, header.raft_index, node, addr)?;
    tracing::info!(
        node,
        index = header.raft_index,
        manifest_version = state.manifest_version(),
        "data directory seeded from a backup"
    );
    Ok(())
}

/// Renews tenants' OAuth access tokens before they expire while `operator`
/// lives (it acts only while its node leads).
fn renew_grants(operator: &Arc<Operator>, shutdown: &CancellationToken) {
    crate::periodic::periodically(
        operator,
        crate::grants::RENEW_EVERY,
        true,
        shutdown,
        |operator| async move { operator.renew_due_grants().await },
    );
}

/// This node's operator as a transport, held weakly: the node's own
/// upstreams renew refused OAuth tokens through it (for this node's
/// discovery, and for an executor in the same process), and the operator
/// owns the discovery over those upstreams.
struct WeakOperator(std::sync::Weak<Operator>);

impl AdminTransport for WeakOperator {
    fn call(&self, request: AdminRequest) -> AdminFuture<'_> {
        Box::pin(async move {
            let operator = self
                .0
                .upgrade()
                .ok_or_else(|| AdminError::Unavailable("the control-plane node stopped".into()))?;
            operator.serve(request).await
        })
    }
}

/// The node answers in process what `ControlPlane.Admin` answers over gRPC.
impl AdminTransport for ControlPlaneNode {
    fn call(&self, request: AdminRequest) -> AdminFuture<'_> {
        Box::pin(self.admin(request))
    }
}
