//! One run: a [`ProxiedCluster`], concurrent clients recording a [`History`],
//! the faults injected into it, and at the end every node's own state. It
//! decides nothing about the history; the test hands that to the checker.

use std::{sync::Arc, time::Duration};

use quiver_control_plane::{client::AdminClient, raft::NodeId};
use tokio::task::JoinHandle;

use super::{
    fault::Fault,
    history::{History, Route},
    proxied_cluster::{NodeState, ProxiedCluster, SETTLE},
    seeded_rng::SeededRng,
    workload::Workload,
};

/// Acknowledged adds that show the cluster is making progress.
const PROGRESS: usize = 5;

/// How long a request sent straight to a deposed leader may take.
const DEPOSED_TIMEOUT: Duration = Duration::from_millis(1500);

/// How long requests queue on a paused leader before it resumes.
const QUEUED: Duration = Duration::from_millis(300);

/// Reads sent straight to a deposed leader's own port, not following redirects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeposedReads {
    /// Reads sent.
    pub sent: usize,
    /// Reads it answered (with the barrier, none: it cannot confirm it leads).
    pub answered: usize,
}

/// A cluster under load, with its history.
pub struct Scenario {
    /// The cluster.
    pub cluster: ProxiedCluster,
    /// What the clients did.
    pub history: Arc<History>,
    workload: Option<Workload>,
    rng: SeededRng,
    /// Reads sent straight to a deposed leader.
    pub deposed_reads: DeposedReads,
    deposed_writes: usize,
}

impl Scenario {
    /// Forms a three-node cluster (each process started with `env`) and
    /// starts `clients` clients on it; returns once they make progress.
    pub async fn start(rng: SeededRng, clients: usize, env: &[(&str, &str)]) -> Scenario {
        let cluster = ProxiedCluster::start(3, env).await;
        let history = Arc::new(History::new());
        let workload = Workload::start(clients, &cluster.direct_endpoints(), &history, &rng);
        history
            .progress(PROGRESS * 2, "before any fault", SETTLE)
            .await;
        Scenario {
            cluster,
            history,
            workload: Some(workload),
            rng,
            deposed_reads: DeposedReads::default(),
            deposed_writes: 0,
        }
    }

    /// Injects `fault`, holds it for `hold`, heals it and waits until every
    /// member has caught up.
    pub async fn inject(&mut self, fault: Fault, hold: Duration) {
        match fault {
            Fault::PartitionLeader => self.partition_leader(hold).await,
            Fault::PauseLeader { cut_off } => self.pause_leader(cut_off, hold).await,
            Fault::KillNode { leader } => self.kill_node(leader, hold).await,
        }
        self.cluster.wait_caught_up().await;
    }

    async fn partition_leader(&mut self, hold: Duration) {
        let old = self.cluster.wait_for_leader(None).await;
        self.cluster.network.isolate(old);
        let new = self.cluster.wait_for_leader(Some(old)).await;
        self.history
            .progress(
                PROGRESS,
                &format!("on node {new} with node {old} cut off"),
                SETTLE,
            )
            .await;
        // It still believes it leads: nothing has told it otherwise.
        let asked = self.ask_deposed(old);
        tokio::time::sleep(hold).await;
        self.count_deposed(asked).await;
        self.cluster.network.heal();
    }

    async fn pause_leader(&mut self, cut_off: bool, hold: Duration) {
        let old = self.cluster.wait_for_leader(None).await;
        self.cluster.node(old).pause();
        if cut_off {
            self.cluster.network.isolate(old);
        }
        let new = self.cluster.wait_for_leader(Some(old)).await;
        self.history
            .progress(
                PROGRESS,
                &format!("on node {new} with node {old} paused"),
                SETTLE,
            )
            .await;
        // The requests wait in the paused process's sockets; it serves them
        // as soon as it runs again, before it can hear of the new term.
        let asked = self.ask_deposed(old);
        tokio::time::sleep(QUEUED).await;
        self.cluster.node(old).resume();
        self.count_deposed(asked).await;
        if cut_off {
            tokio::time::sleep(hold).await;
            self.cluster.network.heal();
        }
    }

    async fn kill_node(&mut self, leader: bool, hold: Duration) {
        let current = self.cluster.wait_for_leader(None).await;
        let target = if leader {
            current
        } else {
            let followers: Vec<NodeId> = (1..=3).filter(|id| *id != current).collect();
            followers[self.rng.below(followers.len() as u64) as usize]
        };
        self.cluster.node(target).kill();
        if leader {
            self.cluster.wait_for_leader(Some(target)).await;
        }
        self.history
            .progress(PROGRESS, &format!("with node {target} killed"), SETTLE)
            .await;
        tokio::time::sleep(hold).await;
        self.cluster.restart(target);
    }

    /// Two clients bound to node `id`'s own port (no redirects): one reads
    /// twice, one adds and reads. Resolves to the reads sent and answered.
    fn ask_deposed(&mut self, id: NodeId) -> JoinHandle<DeposedReads> {
        let addr = self.cluster.node(id).direct.clone();
        self.deposed_writes += 1;
        let write = format!("deposed-{id}-{}", self.deposed_writes);
        let history = self.history.clone();
        tokio::spawn(async move {
            let who = format!("a client of node {id} alone (deposed)");
            let client =
                || AdminClient::new(vec![addr.clone()], None).with_timeout(DEPOSED_TIMEOUT);
            let (mut reader, mut writer) = (client(), client());
            let reads = async {
                let first = history.read(&mut reader, &who, Route::HereOnly).await;
                let second = history.read(&mut reader, &who, Route::HereOnly).await;
                usize::from(first.is_some()) + usize::from(second.is_some())
            };
            let write_then_read = async {
                history
                    .add(&mut writer, &who, &write, Route::HereOnly)
                    .await;
                usize::from(
                    history
                        .read(&mut writer, &who, Route::HereOnly)
                        .await
                        .is_some(),
                )
            };
            let (a, b) = tokio::join!(reads, write_then_read);
            DeposedReads {
                sent: 3,
                answered: a + b,
            }
        })
    }

    async fn count_deposed(&mut self, asked: JoinHandle<DeposedReads>) {
        let reads = asked.await.expect("the deposed-leader clients panicked");
        self.deposed_reads.sent += reads.sent;
        self.deposed_reads.answered += reads.answered;
    }

    /// Stops the clients, heals every fault (resumes, restarts, reconnects)
    /// and waits until every member has caught up.
    pub async fn quiesce(&mut self) {
        if let Some(workload) = self.workload.take() {
            workload.stop().await;
        }
        self.cluster.network.heal();
        for id in 1..=3 {
            if !self.cluster.node(id).is_running() {
                self.cluster.restart(id);
            }
            self.cluster.node(id).resume();
        }
        self.cluster.wait_caught_up().await;
    }

    /// Each node's state, read on that node: it is made leader in turn and
    /// lists the tenants itself (those reads join the history).
    pub async fn node_states(&mut self) -> Vec<(NodeId, NodeState)> {
        let mut states = Vec::new();
        for id in 1..=3 {
            // A read that fails is not in the history, so one that fails
            // while leadership settles (a heartbeat round timing out on a
            // loaded machine) is asked again, leading again first.
            let mut tenants = None;
            for _ in 0..5 {
                self.cluster.lead_with(id).await;
                let mut own = AdminClient::new(vec![self.cluster.node(id).direct.clone()], None);
                tenants = self
                    .history
                    .read(&mut own, &format!("node {id}, read alone"), Route::HereOnly)
                    .await;
                if tenants.is_some() {
                    break;
                }
            }
            let tenants = tenants
                .unwrap_or_else(|| panic!("node {id} does not answer a read while it leads"));
            let manifest = self.cluster.manifest_on(id).await;
            states.push((id, NodeState { tenants, manifest }));
        }
        self.cluster.wait_caught_up().await;
        states
    }
}
