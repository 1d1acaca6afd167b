//! The simulated network between the nodes, in place of Quiver's gRPC one:
//! the same openraft `RaftNetwork` trait, the same JSON encoding of requests
//! and replies (`raft/network.rs` and `service.rs`), the same mapping of
//! failures (a refused connection or a deadline is `Unreachable`, so openraft
//! backs off as it does in production). Which message arrives, when, and
//! which is lost is drawn from one seeded generator; a partition loses what
//! crosses it; a crashed node sends nothing more, and a reply it had not sent
//! when it crashed is never sent.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use openraft::{
    error::{InstallSnapshotError, NetworkError, RPCError, RemoteError, Unreachable},
    network::{RPCOption, RaftNetwork, RaftNetworkFactory},
    raft::{
        AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest,
        InstallSnapshotResponse, VoteRequest, VoteResponse,
    },
};
use quiver_control_plane::raft::{
    Node, NodeId, Raft, TypeConfig,
    network::{NetError, Rpc},
    typ,
};
use rand::{RngExt as _, SeedableRng, rngs::StdRng};
use serde::{Serialize, de::DeserializeOwned};
use tokio::time::Instant;

use super::{history::History, sim_disk::SimDisk};

/// A node that is up: its Raft, and the disk power cycle it lives in (when
/// the disk loses power, the node is down, whatever its tasks still do).
#[derive(Clone)]
struct Host {
    raft: Raft,
    disk: SimDisk,
    life: u64,
}

impl Host {
    fn alive(&self) -> bool {
        self.disk.power_cycle() == self.life
    }
}

struct SwitchState {
    rng: StdRng,
    hosts: BTreeMap<NodeId, Host>,
    /// Node → side of the current partition (equal sides talk).
    side: BTreeMap<NodeId, u8>,
    /// Chance that a message is lost, in percent.
    loss_percent: u32,
}

/// What becomes of one message.
enum Fate {
    /// The target is down: the connection is refused at once.
    Refused,
    /// Lost (a partition, or loss): the sender hears nothing until its deadline.
    Lost,
    /// Arrives after this delay.
    Delivered(Duration),
}

/// Who is up, who can reach whom, and how lossy the links are.
pub struct Switch(Mutex<SwitchState>);

impl Switch {
    /// A healed, lossless network with no node up; `seed` draws delays and losses.
    pub fn new(seed: u64) -> Switch {
        Switch(Mutex::new(SwitchState {
            rng: StdRng::seed_from_u64(seed),
            hosts: BTreeMap::new(),
            side: BTreeMap::new(),
            loss_percent: 0,
        }))
    }

    fn state(&self) -> MutexGuard<'_, SwitchState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Node `id` is up, in power cycle `life` of `disk`.
    pub fn attach(&self, id: NodeId, raft: Raft, disk: SimDisk, life: u64) {
        self.state().hosts.insert(id, Host { raft, disk, life });
    }

    /// Node `id` is down.
    pub fn detach(&self, id: NodeId) {
        self.state().hosts.remove(&id);
    }

    /// Puts each node on a side; nodes on different sides cannot talk.
    pub fn partition(&self, sides: BTreeMap<NodeId, u8>) {
        self.state().side = sides;
    }

    /// Ends every partition.
    pub fn heal(&self) {
        self.state().side.clear();
    }

    /// Sets the chance that a message is lost.
    pub fn set_loss(&self, percent: u32) {
        self.state().loss_percent = percent;
    }

    fn host(&self, id: NodeId, life: u64) -> Option<Raft> {
        let state = self.state();
        let host = state.hosts.get(&id)?;
        (host.life == life && host.alive()).then(|| host.raft.clone())
    }

    fn is_up(&self, id: NodeId, life: u64) -> bool {
        self.host(id, life).is_some()
    }

    /// Where a message from `from` to `to` goes, and the life of `to` it reaches.
    fn route(&self, from: NodeId, to: NodeId) -> (Fate, u64) {
        let mut state = self.state();
        let Some(host) = state.hosts.get(&to).filter(|h| h.alive()) else {
            return (Fate::Refused, 0);
        };
        let life = host.life;
        let side = |id| state.side.get(&id).copied().unwrap_or(0);
        if side(from) != side(to) {
            return (Fate::Lost, life);
        }
        let loss = state.loss_percent;
        if state.rng.random_range(0..100) < loss {
            return (Fate::Lost, life);
        }
        let delay = Duration::from_millis(state.rng.random_range(1..30));
        (Fate::Delivered(delay), life)
    }
}

/// One life of a node's network: builds its connections to the others.
#[derive(Clone)]
pub struct SimNetwork {
    from: NodeId,
    life: u64,
    switch: Arc<Switch>,
    history: Arc<History>,
}

impl SimNetwork {
    /// The network of node `from` in disk power cycle `life`.
    pub fn new(from: NodeId, life: u64, switch: Arc<Switch>, history: Arc<History>) -> SimNetwork {
        SimNetwork {
            from,
            life,
            switch,
            history,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for SimNetwork {
    type Network = SimPeer;

    async fn new_client(&mut self, target: NodeId, _node: &Node) -> SimPeer {
        SimPeer {
            from: self.from,
            life: self.life,
            to: target,
            switch: self.switch.clone(),
            history: self.history.clone(),
        }
    }
}

/// A connection from one node to another.
pub struct SimPeer {
    from: NodeId,
    life: u64,
    to: NodeId,
    switch: Arc<Switch>,
    history: Arc<History>,
}

fn unreachable<E: std::error::Error>(why: &'static str) -> RPCError<NodeId, Node, E> {
    RPCError::Unreachable(Unreachable::new(&NetError(why.to_owned())))
}

fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(payload)
}

/// What `service.rs` does with a request that reached a node: decode it,
/// hand it to openraft, encode openraft's answer.
async fn serve(raft: &Raft, rpc: Rpc, payload: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    match rpc {
        Rpc::Append => serde_json::to_vec(&raft.append_entries(decode(payload)?).await),
        Rpc::Vote => serde_json::to_vec(&raft.vote(decode(payload)?).await),
        Rpc::Snapshot => serde_json::to_vec(&raft.install_snapshot(decode(payload)?).await),
    }
}

impl SimPeer {
    /// Sends `request`, as `RaftPeer::send` does over gRPC.
    async fn send<Req, Resp, E>(
        &self,
        rpc: Rpc,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Node, typ::RaftError<E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let deadline = Instant::now() + option.hard_ttl();
        // What gRPC reports when no answer comes: the deadline passes.
        let no_answer = || async move {
            tokio::time::sleep_until(deadline).await;
            Err(unreachable("deadline exceeded"))
        };
        if !self.switch.is_up(self.from, self.life) {
            // A crashed node's tasks may still run; nothing they send leaves.
            return no_answer().await;
        }
        let payload =
            serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let (fate, target_life) = self.switch.route(self.from, self.to);
        match fate {
            Fate::Refused => return Err(unreachable("connection refused")),
            Fate::Lost => return no_answer().await,
            Fate::Delivered(delay) => tokio::time::sleep(delay).await,
        }
        let Some(target) = self.switch.host(self.to, target_life) else {
            return Err(unreachable("connection reset"));
        };
        let reply = serve(&target, rpc, &payload)
            .await
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        if !self.switch.is_up(self.to, target_life) {
            // It crashed before its answer left.
            return no_answer().await;
        }
        match self.switch.route(self.to, self.from).0 {
            Fate::Delivered(delay) => tokio::time::sleep(delay).await,
            Fate::Refused | Fate::Lost => return no_answer().await,
        }
        let result: Result<Resp, typ::RaftError<E>> =
            decode(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }
}

impl RaftNetwork<TypeConfig> for SimPeer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, typ::RpcError> {
        let indexes: Vec<u64> = rpc.entries.iter().map(|e| e.log_id.index).collect();
        let first = rpc.prev_log_id.map_or(0, |p| p.index + 1);
        if indexes
            .iter()
            .enumerate()
            .any(|(i, index)| *index != first + i as u64)
        {
            self.history.violation(format!(
                "replication: node {} sent node {} entries {indexes:?} after {}",
                self.from,
                self.to,
                rpc.prev_log_id
                    .map_or("the start".to_string(), |p| p.to_string())
            ));
        }
        self.send(Rpc::Append, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, typ::RpcError<InstallSnapshotError>> {
        self.send(Rpc::Snapshot, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, typ::RpcError> {
        self.send(Rpc::Vote, &rpc, &option).await
    }
}
