//! `quiver edge`: the edge role as its own process. It terminates MCP (and
//! the gRPC API), follows the manifest and tenant policy from the control
//! plane, holds no upstream connections, and routes every call and script to
//! an executor of the fleet (see [`quiver_fleet::fleet`]), whose members
//! it learns from the control plane's fleet registry.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Args;
use quiver_contract::{Dispatch, Scripts};
use quiver_control_plane::{
    ManifestStore,
    admin::AdminTransport,
    admin::{AdminAnswer, AdminRequest},
    client::{AdminClient, RemoteAdmin},
    node_role::NodeRole,
    raft::network::{ClusterTls, TlsMaterial},
    watcher::{ReportedHealth, WatchConfig, spawn_watcher},
};
use quiver_edge::{Gateway, peers::EdgePeers};
use quiver_fleet::{
    ExecutorFleet, ExecutorInfo,
    membership::{self, MemberRecord},
    remote::ClientTls,
};
use tokio_util::sync::CancellationToken;

use super::{logging, readiness};
use crate::config::DevConfig;

/// How often the edge asks the control plane who the executors are.
const MEMBERSHIP_EVERY: Duration = Duration::from_millis(500);

/// Arguments of `quiver edge`.
#[derive(Args, Debug)]
pub struct EdgeArgs {
    /// Configuration file: its `[edge]` and `[telemetry]` tables are used
    /// (see deploy/quiver.toml); upstreams live in the control plane.
    #[arg(long, short)]
    config: Option<PathBuf>,
    #[command(flatten)]
    edge: crate::config::EdgeFlags,
    /// Control-plane endpoints (`host:port`, comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    control_plane: Vec<String>,
    /// Seconds a stopping edge keeps serving after its `/readyz` turned 503
    /// `draining`, so that load balancers polling it take it out of
    /// rotation before it stops accepting connections (then it finishes
    /// the requests in flight).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    drain_notice: u64,
    /// etcd endpoints (`host:port`, comma-separated): learn the executors
    /// from their records there (see `quiver executor --etcd`), and register
    /// this edge too; without it, the control plane's registry is asked.
    #[arg(long, value_delimiter = ',', env = "QUIVER_ETCD")]
    etcd: Vec<String>,
    /// This edge's name in the fleet (default `edge@<listen address>`).
    #[arg(long)]
    node_name: Option<String>,
    /// The address the other edges reach this one's MCP listener at
    /// (`host:port`; default the listen address). A stateless client's
    /// answer to `input_required` may land on any edge; the edge holding
    /// the call gets it through this address.
    #[arg(long, env = "QUIVER_ADVERTISE")]
    advertise: Option<String>,
    /// CA certificate (PEM) of a control plane that requires mTLS.
    #[arg(long, requires_all = ["control_plane_tls_cert", "control_plane_tls_key"])]
    control_plane_tls_ca: Option<PathBuf>,
    /// This edge's client certificate for the control plane (PEM).
    #[arg(long, requires = "control_plane_tls_ca")]
    control_plane_tls_cert: Option<PathBuf>,
    /// Its key (PEM).
    #[arg(long, requires = "control_plane_tls_ca")]
    control_plane_tls_key: Option<PathBuf>,
    /// CA (PEM) that signed the executors' certificates: executors are then
    /// reached over mTLS, with the client certificate below.
    #[arg(long, requires_all = ["executor_tls_cert", "executor_tls_key"])]
    executor_tls_ca: Option<PathBuf>,
    /// This edge's client certificate for executors (PEM).
    #[arg(long, requires = "executor_tls_ca")]
    executor_tls_cert: Option<PathBuf>,
    /// Its key (PEM).
    #[arg(long, requires = "executor_tls_ca")]
    executor_tls_key: Option<PathBuf>,
    /// Name the executors' certificates are issued to.
    #[arg(long, default_value = "localhost")]
    executor_tls_domain: String,
}

/// Runs the edge until Ctrl-C / SIGTERM.
pub async fn run(args: EdgeArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => DevConfig::load(path)?,
        None => DevConfig::default(),
    };
    let _telemetry = logging::init("edge", &config.telemetry, "info,rmcp=warn")?;
    args.edge.apply(&mut config.edge);
    if let Some(oauth) = &config.edge.oauth {
        quiver_edge::auth::jwt::JwtValidator::new(oauth.clone())?;
    }
    if let Some(tls) = &config.edge.tls {
        quiver_edge::tls::acceptor(tls)?;
    }
    let control_plane_tls = ClusterTls::from_flags(
        args.control_plane_tls_ca.as_ref(),
        args.control_plane_tls_cert.as_ref(),
        args.control_plane_tls_key.as_ref(),
    )
    .map(|t| t.load())
    .transpose()?;
    let executor_tls = args.executor_tls_ca.clone().map(|ca| ClientTls {
        ca,
        cert: args.executor_tls_cert.clone().unwrap_or_default(),
        key: args.executor_tls_key.clone().unwrap_or_default(),
        domain: args.executor_tls_domain.clone(),
    });
    let listener = tokio::net::TcpListener::bind(config.edge.listen)
        .await
        .with_context(|| format!("edge.listen: cannot listen on {}", config.edge.listen))?;
    let bound = listener.local_addr()?;

    let shutdown = CancellationToken::new();
    let reported_health = ReportedHealth::default();
    let store = Arc::new(ManifestStore::new());
    let mut first = store.subscribe();
    let contact = quiver_control_plane::watcher::ControlPlaneContact::default();
    let node_name = args
        .node_name
        .clone()
        .unwrap_or_else(|| format!("edge@{bound}"));
    let scheme = if config.edge.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let advertised = format!(
        "{scheme}://{}",
        args.advertise.clone().unwrap_or_else(|| bound.to_string())
    );
    // Peers serving TLS are trusted when they present this edge's own chain
    // (the edges of one fleet share a certificate).
    let peer_roots = match &config.edge.tls {
        Some(tls) => vec![
            std::fs::read(&tls.cert)
                .with_context(|| format!("edge.tls.cert: reading {}", tls.cert.display()))?,
        ],
        None => Vec::new(),
    };
    let peers = EdgePeers::new(&node_name, &peer_roots).context("the client for peer edges")?;
    spawn_watcher(
        WatchConfig {
            endpoints: args.control_plane.clone(),
            tls: control_plane_tls.clone(),
            node: node_name.clone(),
            role: NodeRole::Edge,
            health: reported_health.clone(),
            contact: contact.clone(),
            grpc: None,
            mcp: Some(advertised.clone()),
        },
        store.clone(),
        None,
        shutdown.clone(),
    );
    // Serve once the first manifest arrived (bounded: an unreachable control
    // plane is retried in the background, and /readyz says so meanwhile).
    let _ = tokio::time::timeout(Duration::from_secs(10), first.changed()).await;

    let canonical = store.clone();
    let fleet = Arc::new(ExecutorFleet::new(
        move || canonical.current().stub_hash.to_hex(),
        executor_tls,
    ));
    let etcd_follower =
        if args.etcd.is_empty() {
            follow_membership(
                fleet.clone(),
                peers.clone(),
                args.control_plane.clone(),
                control_plane_tls.clone(),
                shutdown.clone(),
            );
            None
        } else {
            let (members, peer_edges) = (fleet.clone(), peers.clone());
            Some(membership::follow(
                args.etcd.clone(),
                move |records| {
                    members.update(ExecutorInfo::from_records(&records));
                    peer_edges.update(records.iter().filter(|r| r.role == NodeRole::Edge).map(
                        |r| {
                            let base = r.address.trim_end_matches("/mcp");
                            (r.node.clone(), base.to_string())
                        },
                    ));
                },
                shutdown.clone(),
            ))
        };
    // Serve once the executors are known (bounded, as for the manifest: with
    // no answer, /readyz says no executor takes work meanwhile).
    let _ = tokio::time::timeout(Duration::from_secs(10), fleet.membership_known()).await;
    config.edge.install_search();
    let views = quiver_view::LiveViews::follow_capped(
        store.subscribe(),
        store.subscribe_tenants(),
        config.edge.max_views,
    );
    let routable = fleet.clone();
    let status_fleet = fleet.clone();
    let status_store = store.clone();
    let status_contact = contact.clone();
    let status_peers = peers.clone();
    let status_follower = etcd_follower;
    let status_views = views.clone();
    let default_mode = config.edge.default_mode;
    let health = quiver_telemetry::Health::new("edge")
        .with_status(move || {
            let manifest = status_store.current();
            let membership = match &status_follower {
                Some(follower) => serde_json::json!({"source": "etcd", "etcd": follower.status()}),
                None => serde_json::json!({"source": "control-plane"}),
            };
            quiver_edge::http::redact_status(serde_json::json!({
                "control_plane": status_contact.status(),
                "membership": membership,
                "executors": status_fleet.states(),
                "peer_edges": status_peers.status(),
                "manifest_version": manifest.version,
                "stub_hash": manifest.stub_hash.to_hex(),
                "servers": manifest.servers.len(),
                "tools": manifest.tools.len(),
                "views_manifest_version": status_views.current().manifest().version,
                "default_mode": default_mode,
            }))
        })
        .check("manifest", readiness::manifest_held(store.clone()))
        .check("control-plane", contact.check(store.clone()))
        .check("executors", move || {
            let states = routable.states();
            let ok = states
                .iter()
                .filter(|s| s.state == quiver_fleet::fleet::RoutingState::Ok)
                .count();
            if ok > 0 {
                Ok(format!("{ok} of {} executors take work", states.len()))
            } else {
                Err(format!("no executor takes work ({} known)", states.len()).into())
            }
        });
    let admin = readiness::open_admin(
        config.edge.admin_listen,
        args.advertise.as_deref(),
        &health,
        &shutdown,
    )
    .await?;
    reported_health.set(health.clone(), admin.clone());
    let dispatch: Arc<dyn Dispatch> = fleet.clone();
    let scripts: Arc<dyn Scripts> = fleet.clone();
    // Task records, OAuth callbacks and the console each have a transport of
    // their own: a person's callback (which waits on the authorization
    // server) and the console's pages never wait behind audit shipments.
    let transport = || -> Arc<dyn AdminTransport> {
        Arc::new(RemoteAdmin::new(
            args.control_plane.clone(),
            control_plane_tls.clone(),
        ))
    };
    let mut gateway = Gateway::builder(views, dispatch, Some(scripts), config.edge.clone())
        .peers(peers.clone())
        .task_audit(super::reports::task_audit(&node_name, transport()))
        .grant_callback(transport());
    if !args.etcd.is_empty() {
        // Sessions are recorded in etcd: any edge serves them.
        let members = fleet.clone();
        gateway = gateway
            .session_records(Arc::new(
                quiver_fleet::session_records::SessionRecords::new(
                    args.etcd.clone(),
                    Duration::from_secs(config.edge.session_idle_secs.max(1)),
                ),
            ))
            // Tasks are recorded in etcd: they outlive this edge.
            .task_records(
                Arc::new(quiver_fleet::task_records::TaskRecords::new(
                    args.etcd.clone(),
                    quiver_edge::tasks::KEPT_AFTER_END,
                )),
                &node_name,
                Arc::new(move |node: &str| members.states().iter().any(|m| m.node == node)),
            );
    }
    if config.edge.console.enabled {
        let operator_token_sha256 = match &config.edge.console.operator_token_file {
            Some(file) => Some(quiver_edge::console::read_operator_token(file)?),
            None => None,
        };
        gateway = gateway.console(quiver_edge::console::ConsoleLink {
            control_plane: transport(),
            operator_token_sha256,
            metrics: super::console_link::metrics_links(&admin, config.edge.auth),
        });
    }
    let gateway = gateway.build();
    super::serving::serve_grpc(&gateway, &config.edge, &shutdown).await?;
    reported_health
        .reported(std::time::Duration::from_secs(2))
        .await;
    let registration = (!args.etcd.is_empty()).then(|| {
        let (store, fleet, health) = (store.clone(), fleet.clone(), health.clone());
        let (node, address) = (node_name.clone(), format!("{advertised}/mcp"));
        membership::register(args.etcd.clone(), move || {
            let manifest = store.current();
            let load: usize = fleet.states().iter().map(|s| s.outstanding).sum();
            MemberRecord {
                node: node.clone(),
                role: NodeRole::Edge,
                address: address.clone(),
                capacity: 0,
                load: u32::try_from(load).unwrap_or(u32::MAX),
                manifest_version: manifest.version,
                stub_hash: manifest.stub_hash.to_hex(),
                ready: health.readiness().ready,
            }
        })
    });
    // Before the startup line: a stop sent right after it is graceful.
    let stop = super::serving::stop_signal();
    let manifest = store.current();
    println!(
        "quiver edge: serving {} tools at {scheme}://{bound}/mcp ({} mode); also /passthrough/mcp /search/mcp /code/mcp; control plane {}; stub hash {}; search {}{}{}",
        manifest.tools.len(),
        config.edge.default_mode,
        args.control_plane.join(","),
        manifest.stub_hash,
        quiver_view::search::semantic::ranking(),
        readiness::admin_banner(&admin),
        readiness::edge_metrics_banner(&admin, &format!("{scheme}://{bound}"), config.edge.auth)
    );
    let notice = Duration::from_secs(args.drain_notice);
    let result =
        super::serving::serve_mcp(gateway, listener, &health, &shutdown, stop, notice).await;
    shutdown.cancel();
    if let Some(registration) = registration {
        registration.deregister().await;
    }
    Ok(result?)
}

/// Keeps `fleet` equal to the executors the control plane's nodes report,
/// asking each endpoint every [`MEMBERSHIP_EVERY`]. While no endpoint
/// answers, the last membership stays.
fn follow_membership(
    fleet: Arc<ExecutorFleet>,
    peers: Arc<EdgePeers>,
    endpoints: Vec<String>,
    tls: Option<TlsMaterial>,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(MEMBERSHIP_EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let mut seen: std::collections::BTreeMap<String, (u64, ExecutorInfo)> =
                Default::default();
            let mut edges: std::collections::BTreeMap<String, (u64, String)> = Default::default();
            let mut answered = false;
            for endpoint in &endpoints {
                let mut client = AdminClient::new(vec![endpoint.clone()], tls.clone())
                    .with_timeout(Duration::from_secs(1));
                let Ok(AdminAnswer::Fleet(members)) = client.call_here(&AdminRequest::Fleet).await
                else {
                    continue;
                };
                answered = true;
                for member in members {
                    if member.role == NodeRole::Edge && !member.readiness.mcp.is_empty() {
                        let fresher = edges
                            .get(&member.node)
                            .is_none_or(|(age, _)| member.age_ms < *age);
                        if fresher {
                            edges.insert(
                                member.node.clone(),
                                (member.age_ms, member.readiness.mcp.clone()),
                            );
                        }
                    }
                    if member.role != NodeRole::Executor || member.readiness.grpc.is_empty() {
                        continue;
                    }
                    let info = ExecutorInfo {
                        node: member.node.clone(),
                        url: member.readiness.grpc.clone(),
                        stub_hash: member.stub_hash.clone(),
                        ready: member.readiness.ready != Some(false),
                    };
                    // The freshest report of a node wins.
                    let fresher = seen
                        .get(&member.node)
                        .is_none_or(|(age, _)| member.age_ms < *age);
                    if fresher {
                        seen.insert(member.node, (member.age_ms, info));
                    }
                }
            }
            if answered {
                fleet.update(seen.into_values().map(|(_, info)| info).collect());
                peers.update(edges.into_iter().map(|(node, (_, url))| (node, url)));
            }
        }
    });
}
