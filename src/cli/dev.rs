//! `quiver dev`: the embedded default. A one-node control plane with a data
//! directory (its state survives restarts), an in-process executor holding the
//! upstream connections, and the edge, over a config file, a catalog, or the
//! demo. The edge takes its manifest from the control plane's `WatchManifest`
//! stream over loopback gRPC: the same path as a distributed deployment.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Args;
use quiver_contract::{Dispatch, Limits, Scripts};
use quiver_control_plane::{
    ControlPlaneNode, Discovery, LocalCatalogue, ManifestStore, NodeConfig, RaftTuning,
    admin::AdminTransport,
    command::Command,
    node_role::NodeRole,
    watcher::{ReportedHealth, WatchConfig, spawn_watcher},
};
use quiver_edge::{Gateway, auth::AuthMode};
use quiver_executor::{
    LocalExecutor,
    audit::{AuditedScripts, Auditor},
    metering::{Leases, Metered},
    pool::{PoolConfig, WorkerCommand, WorkerPool},
    script::{LocalScripts, ScriptRunner},
    stash::StashStore,
};
use quiver_fleet::RemoteExecutor;
use quiver_proto::{catalog::Catalog, tenant::TenantDirectory};
use quiver_upstream::{UpstreamConfig, UpstreamSet};
use tokio_util::sync::CancellationToken;

use super::{
    cluster_key::{ClusterKeyArgs, KeyOrigin},
    logging, readiness,
};
use crate::config::DevConfig;

/// Arguments of `quiver dev`.
#[derive(Args, Debug)]
pub struct DevArgs {
    /// Configuration file (see deploy/quiver.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The longest wall time a code-mode script that may run as a task is
    /// granted, whatever its tenant's `--task-wall` asks (`20s`, `5m`).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    task_wall_max: std::time::Duration,
    #[command(flatten)]
    edge: crate::config::EdgeFlags,
    /// Serve every server of this catalog file as a mock upstream.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Serve one MCP session on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Where tool calls and scripts run: `in-process` (default) or `child` (a
    /// `quiver executor` child process, reached over gRPC).
    #[arg(long, default_value = "in-process", value_parser = ["in-process", "child"])]
    executor: String,
    /// Data directory of the embedded control plane, and of search's tool
    /// vectors and outcome signals (`search/`) unless `edge.search_data_dir`
    /// is set (overrides the config; default `.quiver/dev` in the current directory).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Where the embedded control plane serves gRPC for `quiver ctl` (overrides
    /// the config; default 127.0.0.1:7400; port 0 picks a free one).
    #[arg(long)]
    control_plane_listen: Option<SocketAddr>,
    /// Make the upstream registry exactly the config's, dropping upstreams
    /// added with `quiver ctl` (by default they survive a restart).
    #[arg(long)]
    reset_upstreams: bool,
    /// Seals tenant secrets; default `cluster.key` in the data directory,
    /// made on the first start.
    #[command(flatten)]
    cluster_key: ClusterKeyArgs,
}

/// Runs until Ctrl-C / SIGTERM (or, with `--stdio`, until the client disconnects).
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => DevConfig::load(path)?,
        None => DevConfig::default(),
    };
    let _telemetry = logging::init("dev", &config.telemetry, "info,rmcp=warn,openraft=warn")?;
    args.edge.apply(&mut config.edge);
    if config.edge.grpc_tls.is_some() && config.edge.grpc_listen.is_none() {
        anyhow::bail!(
            "edge.grpc_tls is set but the gRPC API is off; set edge.grpc_listen (or pass --grpc-listen), or remove edge.grpc_tls"
        );
    }
    if args.stdio && config.edge.auth == AuthMode::Required {
        anyhow::bail!(
            "--stdio serves one local client without credentials; it cannot be combined with auth = \"required\" (serve HTTP instead)"
        );
    }
    let using_demo = add_upstreams(&mut config, args.catalog.as_deref())?;
    config.validate()?;
    if let Some(oauth) = &config.edge.oauth {
        // Fail before anything starts, naming the issuer and file.
        quiver_edge::auth::jwt::JwtValidator::new(oauth.clone())?;
    }
    if let Some(tls) = &config.edge.tls {
        // Fail before anything starts, naming the file and key.
        quiver_edge::tls::acceptor(tls)?;
    }

    if let Some(data) = &args.data {
        config.control_plane.data = data.clone();
    }
    if let Some(listen) = args.control_plane_listen {
        config.control_plane.listen = listen;
    }
    // Search's tool vectors and per-tenant outcome signals live with the
    // rest of dev's state, so they survive restarts (a standalone edge keeps
    // them in memory unless `search_data_dir` is set).
    if config.edge.search_data_dir.is_none() {
        config.edge.search_data_dir = Some(config.control_plane.data.join("search"));
    }
    // Tenant secrets are sealed with it (and opened by the executor).
    let (cluster_key, key_origin) = args
        .cluster_key
        .load_or_create_in(&config.control_plane.data)?;

    let shutdown = CancellationToken::new();
    // What the edge's reports to the control plane say about its readiness
    // (`quiver ctl cluster status`), set once its checks exist.
    let reported_health = ReportedHealth::default();
    let (upstreams, store, control_plane, registry) = start_control_plane(
        &config,
        args.reset_upstreams,
        cluster_key,
        &reported_health,
        &shutdown,
    )
    .await?;
    let mut child_executor = None;
    let mut child_admin = None;
    let mut metered = None;
    // The edge's views, which the in-process executor's scripts share.
    config.edge.install_search();
    let views = quiver_view::LiveViews::follow_capped(
        store.subscribe(),
        store.subscribe_tenants(),
        config.edge.max_views,
    );
    let (dispatch, scripts, pool): ExecutorParts = if args.executor == "child" {
        let (child, remote, admin) =
            spawn_child_executor(control_plane.addr(), config.edge.auth, &key_origin).await?;
        child_executor = Some(child);
        child_admin = Some(admin);
        let remote = Arc::new(remote);
        (remote.clone(), remote, None)
    } else {
        let name = format!("dev-{}", std::process::id());
        let (executor, scripts, pool) = local_executor(
            upstreams.clone(),
            store.subscribe_tenants(),
            Some(control_plane.clone()),
            &name,
            (views.clone(), config.edge.auth == AuthMode::None),
            Default::default(),
            args.task_wall_max,
        )
        .await?;
        metered = Some(executor.clone());
        (executor, scripts, Some(pool))
    };
    // Ready: a manifest held and an executor that can run work.
    let status_upstreams = upstreams.clone();
    let status_pool = pool.clone();
    let status_admin = child_admin.clone();
    let status_store = store.clone();
    let status_views = views.clone();
    let default_mode = config.edge.default_mode;
    let mut health = quiver_telemetry::Health::new("dev")
        .check("manifest", readiness::manifest_held(store.clone()))
        .with_status(move || {
            let manifest = status_store.current();
            quiver_edge::http::redact_status(serde_json::json!({
                "manifest_version": manifest.version,
                "stub_hash": manifest.stub_hash.to_hex(),
                "servers": manifest.servers.len(),
                "tools": manifest.tools.len(),
                "views_manifest_version": status_views.current().manifest().version,
                "default_mode": default_mode,
                "upstreams": status_upstreams.statuses(),
                "workers": status_pool.as_ref().map(|p| p.stats()),
                "executor_admin": status_admin,
            }))
        });
    health = match (&pool, &child_admin) {
        (Some(pool), _) => health.check("executor", readiness::workers_warm(pool.clone())),
        (None, Some(admin)) => health.check(
            "executor",
            readiness::remote_executor_ready(admin.clone(), shutdown.clone()),
        ),
        (None, None) => health,
    };
    let admin = readiness::open_admin(config.edge.admin_listen, None, &health, &shutdown).await?;
    let edge_name = format!("dev-{}-edge", std::process::id());
    // The node answers the edge's requests in process.
    let node: Arc<dyn AdminTransport> = control_plane.clone();
    let mut gateway = Gateway::builder(views, dispatch, Some(scripts), config.edge.clone())
        .task_audit(super::reports::task_audit(&edge_name, node.clone()))
        .grant_callback(node.clone());
    let console_line = if config.edge.console.enabled {
        let (token_file, digest) = match &config.edge.console.operator_token_file {
            Some(file) => (
                file.clone(),
                quiver_edge::console::read_operator_token(file)?,
            ),
            None => super::console_link::dev_operator_token(&config.control_plane.data)?,
        };
        gateway = gateway.console(quiver_edge::console::ConsoleLink {
            control_plane: node,
            operator_token_sha256: Some(digest),
            metrics: super::console_link::metrics_links(&admin, config.edge.auth),
        });
        format!(
            "; console BASE/console/ (operator token in {})",
            token_file.display()
        )
    } else {
        String::new()
    };
    let gateway = gateway.build();
    let grpc_line = super::serving::serve_grpc(&gateway, &config.edge, &shutdown).await?;
    reported_health.set(health.clone(), admin.clone());
    reported_health
        .reported(std::time::Duration::from_secs(2))
        .await;
    let admin_line = format!(
        "{}{}",
        readiness::admin_banner(&admin),
        child_admin
            .as_ref()
            .map(|url| format!("; executor-admin {url}"))
            .unwrap_or_default()
    );
    let manifest = store.current();
    let down: Vec<String> = upstreams
        .statuses()
        .into_iter()
        .filter(|s| s.state != quiver_upstream::UpstreamState::Connected)
        .map(|s| s.id)
        .collect();
    if !down.is_empty() {
        tracing::warn!(
            "upstreams not reachable yet (retrying with backoff): {}",
            down.join(", ")
        );
    }

    let result = if args.stdio {
        eprintln!(
            "quiver dev: serving {} tools from {} upstreams on stdio ({} mode){grpc_line}{admin_line}; search {}; upstreams: {registry}",
            manifest.tools.len(),
            manifest.servers.len(),
            config.edge.default_mode,
            quiver_view::search::semantic::ranking(),
        );
        quiver_edge::stdio::serve_stdio(gateway, config.edge.default_mode).await
    } else {
        let listener = tokio::net::TcpListener::bind(config.edge.listen)
            .await
            .with_context(|| format!("edge.listen: cannot listen on {}", config.edge.listen))?;
        let bound = listener.local_addr()?;
        let scheme = if config.edge.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let stop = super::serving::stop_signal();
        let console_line = console_line.replace("BASE", &format!("{scheme}://{bound}"));
        println!(
            "quiver dev: serving {} tools from {} upstreams at {scheme}://{bound}/mcp ({} mode); also /passthrough/mcp /search/mcp /code/mcp; control plane {} (data {}){}{grpc_line}{admin_line}{}{console_line}; search {}; upstreams: {registry}",
            manifest.tools.len(),
            manifest.servers.len(),
            config.edge.default_mode,
            control_plane.addr(),
            config.control_plane.data.display(),
            if using_demo {
                " [built-in demo catalog]"
            } else {
                ""
            },
            readiness::edge_metrics_banner(
                &admin,
                &format!("{scheme}://{bound}"),
                config.edge.auth
            ),
            quiver_view::search::semantic::ranking(),
        );
        super::serving::serve_mcp(gateway, listener, &health, &shutdown, stop, Duration::ZERO).await
    };
    shutdown.cancel();
    if let Some(metered) = &metered {
        // Unspent allowances go back to the tenants' budgets; buffered
        // audit records are shipped.
        metered.finish().await;
    }
    if let Some(pool) = &pool {
        pool.shutdown();
    }
    drop(child_executor);
    control_plane.shutdown().await;
    upstreams.shutdown().await;
    Ok(result?)
}

/// What `start_control_plane` hands back: the upstream connections, the
/// edge's manifest, the node, and what the registry sync did.
type ControlPlaneParts = (
    Arc<UpstreamSet>,
    Arc<ManifestStore>,
    Arc<ControlPlaneNode>,
    RegistrySync,
);

/// Starts the one-node control plane on the config's data directory, brings
/// the config's upstreams into its registry (see [`sync_registry`]), waits for
/// the first discovery round and for the edge's watch to hold the resulting
/// manifest.
async fn start_control_plane(
    config: &DevConfig,
    reset_upstreams: bool,
    cluster_key: Arc<quiver_control_plane::cluster_key::ClusterKey>,
    reported_health: &ReportedHealth,
    shutdown: &CancellationToken,
) -> anyhow::Result<ControlPlaneParts> {
    let screen = quiver_screen::Screen::get();
    screen.set_detector(config.control_plane.screening_detector);
    tracing::info!(screening = %screen.describe(), "screening tool definitions");
    let upstreams = Arc::new(UpstreamSet::default());
    let node_config = NodeConfig {
        node_id: 1,
        listen: config.control_plane.listen,
        advertise: None,
        data: config.control_plane.data.clone(),
        bootstrap: true,
        tls: None,
        tuning: RaftTuning::default(),
        cluster_key: Some(cluster_key),
        max_keys_per_tenant: config.control_plane.max_keys_per_tenant,
        restore: None,
        backups: None,
    };
    let (node, addr) =
        ControlPlaneNode::start_with(node_config, upstreams.clone(), shutdown.clone())
            .await
            .context("starting the embedded control plane")?;
    if node.wait_for_leader(Duration::from_secs(10)).await != Some(node.id()) {
        anyhow::bail!(
            "the embedded control plane in {} did not become leader; is that data directory a member of another cluster?",
            config.control_plane.data.display()
        );
    }
    let registry = sync_registry(
        &node,
        &config.upstreams,
        &config.control_plane.data,
        reset_upstreams,
    )
    .await?;
    first_round_within(config, node.first_discovery()).await;
    let store = Arc::new(ManifestStore::new());
    spawn_watcher(
        WatchConfig {
            endpoints: vec![addr.to_string()],
            tls: None,
            node: format!("dev-{}@{}", std::process::id(), addr),
            role: NodeRole::Dev,
            health: reported_health.clone(),
            contact: Default::default(),
            grpc: None,
            mcp: None,
        },
        store.clone(),
        None,
        shutdown.clone(),
    );
    // Discovery results are being committed; wait until they are and the
    // edge's copy has caught up with what the control plane holds (bounded).
    let caught_up = async {
        node.discoveries_committed().await;
        let want = node.shared().manifest().version;
        let mut watched = store.subscribe();
        let _ = watched.wait_for(|m| m.version >= want).await;
    };
    if tokio::time::timeout(Duration::from_secs(10), caught_up)
        .await
        .is_err()
    {
        tracing::warn!("serving before every discovery result was committed");
    }
    Ok((upstreams, store, node, registry))
}

/// Waits for discovery's first round, bounded by the longest connect timeout
/// (plus 5 s); after that, slow upstreams join in the background.
async fn first_round_within(config: &DevConfig, round: impl std::future::Future<Output = ()>) {
    let limit = config
        .upstreams
        .iter()
        .map(|u| u.connect_timeout())
        .max()
        .unwrap_or_default()
        + Duration::from_secs(5);
    if tokio::time::timeout(limit, round).await.is_err() {
        tracing::warn!("some upstreams are still connecting; serving what is ready");
    }
}

/// In the data directory: the upstream ids the last start took from its
/// config (file, catalogue or demo), so the next start can tell an upstream
/// the config dropped from one added with `quiver ctl`.
const CONFIG_UPSTREAMS_FILE: &str = "dev-config-upstreams.json";

/// What [`sync_registry`] did to the registry, for the start-up line.
#[derive(Debug, Default)]
struct RegistrySync {
    /// From the config, already registered as configured.
    unchanged: usize,
    /// From the config, new to the registry.
    added: Vec<String>,
    /// From the config, whose settings changed since the last start.
    updated: Vec<String>,
    /// From the config, registered (with `quiver ctl`) with other settings:
    /// the file won.
    replaced: Vec<String>,
    /// Not in the config, added with `quiver ctl`: kept.
    kept: Vec<String>,
    /// Removed: dropped from the config since the last start, or added with
    /// `quiver ctl` and `--reset-upstreams` given.
    removed: Vec<String>,
}

impl std::fmt::Display for RegistrySync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |ids: &[String]| ids.join(", ");
        write!(
            f,
            "{} from the config ({} unchanged",
            self.unchanged + self.added.len() + self.updated.len() + self.replaced.len(),
            self.unchanged
        )?;
        if !self.added.is_empty() {
            write!(f, ", added {}", list(&self.added))?;
        }
        if !self.updated.is_empty() {
            write!(f, ", updated {}", list(&self.updated))?;
        }
        if !self.replaced.is_empty() {
            write!(f, ", replaced {}", list(&self.replaced))?;
        }
        write!(f, ")")?;
        if !self.kept.is_empty() {
            write!(f, ", kept from quiver ctl: {}", list(&self.kept))?;
        }
        if !self.removed.is_empty() {
            write!(f, ", removed {}", list(&self.removed))?;
        }
        Ok(())
    }
}

/// Brings the configured upstreams into the control plane's registry: the
/// config wins for an id it defines; an upstream added with `quiver ctl`
/// survives unless `reset` (then the registry is exactly the config); one
/// that an earlier start took from its config and this config no longer has
/// is removed.
async fn sync_registry(
    node: &ControlPlaneNode,
    configured: &[UpstreamConfig],
    data: &std::path::Path,
    reset: bool,
) -> anyhow::Result<RegistrySync> {
    let registered: std::collections::BTreeMap<String, UpstreamConfig> = node
        .shared()
        .lock()
        .upstreams
        .iter()
        .map(|(id, r)| (id.clone(), r.config.clone()))
        .collect();
    let record = data.join(CONFIG_UPSTREAMS_FILE);
    // Absent (first start, or a data directory from before this file): every
    // registered upstream counts as added with `quiver ctl`.
    let from_last_config: Vec<String> = std::fs::read(&record)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut sync = RegistrySync::default();
    for upstream in configured {
        match registered.get(&upstream.id) {
            Some(existing) if existing == upstream => {
                sync.unchanged += 1;
                continue;
            }
            Some(_) if from_last_config.contains(&upstream.id) => {
                sync.updated.push(upstream.id.clone())
            }
            Some(_) => sync.replaced.push(upstream.id.clone()),
            None => sync.added.push(upstream.id.clone()),
        }
        node.write(
            "dev",
            Command::PutUpstream {
                upstream: upstream.clone(),
                quarantine: false,
                replace: true,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("registering upstream `{}`: {e}", upstream.id))?;
    }
    for id in registered.keys() {
        if configured.iter().any(|u| &u.id == id) {
            continue;
        }
        if reset || from_last_config.contains(id) {
            node.write("dev", Command::RemoveUpstream { id: id.clone() })
                .await
                .map_err(|e| anyhow::anyhow!("removing upstream `{id}`: {e}"))?;
            sync.removed.push(id.clone());
        } else {
            sync.kept.push(id.clone());
        }
    }
    let ids: Vec<&str> = configured.iter().map(|u| u.id.as_str()).collect();
    let json = serde_json::to_vec(&ids).context("encoding the config's upstream ids")?;
    std::fs::write(&record, json).with_context(|| format!("writing {}", record.display()))?;
    Ok(sync)
}

/// Where calls go, where scripts run, and the local pool (absent with a child executor).
type ExecutorParts = (Arc<dyn Dispatch>, Arc<dyn Scripts>, Option<Arc<WorkerPool>>);

/// Without a control plane (a standalone `quiver executor`): connects the
/// configured upstreams and lists their tools into a local manifest store;
/// waits for each upstream's first attempt (bounded by the longest connect
/// timeout), after which discovery goes on in the background.
pub(crate) async fn start_discovery(
    config: &DevConfig,
    shutdown: &CancellationToken,
) -> (Arc<UpstreamSet>, Arc<ManifestStore>) {
    let upstreams = Arc::new(UpstreamSet::new(config.upstreams.clone()));
    let store = Arc::new(ManifestStore::new());
    let holds = config
        .upstreams
        .iter()
        .map(|u| (u.id.clone(), u.hold_findings))
        .collect();
    let catalogue = LocalCatalogue::holding(store.clone(), holds, shutdown.clone());
    let discovery = Discovery::spawn(upstreams.clone(), catalogue.clone(), shutdown.clone());
    first_round_within(config, discovery.first_round()).await;
    catalogue.publish_now();
    (upstreams, store)
}

/// The in-process executor's parts: calls (metered: rate limits and budgets of the
/// tenants in `tenants`, allowances leased from `control_plane`, which also
/// keeps the audit records; without one, a tenant with a budget is refused
/// and records are only logged), scripts whose calls
/// pass the same meter, are checked against `views` (and whether a tenant
/// they do not hold sees everything) and keep their stashes in `stash`, and
/// the worker pool.
pub(crate) async fn local_executor(
    upstreams: Arc<UpstreamSet>,
    tenants: tokio::sync::watch::Receiver<Arc<TenantDirectory>>,
    control_plane: Option<Arc<dyn AdminTransport>>,
    node: &str,
    views: (Arc<quiver_view::LiveViews>, bool),
    stash: Arc<StashStore>,
    task_wall_max: std::time::Duration,
) -> anyhow::Result<(Arc<Metered>, Arc<dyn Scripts>, Arc<WorkerPool>)> {
    let auditor = Auditor::new(node, control_plane.clone());
    stash.follow_tenants(tenants.clone());
    let leases = control_plane.map(|control_plane| Leases::new(control_plane, node));
    if let Some(leases) = &leases {
        super::reports::report_stash(stash.clone(), leases.clone());
    }
    let metered = Metered::audited(
        Arc::new(LocalExecutor::new(upstreams)),
        tenants,
        leases,
        auditor.clone(),
    );
    let executor: Arc<dyn Dispatch> = metered.clone();
    let program = std::env::current_exe().context("finding the quiver binary for workers")?;
    // Workers get this process's startup snapshot instead of making their own.
    let pool = WorkerPool::start(PoolConfig::new(WorkerCommand::quiver(program)));
    if let Err(e) = pool.warm_up().await {
        tracing::warn!("sandbox workers are not starting ({e}); execute will report errors");
    }
    let runner = Arc::new(
        ScriptRunner::new(pool.clone(), Limits::default())
            .with_task_wall_max(u64::try_from(task_wall_max.as_millis()).unwrap_or(u64::MAX)),
    );
    let scripts: Arc<dyn Scripts> = Arc::new(AuditedScripts::new(
        Arc::new(LocalScripts::with_stash(runner, executor, stash, views)),
        auditor,
    ));
    Ok((metered, scripts, pool))
}

/// Starts `quiver executor` as a child following the embedded control plane
/// (its upstreams and manifest come over the watch stream) and connects to it.
async fn spawn_child_executor(
    control_plane: &str,
    auth: AuthMode,
    key: &KeyOrigin,
) -> anyhow::Result<(tokio::process::Child, RemoteExecutor, String)> {
    use tokio::io::AsyncBufReadExt;
    let program = std::env::current_exe().context("finding the quiver binary")?;
    let mut command = tokio::process::Command::new(program);
    command.args(["executor", "--listen", "127.0.0.1:0", "--exit-with-stdin"]);
    command.args(["--admin-listen", "127.0.0.1:0"]);
    command.args(["--control-plane", control_plane]);
    command.args(["--auth", auth.as_str()]);
    command.args([
        "--node-name",
        &format!("dev-executor-{}", std::process::id()),
    ]);
    // The child opens tenant secrets with dev's key (an environment key it
    // inherits as it is).
    if let KeyOrigin::File(path) = key {
        command.arg("--cluster-key-file").arg(path);
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the executor child")?;
    let stdout = child.stdout.take().context("executor child stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let banner = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .context("the executor child did not start in time")??
        .context("the executor child exited before it was ready")?;
    let addr = banner
        .split_whitespace()
        .skip_while(|w| *w != "on")
        .nth(1)
        .with_context(|| format!("no address in the executor's startup line: {banner}"))?;
    let admin = banner
        .split_whitespace()
        .skip_while(|w| *w != "admin")
        .nth(1)
        .with_context(|| format!("no admin address in the executor's startup line: {banner}"))?
        .trim_end_matches(';')
        .to_string();
    let remote = RemoteExecutor::connect(&format!("http://{addr}"), None).await?;
    tracing::info!("executor child at {addr} (admin {admin})");
    Ok((child, remote, admin))
}

/// One stdio `quiver mock-upstream` per server of `catalog`; `source` tells the
/// child where the catalogue is (`--catalog FILE` or `--demo`).
fn mock_upstreams<'a>(
    catalog: &'a Catalog,
    exe: &'a str,
    source: &'a [String],
) -> impl Iterator<Item = UpstreamConfig> + 'a {
    catalog.servers.iter().map(move |server| {
        let mut args = vec!["mock-upstream".to_string()];
        args.extend(source.iter().cloned());
        args.extend([
            "--server".to_string(),
            server.id.clone(),
            "--stdio".to_string(),
        ]);
        let mut upstream = UpstreamConfig::stdio(server.id.clone(), exe.to_string(), args);
        upstream.description = Some(server.description.clone());
        upstream
    })
}

/// Adds mock upstreams for `catalog`, or the demo catalogue when nothing else is
/// configured; returns whether the demo is in use.
pub(crate) fn add_upstreams(
    config: &mut DevConfig,
    catalog: Option<&std::path::Path>,
) -> anyhow::Result<bool> {
    let exe = std::env::current_exe().context("finding the quiver binary to run mock upstreams")?;
    let exe = exe.to_string_lossy().into_owned();
    if let Some(path) = catalog {
        let path = std::fs::canonicalize(path)
            .with_context(|| format!("reading catalog {}", path.display()))?;
        let catalog = Catalog::load(&path, "default")?;
        let source = ["--catalog".to_string(), path.to_string_lossy().into_owned()];
        config
            .upstreams
            .extend(mock_upstreams(&catalog, &exe, &source));
    }
    let using_demo = config.upstreams.is_empty();
    if using_demo {
        let catalog = quiver_demo::demo_catalog()?;
        config
            .upstreams
            .extend(mock_upstreams(&catalog, &exe, &["--demo".to_string()]));
    }
    Ok(using_demo)
}
