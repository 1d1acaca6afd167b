//! The simulated cluster: each node is Quiver's own stack (its redb log
//! store and state machine, opened by `DataDir` on the node's simulated
//! disk, and the `Replica` that writes and reads linearizably through
//! Raft), joined by the simulated network. A crash cuts the disk's power
//! (what was not synced may be lost) and drops the node without
//! `shutdown()`; a restart reopens it from what its disk kept.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    sync::Arc,
};

use openraft::{
    Config, LogId, ServerState, SnapshotPolicy,
    storage::{RaftLogStorage as _, RaftStateMachine as _},
};
use quiver_control_plane::{
    raft::{
        NodeId, Raft,
        log_store::{DataDir, LogStore},
        state_machine::{SharedState, StateMachine},
        typ,
    },
    replica::Replica,
};
use rand::{RngExt as _, SeedableRng, rngs::StdRng};
use tokio::task::JoinHandle;

use super::{
    history::History,
    sim_disk::{SimDisk, Syncs},
    sim_network::{SimNetwork, Switch},
    state_checker::AppliedState,
    vote_tap::VoteTap,
};

/// Why a simulated node did not come back up: a violation of the run.
#[derive(Debug, thiserror::Error)]
#[error("node {node} {what}: {source}")]
pub struct BootError {
    node: NodeId,
    what: &'static str,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl BootError {
    fn new(
        node: NodeId,
        what: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> BootError {
        BootError {
            node,
            what,
            source: source.into(),
        }
    }
}

/// Election timeouts are drawn from this range (ms), one fixed value per
/// node life, at least [`TIMEOUT_GAP_MS`] from every other node's.
const ELECTION_TIMEOUT_MS: std::ops::Range<u64> = 150..450;
const TIMEOUT_GAP_MS: u64 = 15;
const HEARTBEAT_MS: u64 = 50;
/// Offsets of the seed for the generators of this module.
const TIMEOUT_STREAM: u64 = 0x7133_0075;
const DISK_STREAM: u64 = 0xd15c_0000;

/// One life of a node: from a boot to the next crash.
pub struct SimNode {
    pub replica: Replica,
    pub shared: Arc<SharedState>,
    life: u64,
    watcher: JoinHandle<()>,
}

impl SimNode {
    /// Its Raft handle.
    pub fn raft(&self) -> &Raft {
        self.replica.raft()
    }
}

/// How a crash comes.
#[derive(Debug, Clone, Copy)]
pub enum Crash {
    /// The power goes now, between two steps of whatever the node does.
    Now,
    /// The power goes at the n-th disk write or sync from now, which fails:
    /// in the middle of a redb commit.
    AtDiskOp(u32),
}

/// The nodes, their disks and the network between them.
pub struct SimCluster {
    seed: u64,
    syncs: Syncs,
    pub switch: Arc<Switch>,
    history: Arc<History>,
    disks: BTreeMap<NodeId, SimDisk>,
    nodes: BTreeMap<NodeId, SimNode>,
    /// Nodes whose disk will lose power at a coming disk operation.
    doomed: BTreeSet<NodeId>,
    /// Each node's election timeout in its current life.
    timeouts: BTreeMap<NodeId, u64>,
    rng: StdRng,
}

impl SimCluster {
    /// No node up yet; the disks sync as `syncs` says.
    pub fn new(seed: u64, syncs: Syncs, switch: Arc<Switch>, history: Arc<History>) -> SimCluster {
        SimCluster {
            seed,
            syncs,
            switch,
            history,
            disks: BTreeMap::new(),
            nodes: BTreeMap::new(),
            doomed: BTreeSet::new(),
            timeouts: BTreeMap::new(),
            rng: StdRng::seed_from_u64(seed.wrapping_add(TIMEOUT_STREAM)),
        }
    }

    /// A fixed election timeout for a node's new life, away from the others'
    /// (openraft draws each timeout from `min..max` with a thread-local
    /// generator; a range of one value makes that draw deterministic).
    fn election_timeout(&mut self, id: NodeId) -> u64 {
        self.timeouts.remove(&id);
        loop {
            let t = self.rng.random_range(ELECTION_TIMEOUT_MS);
            if self
                .timeouts
                .values()
                .all(|o| o.abs_diff(t) >= TIMEOUT_GAP_MS)
            {
                self.timeouts.insert(id, t);
                return t;
            }
        }
    }

    /// Boots node `id` from its disk (a fresh disk the first time).
    pub async fn boot(&mut self, id: NodeId) -> Result<(), BootError> {
        let (seed, syncs) = (self.seed, self.syncs);
        let disk = self
            .disks
            .entry(id)
            .or_insert_with(|| SimDisk::new(seed.wrapping_add(DISK_STREAM + id), syncs))
            .clone();
        let life = disk.power_cycle();
        let name = format!("node {id}'s simulated disk");
        let data = DataDir::open_on_backend(disk.power_on(), Path::new(&name), id)
            .map_err(|e| BootError::new(id, "cannot reopen its disk", e))?;
        let mut store = LogStore::new(data.clone());
        let unreadable = |e: typ::StorageError| BootError::new(id, "cannot read its disk", e);
        let on_disk = store.read_vote().await.map_err(unreadable)?;
        let log = store.get_log_state().await.map_err(unreadable)?;
        let committed = store.read_committed().await.map_err(unreadable)?;
        let mut state_machine = StateMachine::open(data.clone())
            .map_err(|e| BootError::new(id, "cannot load its snapshot", e))?;
        let (snapshot, _) = state_machine.applied_state().await.map_err(unreadable)?;
        self.history.event(format!(
            "node {id} reopens its disk: log ({}, {}], committed {}, snapshot {}",
            shown(log.last_purged_log_id),
            shown(log.last_log_id),
            shown(committed),
            shown(snapshot),
        ));
        self.history.reopened(id, on_disk);
        let shared = state_machine.shared();
        let timeout = self.election_timeout(id);
        let config = Config {
            cluster_name: "quiver-sim".into(),
            heartbeat_interval: HEARTBEAT_MS,
            election_timeout_min: timeout,
            election_timeout_max: timeout + 1,
            // Small, so snapshots, purges and snapshot installs happen.
            snapshot_policy: SnapshotPolicy::LogsSinceLast(40),
            max_in_snapshot_log_to_keep: 10,
            ..Config::default()
        }
        .validate()
        .map_err(|e| BootError::new(id, "has Raft settings openraft refuses", e))?;
        let raft = Raft::new(
            id,
            Arc::new(config),
            SimNetwork::new(id, life, self.switch.clone(), self.history.clone()),
            VoteTap::new(LogStore::new(data), id, self.history.clone()),
            state_machine,
        )
        .await
        .map_err(|e| BootError::new(id, "did not start Raft", e))?;
        self.switch.attach(id, raft.clone(), disk, life);
        let watcher = tokio::spawn(watch_applied(id, shared.clone(), self.history.clone()));
        let replica = Replica::new(id, format!("sim-{id}"), raft, shared.clone());
        self.nodes.insert(
            id,
            SimNode {
                replica,
                shared,
                life,
                watcher,
            },
        );
        self.history
            .event(format!("node {id} up, election timeout {timeout} ms"));
        Ok(())
    }

    /// Crashes node `id`, now or at a coming disk operation.
    pub fn crash(&mut self, id: NodeId, how: Crash) {
        let Some(disk) = self.disks.get(&id) else {
            return;
        };
        match how {
            Crash::Now => {
                disk.cut_power();
                self.history.event(format!("node {id} loses power"));
                self.bury(id);
            }
            Crash::AtDiskOp(n) => {
                disk.cut_power_after(n);
                self.doomed.insert(id);
                self.history.event(format!(
                    "node {id} will lose power at its disk operation {n} from now"
                ));
            }
        }
    }

    /// Drops the nodes whose disk lost power; returns them.
    pub fn bury_the_dead(&mut self) -> Vec<NodeId> {
        let dead: Vec<NodeId> = self
            .nodes
            .iter()
            .filter(|(id, node)| self.disks[id].power_cycle() != node.life)
            .map(|(id, _)| *id)
            .collect();
        for id in &dead {
            self.history
                .event(format!("node {id} lost power mid-write"));
            self.bury(*id);
        }
        dead
    }

    /// Forgets a node whose power is cut: no `shutdown()`; its Raft stops
    /// when the last handle is gone, and nothing it does meanwhile reaches
    /// its disk or the network.
    fn bury(&mut self, id: NodeId) {
        self.switch.detach(id);
        self.doomed.remove(&id);
        if let Some(node) = self.nodes.remove(&id) {
            node.watcher.abort();
        }
    }

    /// Takes back every armed power cut that has not happened.
    pub fn disarm(&mut self) {
        for id in std::mem::take(&mut self.doomed) {
            if let Some(disk) = self.disks.get(&id) {
                disk.disarm();
            }
        }
    }

    /// Nodes that are up.
    pub fn up(&self) -> impl Iterator<Item = (&NodeId, &SimNode)> {
        self.nodes.iter()
    }

    /// Node `id`, if it is up.
    pub fn node(&self, id: NodeId) -> Option<&SimNode> {
        self.nodes.get(&id)
    }

    /// Nodes down, or about to go down.
    pub fn down_or_doomed(&self) -> usize {
        self.disks.len() - self.nodes.len() + self.doomed.len()
    }

    /// Whether node `id` is up and not about to go down.
    pub fn is_safe_to_crash(&self, id: NodeId) -> bool {
        self.nodes.contains_key(&id) && !self.doomed.contains(&id)
    }

    /// A node up that believes it leads.
    pub fn leader(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .filter(|(id, node)| {
                let metrics = node.raft().metrics().borrow().clone();
                metrics.state == ServerState::Leader && metrics.current_leader == Some(**id)
            })
            .max_by_key(|(_, node)| node.raft().metrics().borrow().current_term)
            .map(|(id, _)| *id)
    }

    /// Unsynced writes lost to power cuts, over all disks.
    pub fn lost_writes(&self) -> u64 {
        self.disks.values().map(SimDisk::lost_writes).sum()
    }

    /// Stops watching every node.
    pub fn stop_watching(&self) {
        for node in self.nodes.values() {
            node.watcher.abort();
        }
    }
}

fn shown(log_id: Option<LogId<NodeId>>) -> String {
    log_id.map_or("none".to_string(), |l| l.to_string())
}

/// Records `node`'s applied state each time it applies a batch of entries.
async fn watch_applied(node: NodeId, shared: Arc<SharedState>, history: Arc<History>) {
    let mut applied = shared.subscribe_applied();
    loop {
        let seen = {
            let state = shared.lock();
            // `apply` sets the last applied id under the state lock: the two agree.
            shared
                .last_applied()
                .map(|log_id| AppliedState::of(node, log_id, &state))
        };
        if let Some(seen) = seen {
            history.applied(seen);
        }
        if applied.changed().await.is_err() {
            return;
        }
    }
}
