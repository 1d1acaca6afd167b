//! `quiver bench control-plane`: write latency on one and three nodes, the time
//! from a committed manifest change to every watcher holding it, and the time
//! from losing the leader to the first accepted write. Nodes run in this
//! process but talk real gRPC over loopback and fsync to a temporary directory.

use std::{sync::Arc, time::Duration};

use clap::Args;
use quiver_control_plane::{
    ControlPlaneNode, ManifestStore, NodeConfig, RaftTuning,
    admin::AdminRequest,
    client::AdminClient,
    command::Command,
    node_role::NodeRole,
    tenant::TenantPatch,
    watcher::{WatchConfig, spawn_watcher},
};
use quiver_proto::manifest::ServerEntry;
use quiver_upstream::UpstreamConfig;
use tokio::time::Instant;

use crate::executor::percentile;
use tokio_util::sync::CancellationToken;

/// Arguments of `quiver bench control-plane`.
#[derive(Args, Debug)]
pub struct ControlPlaneBenchArgs {
    /// Writes measured per cluster size.
    #[arg(long, default_value_t = 300)]
    writes: usize,
    /// Watchers of the manifest.
    #[arg(long, default_value_t = 16)]
    watchers: usize,
    /// Manifest changes measured.
    #[arg(long, default_value_t = 50)]
    changes: usize,
    /// Leader kills measured.
    #[arg(long, default_value_t = 5)]
    failovers: usize,
    /// Election timeouts (minimum, ms; the maximum is twice it) to measure
    /// failover with, comma-separated; heartbeats are a quarter of each.
    #[arg(long, value_delimiter = ',', default_values_t = [400u64, 150])]
    election_timeouts_ms: Vec<u64>,
}

struct Cluster {
    nodes: Vec<Option<(Arc<ControlPlaneNode>, CancellationToken)>>,
    configs: Vec<NodeConfig>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    async fn start(size: u64) -> anyhow::Result<Cluster> {
        Cluster::start_tuned(size, RaftTuning::default()).await
    }

    async fn start_tuned(size: u64, tuning: RaftTuning) -> anyhow::Result<Cluster> {
        let dir = tempfile::tempdir()?;
        let mut configs = Vec::new();
        for id in 1..=size {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            let listen = listener.local_addr()?;
            drop(listener);
            configs.push(NodeConfig {
                node_id: id,
                listen,
                advertise: None,
                data: dir.path().join(format!("n{id}")),
                bootstrap: id == 1,
                tls: None,
                tuning: tuning.clone(),
                cluster_key: None,
                max_keys_per_tenant: quiver_control_plane::node::DEFAULT_MAX_KEYS_PER_TENANT,
                restore: None,
                backups: None,
            });
        }
        let mut cluster = Cluster {
            nodes: Vec::new(),
            configs,
            _dir: dir,
        };
        for i in 0..size as usize {
            let node = cluster.boot(i).await?;
            cluster.nodes.push(Some(node));
        }
        let first = cluster.node(0);
        first.wait_for_leader(Duration::from_secs(10)).await;
        for i in 1..size as usize {
            let addr = cluster.configs[i].listen.to_string();
            let id = cluster.configs[i].node_id;
            first
                .admin(AdminRequest::AddLearner { node_id: id, addr })
                .await?;
            first.admin(AdminRequest::Promote { node_id: id }).await?;
        }
        Ok(cluster)
    }

    async fn boot(&self, i: usize) -> anyhow::Result<(Arc<ControlPlaneNode>, CancellationToken)> {
        let stop = CancellationToken::new();
        let (node, _) = ControlPlaneNode::start(self.configs[i].clone(), stop.clone()).await?;
        Ok((node, stop))
    }

    fn node(&self, i: usize) -> Arc<ControlPlaneNode> {
        self.nodes[i]
            .as_ref()
            .map(|(n, _)| n.clone())
            .expect("node running")
    }

    fn endpoints(&self) -> Vec<String> {
        self.configs.iter().map(|c| c.listen.to_string()).collect()
    }

    fn leader_index(&self) -> Option<usize> {
        self.nodes.iter().position(|n| {
            n.as_ref().is_some_and(|(node, _)| {
                node.raft().metrics().borrow().current_leader == Some(node.id())
            })
        })
    }

    async fn stop(&mut self, i: usize) {
        if let Some((node, stop)) = self.nodes[i].take() {
            stop.cancel();
            node.shutdown().await;
        }
    }

    async fn shutdown(mut self) {
        for i in 0..self.nodes.len() {
            self.stop(i).await;
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

async fn write_latency(size: u64, writes: usize) -> anyhow::Result<Vec<Duration>> {
    let cluster = Cluster::start(size).await?;
    let mut client = AdminClient::new(cluster.endpoints(), None);
    let mut samples = Vec::with_capacity(writes);
    for n in 0..writes + 20 {
        let started = Instant::now();
        client
            .call(&AdminRequest::TenantCreate {
                id: format!("bench-{n}"),
                patch: TenantPatch::default(),
            })
            .await?;
        // The first writes warm connections up.
        if n >= 20 {
            samples.push(started.elapsed());
        }
    }
    cluster.shutdown().await;
    samples.sort();
    Ok(samples)
}

async fn watch_propagation(watchers: usize, changes: usize) -> anyhow::Result<Vec<Duration>> {
    let cluster = Cluster::start(3).await?;
    let leader = cluster.node(cluster.leader_index().unwrap_or(0));
    let shutdown = CancellationToken::new();
    let endpoints = cluster.endpoints();
    let mut stores = Vec::new();
    for w in 0..watchers {
        let store = Arc::new(ManifestStore::new());
        spawn_watcher(
            WatchConfig {
                // Spread the watchers over every node, as a fleet would be.
                endpoints: vec![endpoints[w % endpoints.len()].clone()],
                tls: None,
                node: format!("bench-watcher-{w}"),
                role: NodeRole::Edge,
                health: Default::default(),
                contact: Default::default(),
                grpc: None,
                mcp: None,
            },
            store.clone(),
            None,
            shutdown.clone(),
        );
        stores.push(store);
    }
    let upstream = UpstreamConfig::stdio("bench", "/nonexistent/quiver-bench-upstream", vec![]);
    leader
        .write(
            "bench",
            Command::PutUpstream {
                upstream,
                quarantine: false,
                replace: false,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut samples = Vec::with_capacity(changes);
    for n in 0..changes {
        let tool: quiver_proto::tool::ToolDef = serde_json::from_value(serde_json::json!({
            "name": "probe",
            "description": format!("revision {n}"),
            "inputSchema": {"type": "object"},
        }))?;
        let entry = ServerEntry {
            id: "bench".into(),
            description: String::new(),
            namespace: "bench".into(),
            tags: vec![],
            group: String::new(),
            validation: Default::default(),
            features: vec![],
            tools: vec![tool],
            findings: Default::default(),
        };
        let mut receivers: Vec<_> = stores.iter().map(|s| s.subscribe()).collect();
        let started = Instant::now();
        let version = leader
            .write(
                "bench",
                Command::RecordDiscovery {
                    entries: vec![entry],
                },
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .manifest_version;
        for rx in &mut receivers {
            tokio::time::timeout(
                Duration::from_secs(10),
                rx.wait_for(|m| m.version >= version),
            )
            .await
            .map_err(|_| anyhow::anyhow!("a watcher never saw version {version}"))??;
        }
        samples.push(started.elapsed());
    }
    shutdown.cancel();
    cluster.shutdown().await;
    samples.sort();
    Ok(samples)
}

/// Per kill: (leader elected, first write accepted), both from the kill.
async fn failover(
    rounds: usize,
    election_ms: u64,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let tuning = RaftTuning {
        heartbeat_ms: (election_ms / 4).max(10),
        election_ms: (election_ms, election_ms * 2),
        ..RaftTuning::default()
    };
    let mut cluster = Cluster::start_tuned(3, tuning).await?;
    let mut client = AdminClient::new(cluster.endpoints(), None)
        .with_timeout(Duration::from_secs(2))
        .with_election_wait(Duration::from_secs(30));
    let mut elected = Vec::new();
    let mut written = Vec::new();
    for n in 0..rounds {
        // Make sure the cluster is healthy and every node caught up.
        client
            .call(&AdminRequest::TenantCreate {
                id: format!("pre-{n}"),
                patch: TenantPatch::default(),
            })
            .await?;
        let Some(leader) = cluster.leader_index() else {
            anyhow::bail!("no leader before the kill");
        };
        let survivors: Vec<Arc<ControlPlaneNode>> = (0..cluster.nodes.len())
            .filter(|i| *i != leader)
            .map(|i| cluster.node(i))
            .collect();
        let old = cluster.node(leader).id();
        let started = Instant::now();
        cluster.stop(leader).await;
        let watch_election = async {
            let mut metrics = survivors[0].raft().metrics();
            let _ = metrics
                .wait_for(|m| m.current_leader.is_some_and(|l| l != old))
                .await;
            started.elapsed()
        };
        let write = async {
            let result = client
                .call(&AdminRequest::TenantCreate {
                    id: format!("after-{n}"),
                    patch: TenantPatch::default(),
                })
                .await;
            (result, started.elapsed())
        };
        let (election, (result, first_write)) = tokio::join!(watch_election, write);
        result.map_err(|e| anyhow::anyhow!("no write accepted after the kill: {e}"))?;
        elected.push(election);
        written.push(first_write);
        let node = cluster.boot(leader).await?;
        // The restarted node rejoins before the next round.
        node.0.wait_for_leader(Duration::from_secs(10)).await;
        cluster.nodes[leader] = Some(node);
    }
    cluster.shutdown().await;
    elected.sort();
    written.sort();
    Ok((elected, written))
}

/// Runs the benchmark and prints markdown tables.
pub async fn run(args: ControlPlaneBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench control-plane` for numbers"
        );
    }
    println!(
        "## Control plane: write latency (tenant create through `quiver ctl`'s client, loopback gRPC, fsync per entry)\n"
    );
    println!("| nodes | writes | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|");
    for size in [1u64, 3] {
        let s = write_latency(size, args.writes).await?;
        println!(
            "| {size} | {} | {} | {} | {} |",
            s.len(),
            ms(percentile(&s, 0.5)),
            ms(percentile(&s, 0.99)),
            ms(*s.last().unwrap_or(&Duration::ZERO))
        );
    }
    let s = watch_propagation(args.watchers, args.changes).await?;
    println!("\n## Control plane: committed manifest change → every watcher holds it\n");
    println!("| nodes | watchers | changes | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| 3 | {} | {} | {} | {} | {} |",
        args.watchers,
        s.len(),
        ms(percentile(&s, 0.5)),
        ms(percentile(&s, 0.99)),
        ms(*s.last().unwrap_or(&Duration::ZERO))
    );
    println!("\n## Control plane: leader lost → new leader elected, → first accepted write\n");
    println!(
        "| nodes | election timeout ms | heartbeat ms | kills | from the kill to | p50 ms | max ms |"
    );
    println!("|---|---|---|---|---|---|---|");
    for election_ms in &args.election_timeouts_ms {
        let (elected, written) = failover(args.failovers, *election_ms).await?;
        for (what, s) in [
            ("a new leader elected", &elected),
            ("the first accepted write", &written),
        ] {
            println!(
                "| 3 | {election_ms}-{} | {} | {} | {what} | {} | {} |",
                election_ms * 2,
                (election_ms / 4).max(10),
                s.len(),
                ms(percentile(s, 0.5)),
                ms(*s.last().unwrap_or(&Duration::ZERO))
            );
        }
    }
    Ok(())
}
