#![allow(clippy::result_large_err)] // openraft's error types are large and fixed
//! A seeded, simulated network in one process: five control-plane Raft nodes
//! (real redb log stores and state machines) whose messages are dropped,
//! delayed and cut by partitions, and which crash and restart from their data
//! directories, all chosen from a seed, on tokio's paused clock, so time only
//! moves when the simulation says so. After every step it checks
//!
//! - election safety: never two leaders for one term;
//! - durability: a write the cluster acknowledged is in the state of every node
//!   that has applied past it, and, once the network heals, in every node.
//!
//! The seed is printed; `QUIVER_SIM_SEED=<n>` replays a run.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use openraft::{
    BasicNode, Config, ServerState,
    error::{InstallSnapshotError, RPCError, RemoteError, Unreachable},
    network::{RPCOption, RaftNetwork, RaftNetworkFactory},
    raft::{
        AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest,
        InstallSnapshotResponse, VoteRequest, VoteResponse,
    },
};
use quiver_control_plane::{
    command::{Command, Envelope},
    raft::{
        NodeId, Raft, TypeConfig,
        log_store::{DataDir, LogStore},
        state_machine::{SharedState, StateMachine},
        typ,
    },
    tenant::TenantPatch,
};
use rand::{RngExt as _, SeedableRng, rngs::StdRng};

const NODES: u64 = 5;
const STEPS: usize = 150;

/// Who can reach whom, and how lossy the links are.
struct Router {
    rafts: Mutex<BTreeMap<NodeId, Raft>>,
    rng: Mutex<StdRng>,
    /// Node → side of the current partition (equal sides talk).
    side: Mutex<BTreeMap<NodeId, u8>>,
    /// Probability that a message is lost, in percent.
    loss: Mutex<u32>,
}

#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("message dropped by the simulated network")
    }
}

impl std::error::Error for Dropped {}

impl Router {
    /// Decides the fate of one message: delivered after a delay, or dropped.
    fn route(&self, from: NodeId, to: NodeId) -> Option<Duration> {
        let side = self.side.lock().unwrap();
        if side.get(&from) != side.get(&to) {
            return None;
        }
        let mut rng = self.rng.lock().unwrap();
        if rng.random_range(0..100) < *self.loss.lock().unwrap() {
            return None;
        }
        Some(Duration::from_millis(rng.random_range(1..30)))
    }

    fn raft(&self, id: NodeId) -> Option<Raft> {
        self.rafts.lock().unwrap().get(&id).cloned()
    }
}

#[derive(Clone)]
struct SimNetwork {
    from: NodeId,
    router: Arc<Router>,
}

struct SimPeer {
    from: NodeId,
    to: NodeId,
    router: Arc<Router>,
}

impl RaftNetworkFactory<TypeConfig> for SimNetwork {
    type Network = SimPeer;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> SimPeer {
        SimPeer {
            from: self.from,
            to: target,
            router: self.router.clone(),
        }
    }
}

impl SimPeer {
    /// Delay on the way there; the reply may be lost on the way back.
    async fn deliver<E: std::error::Error>(&self) -> Result<Raft, RPCError<NodeId, BasicNode, E>> {
        let unreachable = || RPCError::Unreachable(Unreachable::new(&Dropped));
        let delay = self
            .router
            .route(self.from, self.to)
            .ok_or_else(unreachable)?;
        tokio::time::sleep(delay).await;
        self.router.raft(self.to).ok_or_else(unreachable)
    }

    fn back<T, E: std::error::Error>(&self, reply: T) -> Result<T, RPCError<NodeId, BasicNode, E>> {
        match self.router.route(self.to, self.from) {
            Some(_) => Ok(reply),
            None => Err(RPCError::Unreachable(Unreachable::new(&Dropped))),
        }
    }
}

impl RaftNetwork<TypeConfig> for SimPeer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, typ::RpcError> {
        let raft = self.deliver().await?;
        let reply = raft
            .append_entries(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.back(reply)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, typ::RpcError<InstallSnapshotError>> {
        let raft = self.deliver().await?;
        let reply = raft
            .install_snapshot(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.back(reply)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, typ::RpcError> {
        let raft = self.deliver().await?;
        let reply = raft
            .vote(rpc)
            .await
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))?;
        self.back(reply)
    }
}

struct SimNode {
    raft: Raft,
    state: Arc<SharedState>,
}

/// Invariant checks over everything seen so far.
#[derive(Default)]
struct Checker {
    /// term → the one node that led it.
    leaders: BTreeMap<u64, NodeId>,
    /// Acknowledged writes: tenant id → log index it committed at.
    acked: BTreeMap<String, u64>,
}

impl Checker {
    fn observe(&mut self, nodes: &BTreeMap<NodeId, SimNode>, seed: u64) {
        for (id, node) in nodes {
            let m = node.raft.metrics().borrow().clone();
            if m.state == ServerState::Leader {
                let first = *self.leaders.entry(m.current_term).or_insert(*id);
                assert_eq!(
                    first, *id,
                    "election safety violated (seed {seed}): nodes {first} and {id} both led term {}",
                    m.current_term
                );
            }
            let applied = node.state.last_applied().map_or(0, |l| l.index);
            let state = node.state.lock();
            for (tenant, index) in &self.acked {
                if applied >= *index {
                    assert!(
                        state.tenants.contains_key(tenant),
                        "committed write {tenant} (index {index}) is missing on node {id}, applied to {applied} (seed {seed})"
                    );
                }
            }
        }
    }
}

/// Opens node `id`'s data directory (fresh or from an earlier life) and starts it.
async fn boot(
    id: NodeId,
    dir: &std::path::Path,
    config: &Arc<Config>,
    router: &Arc<Router>,
) -> SimNode {
    let data = DataDir::open(&dir.join(format!("n{id}")), id).unwrap();
    let sm = StateMachine::open(data.clone()).unwrap();
    let state = sm.shared();
    let network = SimNetwork {
        from: id,
        router: router.clone(),
    };
    let raft = Raft::new(id, config.clone(), network, LogStore::new(data), sm)
        .await
        .unwrap();
    router.rafts.lock().unwrap().insert(id, raft.clone());
    SimNode { raft, state }
}

/// Stops node `id` abruptly: no more messages reach it, its storage is closed.
async fn crash(id: NodeId, node: SimNode, router: &Arc<Router>) {
    router.rafts.lock().unwrap().remove(&id);
    let _ = node.raft.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn elections_are_safe_and_committed_writes_survive_partitions_and_loss() {
    let seed: u64 = std::env::var("QUIVER_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("simulated network seed: {seed} (replay with QUIVER_SIM_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    let router = Arc::new(Router {
        rafts: Mutex::new(BTreeMap::new()),
        rng: Mutex::new(StdRng::seed_from_u64(seed ^ 0x5eed)),
        side: Mutex::new((1..=NODES).map(|id| (id, 0)).collect()),
        loss: Mutex::new(0),
    });
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(
        Config {
            heartbeat_interval: 50,
            election_timeout_min: 200,
            election_timeout_max: 400,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(40),
            max_in_snapshot_log_to_keep: 10,
            ..Config::default()
        }
        .validate()
        .unwrap(),
    );
    let mut nodes = BTreeMap::new();
    for id in 1..=NODES {
        let node = boot(id, dir.path(), &config, &router).await;
        nodes.insert(id, node);
    }
    let members: BTreeMap<NodeId, BasicNode> = (1..=NODES)
        .map(|id| (id, BasicNode::new(format!("sim-{id}"))))
        .collect();
    nodes[&1].raft.initialize(members).await.unwrap();

    let mut checker = Checker::default();
    let mut next = 0u64;
    let mut down = std::collections::BTreeSet::new();
    let mut crashes = 0usize;
    for step in 0..STEPS {
        match rng.random_range(0..10) {
            // Write through whichever node believes it leads.
            0..=4 => {
                let leader = nodes
                    .iter()
                    .find(|(_, n)| n.raft.metrics().borrow().state == ServerState::Leader)
                    .map(|(id, _)| *id);
                if let Some(leader) = leader {
                    let tenant = format!("s{next}");
                    next += 1;
                    let write = nodes[&leader].raft.client_write(Envelope::now(
                        "sim",
                        Command::CreateTenant {
                            id: tenant.clone(),
                            patch: TenantPatch::default(),
                        },
                    ));
                    if let Ok(Ok(reply)) = tokio::time::timeout(Duration::from_secs(2), write).await
                    {
                        checker.acked.insert(tenant, reply.log_id.index);
                    }
                }
            }
            // Cut the cluster in two (a minority side cannot commit).
            5 | 6 => {
                let mut side = router.side.lock().unwrap();
                for id in 1..=NODES {
                    side.insert(id, rng.random_range(0..2));
                }
            }
            // Heal.
            7 => {
                let mut side = router.side.lock().unwrap();
                for id in 1..=NODES {
                    side.insert(id, 0);
                }
            }
            // Crash a node (at most two down at once), or restart one from disk.
            8 => {
                let victim = rng.random_range(1..=NODES);
                if let Some(node) = nodes.remove(&victim) {
                    if down.len() < 2 {
                        crash(victim, node, &router).await;
                        down.insert(victim);
                        crashes += 1;
                    } else {
                        nodes.insert(victim, node);
                    }
                } else {
                    nodes.insert(victim, boot(victim, dir.path(), &config, &router).await);
                    down.remove(&victim);
                }
            }
            // Change the loss rate (0-30 %).
            _ => *router.loss.lock().unwrap() = rng.random_range(0..31),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(20..600))).await;
        checker.observe(&nodes, seed);
        if step % 50 == 0 {
            eprintln!("step {step}: {} writes acknowledged", checker.acked.len());
        }
    }

    // Restart every crashed node, heal everything and let the cluster
    // converge; every acknowledged write must then be on every node.
    for id in std::mem::take(&mut down) {
        nodes.insert(id, boot(id, dir.path(), &config, &router).await);
    }
    {
        let mut side = router.side.lock().unwrap();
        for id in 1..=NODES {
            side.insert(id, 0);
        }
        *router.loss.lock().unwrap() = 0;
    }
    let last = checker.acked.values().max().copied().unwrap_or(0);
    for (id, node) in &nodes {
        let mut applied = node.state.subscribe_applied();
        let converged =
            tokio::time::timeout(Duration::from_secs(120), applied.wait_for(|i| *i >= last)).await;
        assert!(
            converged.is_ok(),
            "node {id} did not converge to index {last} after healing (seed {seed})"
        );
    }
    checker.observe(&nodes, seed);
    for (tenant, index) in &checker.acked {
        for (id, node) in &nodes {
            assert!(
                node.state.lock().tenants.contains_key(tenant),
                "acknowledged write {tenant} (index {index}) lost on node {id} (seed {seed})"
            );
        }
    }
    assert!(
        !checker.acked.is_empty(),
        "no write was ever acknowledged (seed {seed}): the simulation tested nothing"
    );
    eprintln!(
        "{} writes acknowledged, {} terms with a leader, {crashes} crashes, seed {seed}",
        checker.acked.len(),
        checker.leaders.len()
    );
    for node in nodes.values() {
        let _ = node.raft.shutdown().await;
    }
}
