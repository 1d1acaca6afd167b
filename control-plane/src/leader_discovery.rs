//! Discovery on the leader: while this node leads, it lists the registered
//! upstreams' tools and commits what it finds; when it stops leading, it stops
//! and drops the connections. Per-tenant upstreams are listed with one
//! tenant's secrets (see `quiver_upstream::UpstreamSet`), opened with this
//! node's cluster key.

use std::{sync::Arc, time::Duration};

use openraft::ServerState;
use quiver_proto::manifest::ServerEntry;
use quiver_upstream::{UpstreamConfig, UpstreamSet};
use tokio_util::sync::CancellationToken;

use crate::{
    cluster_key::ClusterKey,
    command::{Command, Envelope},
    discovery::{Discovery, DiscoverySink},
    node_metrics::timed_commit,
    raft::{NodeId, Raft, state_machine::SharedState},
    sealed_secrets::{SealedSecretSource, SecretsByTenant},
};

/// Discovery's results become replicated commands; results arriving within
/// 25 ms of each other (70 upstreams coming up) go in one entry.
pub(crate) struct RaftSink {
    raft: Raft,
    shared: Arc<SharedState>,
    in_flight: Arc<tokio::sync::watch::Sender<usize>>,
    batch: Arc<std::sync::Mutex<Vec<ServerEntry>>>,
}

impl RaftSink {
    pub(crate) fn new(raft: Raft, shared: Arc<SharedState>) -> RaftSink {
        RaftSink {
            raft,
            shared,
            in_flight: Arc::new(tokio::sync::watch::channel(0).0),
            batch: Arc::default(),
        }
    }

    /// Resolves when no result is waiting to be committed.
    pub(crate) async fn committed(&self) {
        let mut rx = self.in_flight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

impl DiscoverySink for RaftSink {
    fn catalogue(&self) -> quiver_screen::Catalogue {
        let state = self.shared.lock();
        let mut catalogue = quiver_screen::Catalogue::of_entries(state.catalogue.values());
        for (server, held) in &state.held {
            catalogue.add(server, held.keys().map(String::as_str));
        }
        catalogue
    }

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
            let write = raft.client_write(Envelope::now(
                "discovery",
                Command::RecordDiscovery { entries },
            ));
            if let Err(e) = timed_commit(write).await {
                tracing::warn!("recording discovery of {count} upstreams failed: {e}");
            }
            in_flight.send_modify(|n| *n = n.saturating_sub(count));
        });
    }
}

/// What leading discovery needs: whether this node leads (from Raft's
/// metrics), the registry (from the applied state), and discovery itself.
pub(crate) struct LeaderDiscovery {
    /// This node.
    pub(crate) id: NodeId,
    /// Its Raft handle (metrics only).
    pub(crate) raft: Raft,
    /// The applied state (the upstream registry).
    pub(crate) shared: Arc<SharedState>,
    /// Discovery, fed into a [`RaftSink`].
    pub(crate) discovery: Arc<Discovery>,
    /// The upstream set discovery uses (shared with `quiver dev`'s
    /// in-process executor), given the tenants' sealed secrets.
    pub(crate) upstreams: Arc<UpstreamSet>,
    /// Opens them.
    pub(crate) cluster_key: Option<Arc<ClusterKey>>,
    /// Stops the loop.
    pub(crate) shutdown: CancellationToken,
}

impl LeaderDiscovery {
    /// Runs discovery while this node leads, over the registered upstreams;
    /// stops (and drops the connections) when it no longer leads.
    pub(crate) async fn run(self) {
        let mut metrics = self.raft.metrics();
        let mut applied = self.shared.subscribe_applied();
        let mut registry: Option<Vec<UpstreamConfig>> = None;
        let mut secrets: Option<SecretsByTenant> = None;
        loop {
            // Every node keeps its set's secrets current, leading or not: in
            // `quiver dev` the in-process executor calls through this set.
            let sealed = self.shared.lock().secrets.clone();
            if secrets.as_ref() != Some(&sealed) {
                let source = SealedSecretSource::new(sealed.clone(), self.cluster_key.clone());
                for retired in self.upstreams.install_secrets(Arc::new(source)) {
                    tokio::spawn(async move { retired.shutdown().await });
                }
                secrets = Some(sealed);
            }
            let leading = {
                let m = metrics.borrow_and_update();
                m.state == ServerState::Leader && m.current_leader == Some(self.id)
            };
            let wanted: Vec<UpstreamConfig> = if leading {
                self.shared
                    .lock()
                    .upstreams
                    .values()
                    .map(|u| u.config.clone())
                    .collect()
            } else {
                Vec::new()
            };
            if registry.as_ref() != Some(&wanted) {
                self.discovery.sync(wanted.clone()).await;
                registry = Some(wanted);
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { break },
                changed = applied.changed() => if changed.is_err() { break },
                () = self.shutdown.cancelled() => break,
            }
        }
        self.discovery.sync(Vec::new()).await;
    }
}
