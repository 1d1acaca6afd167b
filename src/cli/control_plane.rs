//! `quiver control-plane`: one member of the Raft-replicated control plane.

use std::{net::SocketAddr, path::PathBuf};

use clap::Args;
use quiver_control_plane::{ControlPlaneNode, NodeConfig, RaftTuning, raft::network::ClusterTls};
use tokio_util::sync::CancellationToken;

use super::{dev::wait_for_signal, logging};

/// Arguments of `quiver control-plane`.
#[derive(Args, Debug)]
pub struct ControlPlaneArgs {
    /// This node's id: a positive integer, unique in the cluster, never reused.
    #[arg(long, env = "QUIVER_CONTROL_PLANE_NODE_ID")]
    node_id: u64,
    /// gRPC listen address (Raft between nodes, and `quiver ctl`).
    #[arg(long, env = "QUIVER_CONTROL_PLANE_LISTEN")]
    listen: SocketAddr,
    /// Data directory (Raft log, vote, snapshots). Keep it on durable storage.
    #[arg(long, env = "QUIVER_CONTROL_PLANE_DATA")]
    data: PathBuf,
    /// Make a fresh data directory a one-node cluster (ignored once it holds one).
    #[arg(long)]
    bootstrap: bool,
    /// Address the other nodes and clients use, if not the listen address
    /// (e.g. a DNS name when listening on 0.0.0.0).
    #[arg(long, env = "QUIVER_CONTROL_PLANE_ADVERTISE")]
    advertise: Option<String>,
    /// CA certificate (PEM) for mTLS between nodes and from clients.
    #[arg(long, requires_all = ["tls_cert", "tls_key"])]
    tls_ca: Option<PathBuf>,
    /// This node's certificate (PEM).
    #[arg(long, requires = "tls_ca")]
    tls_cert: Option<PathBuf>,
    /// This node's key (PEM).
    #[arg(long, requires = "tls_ca")]
    tls_key: Option<PathBuf>,
    /// Leader heartbeat interval, ms.
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
    /// Minimum election timeout, ms (the maximum is twice this).
    #[arg(long, default_value_t = 400)]
    election_timeout_ms: u64,
    /// Build a snapshot (and purge the log behind it) every N entries.
    #[arg(long, default_value_t = 1000)]
    snapshot_every: u64,
}

/// Runs the node until Ctrl-C / SIGTERM.
pub async fn run(args: ControlPlaneArgs) -> anyhow::Result<()> {
    logging::init("info,openraft=warn");
    if args.node_id == 0 {
        anyhow::bail!("--node-id must be a positive integer");
    }
    let tls = match (&args.tls_ca, &args.tls_cert, &args.tls_key) {
        (Some(ca), Some(cert), Some(key)) => Some(ClusterTls {
            ca: ca.clone(),
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    let config = NodeConfig {
        node_id: args.node_id,
        listen: args.listen,
        advertise: args.advertise.clone(),
        data: args.data.clone(),
        bootstrap: args.bootstrap,
        tls,
        tuning: RaftTuning {
            heartbeat_ms: args.heartbeat_ms,
            election_ms: (args.election_timeout_ms, args.election_timeout_ms * 2),
            snapshot_every: args.snapshot_every,
            keep_behind_snapshot: (args.snapshot_every / 5).max(10),
        },
    };
    let shutdown = CancellationToken::new();
    let (node, bound) = ControlPlaneNode::start(config, shutdown.clone()).await?;
    if args.bootstrap {
        // A fresh one-node cluster elects itself at once; say so before serving.
        node.wait_for_leader(std::time::Duration::from_secs(10))
            .await;
    }
    println!(
        "quiver control-plane: node {} serving on {bound} (advertised as {}, data {})",
        node.id(),
        node.addr(),
        args.data.display()
    );
    wait_for_signal().await;
    tracing::info!("shutting down");
    node.shutdown().await;
    Ok(())
}
