//! The network between the nodes: a loopback TCP proxy in front of each node,
//! whose address is what that node advertises (so every Raft message to it
//! passes the proxy), and which the test can cut and heal. A proxy tells which
//! node is calling by the process that owns the connection
//! ([`owner_of_connection`]); connections from any other process (the test's
//! clients following a leader redirect) are never cut: the clients stand
//! outside the partition.
//!
//! Cutting drops the relayed connections that cross the cut and refuses new
//! ones (accepted, then closed at once). While any node is isolated, a
//! connection whose caller cannot be told is refused too, so a partition never
//! leaks.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use quiver_control_plane::raft::NodeId;
use tokio::{net::TcpListener, sync::watch, task::AbortHandle};

use super::socket_owner::owner_of_connection;

/// Who opened a connection to a proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    Node(NodeId),
    /// Not a node: the test's clients.
    Client,
    /// The kernel could not name the socket (it closed already).
    Unknown,
}

#[derive(Default)]
struct Links {
    /// Node processes by pid (updated on every start).
    pids: BTreeMap<u32, NodeId>,
    /// Nodes cut off from every other node.
    isolated: BTreeSet<NodeId>,
    /// Relayed connections: caller, callee, the relay task.
    open: Vec<(Caller, NodeId, AbortHandle)>,
}

impl Links {
    fn cut(&self, from: Caller, to: NodeId) -> bool {
        match from {
            Caller::Client => false,
            Caller::Unknown => !self.isolated.is_empty(),
            Caller::Node(from) => {
                from != to && (self.isolated.contains(&from) || self.isolated.contains(&to))
            }
        }
    }
}

/// The proxies and the partition state they share.
#[derive(Clone, Default)]
pub struct PartitionableNetwork {
    links: Arc<Mutex<Links>>,
}

/// One node's proxy; it relays once [`NodeProxy::relay_to`] names the node's
/// own address.
pub struct NodeProxy {
    /// The address the node advertises, `127.0.0.1:<port>`.
    pub addr: String,
    target: watch::Sender<Option<String>>,
}

impl NodeProxy {
    /// Relays connections to `direct` (the node's own listener) from now on.
    pub fn relay_to(&self, direct: &str) {
        self.target.send_replace(Some(direct.to_string()));
    }
}

impl PartitionableNetwork {
    /// A network with no proxies and no cut.
    pub fn new() -> PartitionableNetwork {
        PartitionableNetwork::default()
    }

    /// Starts the proxy in front of node `to` on a fresh loopback port.
    pub async fn proxy(&self, to: NodeId) -> NodeProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a proxy port");
        let port = listener.local_addr().expect("proxy address").port();
        let (target, mut relay_to) = watch::channel(None::<String>);
        let links = self.links.clone();
        tokio::spawn(async move {
            while let Ok((inbound, peer)) = listener.accept().await {
                let target = match relay_to.wait_for(Option::is_some).await {
                    Ok(t) => t.clone().unwrap_or_default(),
                    Err(_) => return,
                };
                let links = links.clone();
                tokio::spawn(async move {
                    let nodes: Vec<u32> = {
                        let links = links.lock().expect("links lock");
                        links.pids.keys().copied().collect()
                    };
                    let owner = tokio::task::spawn_blocking(move || {
                        owner_of_connection(peer.port(), port, &nodes)
                    })
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()));
                    let mut links = links.lock().expect("links lock");
                    let caller = match owner {
                        Ok(Some(pid)) => links
                            .pids
                            .get(&pid)
                            .map_or(Caller::Unknown, |n| Caller::Node(*n)),
                        // Not a node: the test process (or a `quiver ctl` it ran).
                        Ok(None) => Caller::Client,
                        Err(_) => Caller::Unknown,
                    };
                    if links.cut(caller, to) {
                        return; // dropping `inbound` closes it
                    }
                    let relay = tokio::spawn(async move {
                        let mut inbound = inbound;
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    links.open.retain(|(.., relay)| !relay.is_finished());
                    links.open.push((caller, to, relay.abort_handle()));
                });
            }
        });
        NodeProxy {
            addr: format!("127.0.0.1:{port}"),
            target,
        }
    }

    /// Node `id` now runs as process `pid` (forgetting its earlier processes).
    pub fn node_started(&self, id: NodeId, pid: u32) {
        let mut links = self.links.lock().expect("links lock");
        links.pids.retain(|_, n| *n != id);
        links.pids.insert(pid, id);
    }

    /// Cuts node `id` off from every other node, both ways.
    pub fn isolate(&self, id: NodeId) {
        let mut links = self.links.lock().expect("links lock");
        links.isolated.insert(id);
        let open = std::mem::take(&mut links.open);
        for (caller, to, relay) in open {
            if links.cut(caller, to) {
                relay.abort();
            } else {
                links.open.push((caller, to, relay));
            }
        }
    }

    /// Heals every cut.
    pub fn heal(&self) {
        self.links.lock().expect("links lock").isolated.clear();
    }
}
