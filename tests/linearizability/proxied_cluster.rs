//! A three-node control plane of real processes whose Raft traffic passes the
//! [`PartitionableNetwork`]: formed through the operator API, asked who leads,
//! waited on until every member has caught up, and read node by node. Every
//! wait polls a condition against a deadline.

use std::time::{Duration, Instant};

use quiver_control_plane::{
    admin::{AdminAnswer, AdminRequest, ClusterStatus},
    client::AdminClient,
    raft::NodeId,
};

use super::{
    id_set::IdSet, node_process::NodeProcess, partitionable_network::PartitionableNetwork,
};

/// How long the cluster may take to get somewhere (elect, catch up).
pub const SETTLE: Duration = Duration::from_secs(60);

/// The cluster, its network and its data.
pub struct ProxiedCluster {
    /// Nodes `1..=n`, at index `id - 1`.
    pub nodes: Vec<NodeProcess>,
    /// The proxies between them.
    pub network: PartitionableNetwork,
    _data: tempfile::TempDir,
}

/// What one node holds, read on that node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// Tenant ids.
    pub tenants: IdSet,
    /// The manifest version and stub hash.
    pub manifest: (u64, String),
}

/// How long one node may take to answer. A leader's cluster status asks every
/// member for its fleet and waits up to 2 s for one that is paused (a stopped
/// process's socket still accepts), so this must be longer than that.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Asks one node, and only it.
async fn ask(addr: &str, request: &AdminRequest) -> Option<AdminAnswer> {
    let mut client = AdminClient::new(vec![addr.to_string()], None).with_timeout(ANSWER_WITHIN);
    client.call_here(request).await.ok()
}

impl ProxiedCluster {
    /// Starts `size` nodes behind proxies, with `env` set for each process;
    /// node 1 bootstraps, the others join as learners and are promoted.
    pub async fn start(size: u64, env: &[(&str, &str)]) -> ProxiedCluster {
        let data = tempfile::tempdir().expect("a temp dir");
        let network = PartitionableNetwork::new();
        let mut nodes = Vec::new();
        for id in 1..=size {
            let proxy = network.proxy(id).await;
            let node = NodeProcess::start(
                id,
                data.path().join(format!("n{id}")),
                proxy.addr.clone(),
                id == 1,
                env,
            );
            proxy.relay_to(&node.direct);
            network.node_started(id, node.pid().expect("a started node"));
            nodes.push(node);
        }
        let mut admin = AdminClient::new(vec![nodes[0].direct.clone()], None);
        for node in &nodes[1..] {
            admin
                .call(&AdminRequest::AddLearner {
                    node_id: node.id,
                    addr: node.advertised.clone(),
                })
                .await
                .unwrap_or_else(|e| panic!("add node {} as a learner: {e}", node.id));
            admin
                .call(&AdminRequest::Promote { node_id: node.id })
                .await
                .unwrap_or_else(|e| panic!("promote node {}: {e}", node.id));
        }
        ProxiedCluster {
            nodes,
            network,
            _data: data,
        }
    }

    /// Every node's own address (what the clients start from).
    pub fn direct_endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.direct.clone()).collect()
    }

    /// Node `id`.
    pub fn node(&mut self, id: NodeId) -> &mut NodeProcess {
        &mut self.nodes[id as usize - 1]
    }

    /// Restarts node `id` from its data directory.
    pub fn restart(&mut self, id: NodeId) {
        self.node(id).restart();
        let pid = self.node(id).pid().expect("a restarted node");
        self.network.node_started(id, pid);
    }

    /// The node that leads in the highest term among those that answer and
    /// claim to lead (a deposed leader that has not heard of the new term
    /// still claims it), with its status.
    pub async fn leader(&self) -> Option<ClusterStatus> {
        let mut best: Option<ClusterStatus> = None;
        for node in self.nodes.iter().filter(|n| n.answers()) {
            if let Some(AdminAnswer::ClusterStatus(status)) =
                ask(&node.direct, &AdminRequest::ClusterStatus).await
                && best.as_ref().is_none_or(|b| status.term > b.term)
            {
                best = Some(status);
            }
        }
        best
    }

    /// Waits until a node other than `not` leads; its id.
    pub async fn wait_for_leader(&self, not: Option<NodeId>) -> NodeId {
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Some(status) = self.leader().await
                && Some(status.leader) != not
            {
                return status.leader;
            }
            assert!(
                Instant::now() < deadline,
                "no leader other than {not:?} within {SETTLE:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every member has the leader's whole log and the leader has
    /// applied it.
    pub async fn wait_caught_up(&self) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let status = self.leader().await;
            if let Some(status) = &status
                && status.last_applied == status.last_log_index
                && status
                    .members
                    .iter()
                    .all(|m| m.matched_index == status.last_log_index)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the members did not catch up within {SETTLE:?}: {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Makes node `id` the leader, so it answers reads from its own state.
    pub async fn lead_with(&self, id: NodeId) {
        let deadline = Instant::now() + SETTLE;
        let mut admin = AdminClient::new(self.direct_endpoints(), None);
        loop {
            let answer = admin
                .call(&AdminRequest::TransferLeader { node_id: id })
                .await;
            if answer.is_ok() && self.leader().await.is_some_and(|s| s.leader == id) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "node {id} did not take the lead within {SETTLE:?}: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The manifest node `id` holds, asked of it alone (it must lead).
    pub async fn manifest_on(&self, id: NodeId) -> (u64, String) {
        let addr = &self.nodes[id as usize - 1].direct;
        match ask(addr, &AdminRequest::ClusterStatus).await {
            Some(AdminAnswer::ClusterStatus(s)) if s.leader == id => {
                (s.manifest_version, s.stub_hash)
            }
            other => panic!("node {id} does not answer as leader: {other:?}"),
        }
    }
}
