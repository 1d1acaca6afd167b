//! `quiver control-plane`: one member of the Raft-replicated control plane.

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Context as _;
use clap::Args;
use quiver_control_plane::{ControlPlaneNode, NodeConfig, RaftTuning, raft::network::ClusterTls};
use tokio_util::sync::CancellationToken;

use super::{cluster_key::ClusterKeyArgs, logging, readiness, serving::stop_signal};
use crate::config::{ControlPlaneFile, ControlPlaneSettings};

/// Arguments of `quiver control-plane`.
#[derive(Args, Debug)]
pub struct ControlPlaneArgs {
    /// A TOML file with a `[control_plane]` table holding any of these settings
    /// (see deploy/control-plane.toml); flags and environment win over it.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// This node's id: a positive integer, unique in the cluster, never reused.
    #[arg(long, env = "QUIVER_CONTROL_PLANE_NODE_ID")]
    node_id: Option<u64>,
    /// Take the node id from this host's name, which ends in `-N` (a
    /// StatefulSet pod such as `quiver-cp-0`): node N + 1. `--bootstrap`
    /// then applies to node 1 only.
    #[arg(long, conflicts_with = "node_id")]
    node_id_from_hostname: bool,
    /// gRPC listen address (Raft between nodes, and `quiver ctl`).
    #[arg(long, env = "QUIVER_CONTROL_PLANE_LISTEN")]
    listen: Option<SocketAddr>,
    /// Data directory (Raft log, vote, snapshots). Keep it on durable storage.
    #[arg(long, env = "QUIVER_CONTROL_PLANE_DATA")]
    data: Option<PathBuf>,
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
    /// Leader heartbeat interval, ms (default 100).
    #[arg(long)]
    heartbeat_ms: Option<u64>,
    /// Minimum election timeout, ms; the maximum is twice this (default 400).
    #[arg(long)]
    election_timeout_ms: Option<u64>,
    /// Build a snapshot (and purge the log behind it) every N entries (default 1000).
    #[arg(long)]
    snapshot_every: Option<u64>,
    #[command(flatten)]
    cluster_key: ClusterKeyArgs,
    /// Serve `/healthz`, `/readyz` (a leader known) and `/metrics` on this
    /// HTTP address; port 0 picks one.
    #[arg(long, env = "QUIVER_CONTROL_PLANE_ADMIN_LISTEN")]
    admin_listen: Option<SocketAddr>,
    /// Seed a new cluster from this backup (`quiver ctl snapshot save`, or
    /// a file of `--backup-dir`): the empty data directory is made a
    /// one-node cluster holding the backup's state, to which the other
    /// nodes are added as at a first start. The cluster key the backup's
    /// secrets were sealed with must be given. Refused when the data
    /// directory holds anything; ignored on later starts.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
    /// Write a backup here every `--backup-every` while this node leads
    /// (give every node the same flags: only the leader writes).
    #[arg(long, env = "QUIVER_CONTROL_PLANE_BACKUP_DIR", value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    /// Time between backups (`30m`, `1h`, `1d`).
    #[arg(long, value_parser = humantime::parse_duration, requires = "backup_dir")]
    backup_every: Option<std::time::Duration>,
    /// Backups kept in `--backup-dir`; older ones are removed (default 24).
    #[arg(long, requires = "backup_dir")]
    backup_keep: Option<usize>,
}

/// The backup `path` read, checked, and its secrets opened with `key`;
/// `None` when `data` already holds a cluster (a restarted node that was
/// restored before: `--restore` applies to the first start only).
fn backup_to_restore(
    path: &std::path::Path,
    data: &std::path::Path,
    node_id: u64,
    key: Option<&quiver_control_plane::cluster_key::ClusterKey>,
) -> anyhow::Result<Option<std::sync::Arc<quiver_control_plane::backup::Backup>>> {
    let holds_a_cluster = data
        .join(quiver_control_plane::raft::log_store::DATA_FILE)
        .exists()
        && !quiver_control_plane::raft::log_store::DataDir::open(data, node_id)?
            .is_empty()
            .with_context(|| format!("reading {}", data.display()))?;
    if holds_a_cluster {
        tracing::info!(
            data = %data.display(),
            "the data directory holds a cluster already; --restore ignored"
        );
        return Ok(None);
    }
    let backup = quiver_control_plane::backup::read(path)
        .with_context(|| format!("--restore {}", path.display()))?;
    backup
        .check_key(key)
        .with_context(|| format!("--restore {}", path.display()))?;
    let header = &backup.header;
    tracing::info!(
        file = %path.display(),
        index = header.raft_index,
        manifest_version = header.manifest_version,
        tenants = header.counts.tenants,
        "restoring from a backup"
    );
    Ok(Some(std::sync::Arc::new(backup)))
}

/// Node N + 1 for a host name ending in `-N`.
fn node_id_from_hostname() -> anyhow::Result<u64> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .context("--node-id-from-hostname: reading the host name")?
        .trim()
        .to_string();
    parse_ordinal(&name).with_context(|| {
        format!("--node-id-from-hostname: the host name `{name}` does not end in `-N` (a StatefulSet pod name does)")
    })
}

/// `quiver-cp-2` → 3.
fn parse_ordinal(name: &str) -> Option<u64> {
    let (_, ordinal) = name.rsplit_once('-')?;
    ordinal.parse::<u64>().ok()?.checked_add(1)
}

/// Runs the node until Ctrl-C / SIGTERM.
pub async fn run(args: ControlPlaneArgs) -> anyhow::Result<()> {
    let (file, telemetry) = match &args.config {
        Some(path) => {
            let loaded = ControlPlaneFile::load(path)?;
            (loaded.control_plane, loaded.telemetry)
        }
        None => (ControlPlaneSettings::default(), Default::default()),
    };
    let _telemetry = logging::init("control-plane", &telemetry, "info,openraft=warn")?;
    let origin = args
        .config
        .as_ref()
        .map_or("the command line".to_string(), |p| p.display().to_string());
    let from_hostname = if args.node_id_from_hostname {
        Some(node_id_from_hostname()?)
    } else {
        None
    };
    let node_id = from_hostname
        .or(args.node_id)
        .or(file.node_id)
        .with_context(|| {
            format!("no node id: pass --node-id N or set control_plane.node_id in {origin}")
        })?;
    if node_id == 0 {
        anyhow::bail!("the node id must be a positive integer");
    }
    let listen = args.listen.or(file.listen).with_context(|| {
        format!(
            "no listen address: pass --listen HOST:PORT or set control_plane.listen in {origin}"
        )
    })?;
    let data = args.data.clone().or(file.data.clone()).with_context(|| {
        format!("no data directory: pass --data DIR or set control_plane.data in {origin}")
    })?;
    let tls = ClusterTls::from_flags(
        args.tls_ca.as_ref(),
        args.tls_cert.as_ref(),
        args.tls_key.as_ref(),
    )
    .or(file.tls.clone());
    let heartbeat_ms = args.heartbeat_ms.or(file.heartbeat_ms).unwrap_or(100);
    let election_ms = args
        .election_timeout_ms
        .or(file.election_timeout_ms)
        .unwrap_or(400);
    let snapshot_every = args.snapshot_every.or(file.snapshot_every).unwrap_or(1000);
    if heartbeat_ms == 0 || heartbeat_ms >= election_ms {
        anyhow::bail!(
            "the heartbeat ({heartbeat_ms} ms) must be positive and shorter than the election timeout ({election_ms} ms)"
        );
    }
    // With ids from host names every pod has the same flags: only node 1
    // makes the cluster, the others are added to it.
    let bootstrap = (args.bootstrap || file.bootstrap) && (from_hostname.is_none() || node_id == 1);
    let cluster_key = args.cluster_key.load()?;
    if cluster_key.is_none() {
        tracing::info!(
            "no cluster key (QUIVER_CLUSTER_KEY or --cluster-key-file): `quiver ctl secret set` will be refused"
        );
    }
    let restore = match &args.restore {
        Some(path) => backup_to_restore(path, &data, node_id, cluster_key.as_deref())?,
        None => None,
    };
    let backup_every = match (args.backup_every, &file.backup_every) {
        (Some(every), _) => every,
        (None, Some(text)) => humantime::parse_duration(text).with_context(|| {
            format!("control_plane.backup_every = {text:?} in {origin}: write a duration such as \"30m\" or \"1h\"")
        })?,
        (None, None) => std::time::Duration::from_secs(3600),
    };
    let backups = args
        .backup_dir
        .clone()
        .or(file.backup_dir.clone())
        .map(|dir| quiver_control_plane::backup::BackupSchedule {
            dir,
            every: backup_every,
            keep: args.backup_keep.or(file.backup_keep).unwrap_or(24),
        });
    let screen = quiver_screen::Screen::get();
    screen.set_detector(file.screening_detector.unwrap_or(true));
    tracing::info!(screening = %screen.describe(), "screening tool definitions");
    let config = NodeConfig {
        node_id,
        listen,
        advertise: args.advertise.clone().or(file.advertise.clone()),
        data: data.clone(),
        bootstrap,
        tls,
        tuning: RaftTuning {
            heartbeat_ms,
            election_ms: (election_ms, election_ms * 2),
            snapshot_every,
            keep_behind_snapshot: (snapshot_every / 5).max(10),
        },
        cluster_key,
        max_keys_per_tenant: file
            .max_keys_per_tenant
            .unwrap_or(quiver_control_plane::node::DEFAULT_MAX_KEYS_PER_TENANT),
        restore,
        backups,
    };
    let shutdown = CancellationToken::new();
    let (node, bound) = ControlPlaneNode::start(config, shutdown.clone()).await?;
    if bootstrap {
        // A fresh one-node cluster elects itself at once; say so before serving.
        node.wait_for_leader(std::time::Duration::from_secs(10))
            .await;
    }
    let raft = node.raft().clone();
    let health =
        quiver_telemetry::Health::new("control-plane").check("leader", move || {
            match raft.metrics().borrow().current_leader {
                Some(leader) => Ok(format!("node {leader}")),
                None => Err("no leader known (an election is under way or no quorum)".into()),
            }
        });
    let admin_shutdown = CancellationToken::new();
    let admin = readiness::open_admin(
        args.admin_listen.or(file.admin_listen),
        Some(node.addr()),
        &health,
        &admin_shutdown,
    )
    .await?;
    let stop = stop_signal();
    println!(
        "quiver control-plane: node {} serving on {bound} (advertised as {}, data {}){}",
        node.id(),
        node.addr(),
        data.display(),
        readiness::admin_banner(&admin)
    );
    stop.await;
    tracing::info!("shutting down");
    health.start_draining();
    node.shutdown().await;
    admin_shutdown.cancel();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_ordinal;

    #[test]
    fn a_statefulset_pod_name_gives_its_ordinal_plus_one() {
        assert_eq!(parse_ordinal("quiver-cp-0"), Some(1));
        assert_eq!(parse_ordinal("quiver-cp-12"), Some(13));
        assert_eq!(parse_ordinal("quiver-cp"), None);
        assert_eq!(parse_ordinal("host"), None);
        assert_eq!(parse_ordinal("quiver-cp-x"), None);
    }
}
