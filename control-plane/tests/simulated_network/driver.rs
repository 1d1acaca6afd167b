//! The driver of one run: boots the cluster, then, step by step, chooses
//! from the seed what clients write and read, how the network fails and
//! which node crashes or comes back; at the end heals everything and
//! compares the nodes. It decides and records; the checks live in the
//! checkers the `History` feeds.

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use openraft::BasicNode;
use quiver_control_plane::{
    admin::AdminError, command::Command, raft::NodeId, tenant::TenantPatch,
};
use rand::{RngExt as _, SeedableRng, rngs::StdRng};
use sha2::{Digest, Sha256};
use tokio::task::JoinHandle;

use super::{
    election_checker::LeaderIds,
    history::{History, PanicWatch, Tally},
    read_checker::items_of,
    sim_cluster::{Crash, SimCluster},
    sim_disk::Syncs,
    sim_network::Switch,
    state_checker,
};

const NODES: u64 = 5;
/// At most this many nodes are down (or about to go down) at once: a
/// majority of five stays up.
const MAX_DOWN: usize = 2;
/// Offsets of the seed for the driver's and the network's generators.
const DRIVER_STREAM: u64 = 0;
const NETWORK_STREAM: u64 = 0x5eed;

/// What a run did.
pub struct RunReport {
    pub trace: Vec<String>,
    pub tally: Tally,
    pub crashes: usize,
    pub lost_writes: u64,
    pub settled_at: u64,
}

impl RunReport {
    /// A short hash of the trace, to compare runs across processes.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.trace.join("\n").as_bytes());
        hex::encode(&digest[..8])
    }
}

/// Runs `steps` steps of seed `seed` on a fresh paused clock; panics with
/// the violation, the seed and the end of the trace if a check fails.
pub fn run(seed: u64, steps: usize) -> RunReport {
    run_on(seed, steps, Syncs::Honest)
}

/// [`run`] on disks that sync as `syncs` says.
pub fn run_on(seed: u64, steps: usize, syncs: Syncs) -> RunReport {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let mut driver = Driver::start(seed, syncs).await;
        for _ in 0..steps {
            driver.step().await;
        }
        driver.settle().await
    })
}

/// Chooses and performs the steps of one run.
struct Driver {
    rng: StdRng,
    history: Arc<History>,
    /// Panics of openraft's tasks fail the run the moment they happen.
    _panics: PanicWatch,
    cluster: SimCluster,
    clients: Vec<JoinHandle<()>>,
    next_item: u64,
    crashes: usize,
}

impl Driver {
    /// Boots the nodes and makes them one cluster.
    async fn start(seed: u64, syncs: Syncs) -> Driver {
        let history = Arc::new(History::new(
            seed,
            NODES as usize,
            LeaderIds::of_this_build(),
        ));
        let switch = Arc::new(Switch::new(seed.wrapping_add(NETWORK_STREAM)));
        let mut driver = Driver {
            rng: StdRng::seed_from_u64(seed.wrapping_add(DRIVER_STREAM)),
            cluster: SimCluster::new(seed, syncs, switch, history.clone()),
            _panics: history.watch_panics(),
            history,
            clients: Vec::new(),
            next_item: 0,
            crashes: 0,
        };
        for id in 1..=NODES {
            driver.boot(id).await;
        }
        let members: BTreeMap<NodeId, BasicNode> = (1..=NODES)
            .map(|id| (id, BasicNode::new(format!("sim-{id}"))))
            .collect();
        let first = driver
            .cluster
            .node(1)
            .expect("node 1 just booted")
            .raft()
            .clone();
        if let Err(e) = driver.within(first.initialize(members)).await {
            driver
                .history
                .fail_now(format!("initialising the cluster: {e}"));
        }
        driver
    }

    /// Waits for `work`, failing the run the moment a check fails.
    async fn within<F: Future>(&self, work: F) -> F::Output {
        tokio::select! {
            biased;
            failure = self.history.failed() => panic!("{failure}"),
            output = work => output,
        }
    }

    /// Lets simulated time pass.
    async fn run_for(&self, duration: Duration) {
        self.within(tokio::time::sleep(duration)).await;
    }

    async fn boot(&mut self, id: NodeId) {
        if let Err(e) = self.cluster.boot(id).await {
            self.history.violation(e.to_string());
        }
        if let Some(failure) = self.history.failure() {
            panic!("{failure}");
        }
    }

    /// One step: an action, then some simulated time.
    async fn step(&mut self) {
        match self.rng.random_range(0..20) {
            0..=8 => {
                for _ in 0..self.rng.random_range(1..=3) {
                    self.write();
                }
            }
            9..=11 => self.read(),
            12 => self.partition(),
            13 => self.isolate_the_leader(),
            14 | 15 => {
                self.history.event("heal the network");
                self.cluster.switch.heal();
            }
            16..=18 => self.crash_or_restart().await,
            _ => {
                let percent = self.rng.random_range(0..=20);
                self.history.event(format!("message loss {percent} %"));
                self.cluster.switch.set_loss(percent);
            }
        }
        let pause = Duration::from_millis(self.rng.random_range(10..300));
        self.run_for(pause).await;
        self.cluster.bury_the_dead();
        self.clients.retain(|client| !client.is_finished());
    }

    /// The node a client sends to: mostly the leader, sometimes any node.
    fn client_target(&mut self) -> Option<NodeId> {
        let up: Vec<NodeId> = self.cluster.up().map(|(id, _)| *id).collect();
        let any = *up.get(self.rng.random_range(0..up.len().max(1)))?;
        match self.cluster.leader() {
            Some(leader) if self.rng.random_bool(0.8) => Some(leader),
            _ => Some(any),
        }
    }

    /// A client creates a tenant, or issues a key to an acknowledged one.
    fn write(&mut self) {
        let Some(node) = self.client_target() else {
            return;
        };
        let n = self.next_item;
        self.next_item += 1;
        let tenants: Vec<String> = self
            .history
            .acknowledged_items()
            .into_iter()
            .map(|(item, _)| item)
            .filter(|item| !item.contains('/'))
            .collect();
        let (item, command) = if !tenants.is_empty() && self.rng.random_bool(0.3) {
            let tenant = tenants[self.rng.random_range(0..tenants.len())].clone();
            let key_id = format!("k{n}");
            let item = format!("{tenant}/{key_id}");
            let sha256 = hex::encode(Sha256::digest(item.as_bytes()));
            let command = Command::IssueKey {
                tenant,
                key_id,
                sha256,
                limit: None,
            };
            (item, command)
        } else {
            let id = format!("t{n}");
            let command = Command::CreateTenant {
                id: id.clone(),
                patch: TenantPatch::default(),
            };
            (id, command)
        };
        self.history.proposing(node, &item);
        let replica = self.cluster.node(node).map(|n| n.replica.clone());
        let history = self.history.clone();
        self.clients.push(tokio::spawn(async move {
            let Some(replica) = replica else { return };
            match replica.write("sim", command).await {
                Ok(committed) => history.acknowledged(&item, committed.log_index),
                // Every write is new and every key's tenant acknowledged:
                // a refusal means a command was applied twice.
                Err(AdminError::Refused { message, .. }) => {
                    history.violation(format!("the new write {item} was refused: {message}"));
                }
                Err(e) => history.unacknowledged(&item, &e.to_string()),
            }
        }));
    }

    /// A client reads every tenant and key, linearizably.
    fn read(&mut self) {
        let Some(node) = self.client_target() else {
            return;
        };
        let replica = self.cluster.node(node).map(|n| n.replica.clone());
        let history = self.history.clone();
        self.clients.push(tokio::spawn(async move {
            let Some(replica) = replica else { return };
            let floor = history.read_begins(node);
            match replica.read(|state| items_of(state)).await {
                Ok(seen) => history.read_returned(node, floor, &seen),
                Err(e) => history.read_failed(node, &e.to_string()),
            }
        }));
    }

    /// Cuts the cluster in two (a minority side cannot commit).
    fn partition(&mut self) {
        let sides: BTreeMap<NodeId, u8> = (1..=NODES)
            .map(|id| (id, self.rng.random_range(0..2)))
            .collect();
        let side = |s: u8| -> Vec<NodeId> {
            sides
                .iter()
                .filter(|(_, side)| **side == s)
                .map(|(id, _)| *id)
                .collect()
        };
        self.history
            .event(format!("partition {:?} | {:?}", side(0), side(1)));
        self.cluster.switch.partition(sides);
    }

    /// Cuts the node that believes it leads off from the others: it keeps
    /// believing it for a while, and clients keep asking it.
    fn isolate_the_leader(&mut self) {
        let Some(leader) = self.cluster.leader() else {
            return;
        };
        self.history.event(format!("isolate node {leader}"));
        let sides = (1..=NODES).map(|id| (id, u8::from(id == leader))).collect();
        self.cluster.switch.partition(sides);
    }

    /// Restarts a node that is down, or crashes one that is up.
    async fn crash_or_restart(&mut self) {
        let down: Vec<NodeId> = (1..=NODES)
            .filter(|id| self.cluster.node(*id).is_none())
            .collect();
        let restart = !down.is_empty()
            && (self.cluster.down_or_doomed() >= MAX_DOWN || self.rng.random_bool(0.5));
        if restart {
            let id = down[self.rng.random_range(0..down.len())];
            self.boot(id).await;
            return;
        }
        if self.cluster.down_or_doomed() >= MAX_DOWN {
            return;
        }
        let victims: Vec<NodeId> = (1..=NODES)
            .filter(|id| self.cluster.is_safe_to_crash(*id))
            .collect();
        let victim = victims[self.rng.random_range(0..victims.len())];
        let how = if self.rng.random_bool(0.5) {
            Crash::Now
        } else {
            Crash::AtDiskOp(self.rng.random_range(0..12))
        };
        self.cluster.crash(victim, how);
        self.crashes += 1;
    }

    /// A node that believes it leads, waiting (in simulated time) for one.
    async fn leader(&self, limit: Duration) -> Option<NodeId> {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if let Some(leader) = self.cluster.leader() {
                return Some(leader);
            }
            self.run_for(Duration::from_millis(50)).await;
        }
        None
    }

    /// Heals everything, restarts every node, lets the clients finish, and
    /// commits one last write on all nodes; then compares the nodes.
    async fn settle(mut self) -> RunReport {
        eprintln!("--- settle: heal the network, restart every node");
        self.history
            .event("settle: heal, no loss, disarm power cuts, restart all");
        self.cluster.disarm();
        self.cluster.switch.heal();
        self.cluster.switch.set_loss(0);
        self.cluster.bury_the_dead();
        for id in 1..=NODES {
            if self.cluster.node(id).is_none() {
                self.boot(id).await;
            }
        }
        // A client's write or read gives up after the quorum wait (5 s).
        for client in std::mem::take(&mut self.clients) {
            if let Err(e) = self.within(client).await {
                self.history.fail_now(format!("a client task failed: {e}"));
            }
        }

        eprintln!("--- one last write, applied on every node");
        let settled_at = self.last_write().await;

        eprintln!("--- every node's state is the same and holds every acknowledged write");
        let mut states = BTreeMap::new();
        for (id, node) in self.cluster.up() {
            let state = node.shared.lock();
            states.insert(
                *id,
                serde_json::to_value(&*state).expect("the control state serialises"),
            );
        }
        if let Err(violation) = state_checker::identical(&states) {
            self.history.violation(violation.to_string());
        }
        let leader = self.leader(Duration::from_secs(30)).await;
        let Some(leader) = leader.and_then(|id| self.cluster.node(id).map(|n| (id, n))) else {
            self.history.fail_now("no leader after settling");
        };
        let floor = self.history.read_begins(leader.0);
        match self.within(leader.1.replica.read(|s| items_of(s))).await {
            Ok(seen) => {
                self.history.read_returned(leader.0, floor, &seen);
                for (item, index) in self.history.acknowledged_items() {
                    if !seen.contains(&item) {
                        self.history.violation(format!(
                            "durability: acknowledged write {item} (index {index}) is lost"
                        ));
                    }
                }
            }
            Err(e) => self.history.fail_now(format!("the last read failed: {e}")),
        }
        if let Some(failure) = self.history.failure() {
            panic!("{failure}");
        }
        self.cluster.stop_watching();
        RunReport {
            trace: self.history.trace(),
            tally: self.history.tally(),
            crashes: self.crashes,
            lost_writes: self.cluster.lost_writes(),
            settled_at,
        }
    }

    /// Commits a write through the leader and waits until every node has
    /// applied exactly up to it; returns its index.
    async fn last_write(&mut self) -> u64 {
        for attempt in 0..20 {
            let Some(leader) = self.leader(Duration::from_secs(30)).await else {
                self.history.fail_now("no leader after healing");
            };
            let Some(replica) = self.cluster.node(leader).map(|n| n.replica.clone()) else {
                continue;
            };
            let item = format!("last{attempt}");
            self.history.proposing(leader, &item);
            let command = Command::CreateTenant {
                id: item.clone(),
                patch: TenantPatch::default(),
            };
            match self.within(replica.write("sim", command)).await {
                Ok(committed) => {
                    let index = committed.log_index;
                    self.history.acknowledged(&item, index);
                    for (id, node) in self.cluster.up() {
                        let mut applied = node.shared.subscribe_applied();
                        let caught_up = tokio::time::timeout(
                            Duration::from_secs(60),
                            applied.wait_for(|i| *i >= index),
                        );
                        if !matches!(self.within(caught_up).await, Ok(Ok(_))) {
                            self.history
                                .fail_now(format!("node {id} did not apply index {index}"));
                        }
                    }
                    let applied: Vec<u64> = self
                        .cluster
                        .up()
                        .map(|(_, n)| n.shared.last_applied().map_or(0, |l| l.index))
                        .collect();
                    if applied.iter().all(|i| *i == index) {
                        return index;
                    }
                }
                Err(e) => self.history.unacknowledged(&item, &e.to_string()),
            }
            self.run_for(Duration::from_millis(500)).await;
        }
        self.history
            .fail_now("the healed cluster never applied one write on every node alike");
    }
}
