//! `quiver executor`: the executor role as its own process — upstream
//! connections, discovery of their tools, the sandbox worker pool, and the
//! `quiver.v1.Executor` gRPC service (mTLS when certificates are given).

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Args;
use quiver_control_plane::{
    ManifestStore,
    admin::AdminTransport,
    client::RemoteAdmin,
    node_role::NodeRole,
    raft::network::ClusterTls,
    sealed_secrets::SealedSecretSource,
    watcher::{
        RegistrySink, SecretSink, WatchConfig, WatchSinks, spawn_reporter, spawn_watcher_with,
    },
};
use quiver_edge::auth::AuthMode;
use quiver_executor::{service::ExecutorService, stash::StashStore, stash_etcd::EtcdStash};
use quiver_upstream::UpstreamSet;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use super::{
    cluster_key::ClusterKeyArgs,
    dev::{add_upstreams, local_executor, start_discovery},
    logging, readiness,
};
use crate::config::DevConfig;

/// Arguments of `quiver executor`.
#[derive(Args, Debug)]
pub struct ExecutorArgs {
    /// Configuration file with `[[upstream]]` entries (see deploy/quiver.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// The longest wall time a code-mode script that may run as a task is
    /// granted, whatever its tenant's `--task-wall` asks (`20s`, `5m`).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    task_wall_max: std::time::Duration,
    /// Serve every server of this catalog file as a mock upstream.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// gRPC listen address; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// Server certificate (PEM) for TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Server key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// CA whose client certificates are required (mTLS).
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Control-plane endpoints (`host:port`, comma-separated). Without
    /// `--config`/`--catalog`, the executor takes its upstreams and manifest
    /// from the control plane's watch stream; with them, it only reports the
    /// manifest it built, so `quiver ctl cluster verify` can compare.
    #[arg(long, value_delimiter = ',')]
    control_plane: Vec<String>,
    /// CA certificate (PEM) of a control plane that requires mTLS.
    #[arg(long, requires_all = ["control_plane_tls_cert", "control_plane_tls_key"])]
    control_plane_tls_ca: Option<PathBuf>,
    /// This executor's client certificate for the control plane (PEM).
    #[arg(long, requires = "control_plane_tls_ca")]
    control_plane_tls_cert: Option<PathBuf>,
    /// Its key (PEM).
    #[arg(long, requires = "control_plane_tls_ca")]
    control_plane_tls_key: Option<PathBuf>,
    /// `none`: a tenant the control plane does not hold (such as the
    /// built-in `default`) sees every tool, as behind edges that
    /// authenticate nobody; `required`: such tenants are refused. A tenant
    /// the control plane holds always gets its own view, as this executor
    /// computes it.
    #[arg(long, default_value = "none")]
    auth: AuthMode,
    /// etcd endpoints (`host:port`, comma-separated): register this executor
    /// there under a lease (see `quiver edge --etcd`); without it, edges
    /// learn of it from the control plane's registry.
    #[arg(long, value_delimiter = ',', env = "QUIVER_ETCD")]
    etcd: Vec<String>,
    /// The address edges reach this executor's gRPC service at (`host:port`),
    /// reported to the control plane; default the listen address.
    #[arg(long)]
    advertise: Option<String>,
    /// This executor's name in the fleet (default `executor@<listen address>`).
    #[arg(long)]
    node_name: Option<String>,
    /// Serve `/healthz`, `/readyz` (a manifest held and sandbox workers
    /// warm) and `/metrics` on this HTTP address; port 0 picks one.
    #[arg(long, env = "QUIVER_ADMIN_LISTEN")]
    admin_listen: Option<SocketAddr>,
    /// Exit when standard input closes (used when started as a child of `quiver dev`,
    /// so the executor never outlives its parent).
    #[arg(long, hide = true)]
    exit_with_stdin: bool,
    /// Opens tenant secrets (upstreams that take per-tenant credentials);
    /// the control plane's key.
    #[command(flatten)]
    cluster_key: ClusterKeyArgs,
}

/// How long a stopping executor keeps serving after it reports itself not
/// ready: two report intervals, so every edge has seen it leave.
const DRAIN_NOTICE: Duration = Duration::from_secs(2);

/// Runs the executor until SIGTERM / Ctrl-C.
pub async fn run(args: ExecutorArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => DevConfig::load(path)?,
        None => DevConfig::default(),
    };
    let _telemetry = logging::init(
        "executor",
        &config.telemetry,
        "info,rmcp=warn,openraft=warn",
    )?;
    let from_control_plane =
        !args.control_plane.is_empty() && args.config.is_none() && args.catalog.is_none();
    if !from_control_plane {
        add_upstreams(&mut config, args.catalog.as_deref())?;
    }
    config.validate()?;
    // Code mode's `search` runs here: rank as the edges do, and learn from
    // the searches, descriptions and calls of scripts run here.
    config.edge.install_search();

    let mut server = Server::builder();
    let mut security = "plaintext";
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let cert_pem = std::fs::read(cert)
            .with_context(|| format!("--tls-cert: reading {}", cert.display()))?;
        let key_pem =
            std::fs::read(key).with_context(|| format!("--tls-key: reading {}", key.display()))?;
        let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
        security = "TLS";
        if let Some(ca) = &args.tls_client_ca {
            let ca_pem = std::fs::read(ca)
                .with_context(|| format!("--tls-client-ca: reading {}", ca.display()))?;
            tls = tls.client_ca_root(Certificate::from_pem(ca_pem));
            security = "mTLS";
        }
        server = server
            .tls_config(tls)
            .context("TLS configuration (check the certificate and key)")?;
    }

    let shutdown = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen: cannot listen on {}", args.listen))?;
    let bound = listener.local_addr()?;
    let control_plane_tls = ClusterTls::from_flags(
        args.control_plane_tls_ca.as_ref(),
        args.control_plane_tls_cert.as_ref(),
        args.control_plane_tls_key.as_ref(),
    )
    .map(|t| t.load())
    .transpose()?;
    let watch = WatchConfig {
        endpoints: args.control_plane.clone(),
        tls: control_plane_tls,
        node: args
            .node_name
            .clone()
            .unwrap_or_else(|| format!("executor@{bound}")),
        role: NodeRole::Executor,
        health: Default::default(),
        contact: Default::default(),
        grpc: Some(format!(
            "{}://{}",
            if args.tls_cert.is_some() {
                "https"
            } else {
                "http"
            },
            args.advertise.clone().unwrap_or_else(|| bound.to_string())
        )),
        mcp: None,
    };
    let reported_health = watch.health.clone();
    let contact = watch.contact.clone();
    let advertised = watch.grpc.clone().unwrap_or_default();
    let (lease_tls, lease_name) = (watch.tls.clone(), watch.node.clone());
    let (upstreams, store) = if from_control_plane {
        let upstreams = Arc::new(UpstreamSet::default());
        let store = Arc::new(ManifestStore::new());
        let set = upstreams.clone();
        let registry: RegistrySink = Arc::new(move |configs| {
            let set = set.clone();
            tokio::spawn(async move {
                for removed in set.reconcile(configs) {
                    removed.shutdown().await;
                }
            });
        });
        // Tenants' secrets arrive sealed and are opened only when a
        // connection is made for a tenant.
        let cluster_key = args.cluster_key.load()?;
        let set = upstreams.clone();
        let secrets: SecretSink = Arc::new(move |sealed| {
            let source = SealedSecretSource::new(sealed, cluster_key.clone());
            for retired in set.install_secrets(Arc::new(source)) {
                tokio::spawn(async move { retired.shutdown().await });
            }
        });
        let sinks = WatchSinks {
            registry: Some(registry),
            secrets: Some(secrets),
        };
        let mut first = store.subscribe();
        spawn_watcher_with(watch, store.clone(), sinks, shutdown.clone());
        // Serve once the first manifest arrived (bounded: an unreachable
        // control plane is retried in the background).
        let _ = tokio::time::timeout(Duration::from_secs(10), first.changed()).await;
        (upstreams, store)
    } else {
        let (upstreams, store) = start_discovery(&config, &shutdown).await;
        if !args.control_plane.is_empty() {
            spawn_reporter(watch, store.clone(), shutdown.clone());
        }
        (upstreams, store)
    };
    // Leases, audit records and stash reports share one transport; token
    // renewals have their own, so a renewal never waits behind them.
    let control_plane = (!args.control_plane.is_empty()).then(|| {
        Arc::new(RemoteAdmin::new(
            args.control_plane.clone(),
            lease_tls.clone(),
        )) as Arc<dyn AdminTransport>
    });
    if from_control_plane {
        // A tenant's OAuth token the upstream refused is renewed by the leader.
        upstreams.renew_grants_through(Arc::new(RemoteAdmin::new(
            args.control_plane.clone(),
            lease_tls,
        )));
    }
    // With etcd, stashes live there too: they outlive this executor.
    let mut stash = StashStore::default();
    if !args.etcd.is_empty() {
        stash = stash.replicated(Arc::new(EtcdStash::new(args.etcd.clone())));
    }
    let views = quiver_view::LiveViews::follow(store.subscribe(), store.subscribe_tenants());
    let anonymous = args.auth == AuthMode::None;
    let (metered, scripts, pool) = local_executor(
        upstreams.clone(),
        store.subscribe_tenants(),
        control_plane,
        &lease_name,
        (views.clone(), anonymous),
        Arc::new(stash),
        args.task_wall_max,
    )
    .await?;
    let dispatch: Arc<dyn quiver_contract::Dispatch> = metered.clone();
    let service = ExecutorService::with_views(views, anonymous, dispatch, scripts)
        .named(lease_name.clone())
        .stopping_on(shutdown.clone());
    // With etcd, a call or script that became a task has its end recorded
    // there, for whichever edge the client asks next.
    let service = if args.etcd.is_empty() {
        service
    } else {
        service.recording_tasks_in(Arc::new(quiver_fleet::task_records::TaskRecords::new(
            args.etcd.clone(),
            quiver_edge::tasks::KEPT_AFTER_END,
        )))
    };
    let mut health = quiver_telemetry::Health::new("executor")
        .check("manifest", readiness::manifest_held(store.clone()))
        .check("workers", readiness::workers_warm(pool.clone()));
    if !args.control_plane.is_empty() {
        health = health.check("control-plane", contact.check(store.clone()));
    }
    let admin = readiness::open_admin(
        args.admin_listen,
        args.advertise.as_deref(),
        &health,
        &shutdown,
    )
    .await?;
    reported_health.set(health.clone(), admin.clone());
    if !args.control_plane.is_empty() {
        reported_health
            .reported(std::time::Duration::from_secs(2))
            .await;
    }
    let registration = (!args.etcd.is_empty()).then(|| {
        let (store, pool, health, node) = (
            store.clone(),
            pool.clone(),
            health.clone(),
            lease_name.clone(),
        );
        quiver_fleet::membership::register(args.etcd.clone(), move || {
            let manifest = store.current();
            let stats = pool.stats();
            quiver_fleet::membership::MemberRecord {
                node: node.clone(),
                role: NodeRole::Executor,
                address: advertised.clone(),
                capacity: u32::try_from(pool.capacity()).unwrap_or(u32::MAX),
                load: u32::try_from(stats.running + stats.waiting).unwrap_or(u32::MAX),
                manifest_version: manifest.version,
                stub_hash: manifest.stub_hash.to_hex(),
                ready: health.readiness().ready,
            }
        })
    });
    let manifest = store.current();
    let stop_requested = super::serving::stop_signal();
    println!(
        "quiver executor: serving {} tools from {} upstreams on {bound} ({security}); stub hash {}; search {}{}",
        manifest.tools.len(),
        manifest.servers.len(),
        manifest.stub_hash,
        quiver_view::search::semantic::ranking(),
        readiness::admin_banner(&admin)
    );
    let stop = shutdown.clone();
    let draining = health.clone();
    tokio::spawn(async move {
        stop_requested.await;
        // Drain: report not ready, so edges stop sending new work (they see
        // the next report), then stop accepting; what runs finishes.
        draining.start_draining();
        tracing::info!("draining: edges stop routing here within {DRAIN_NOTICE:?}");
        tokio::time::sleep(DRAIN_NOTICE).await;
        stop.cancel();
    });
    if args.exit_with_stdin {
        let stop = shutdown.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut stdin = tokio::io::stdin();
            let mut buf = [0u8; 64];
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
            stop.cancel();
        });
    }
    // TCP_NODELAY: small replies must not wait for the peer's delayed ACK.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let result = server
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned())
        .await
        .context("serving gRPC");
    shutdown.cancel();
    // What ran has finished: leave the membership now, not when the lease
    // runs out.
    if let Some(registration) = registration {
        registration.deregister().await;
    }
    // Unspent allowances go back to the tenants' budgets; buffered audit
    // records are shipped.
    metered.finish().await;
    pool.shutdown();
    quiver_view::search::signals::flush_installed();
    upstreams.shutdown().await;
    result
}
