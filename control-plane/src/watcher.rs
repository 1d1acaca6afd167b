//! The consumer side of `WatchManifest`, used by edges and executors: hold the
//! newest manifest in a [`ManifestStore`], recompute its stub hash locally,
//! follow the upstream registry, the tenants and their sealed secrets (handed
//! on as ciphertext: opening them is the consumer's business), and report what this node holds so
//! `quiver ctl cluster verify` can compare. A broken stream is resumed from the
//! last version held, on whichever endpoint answers.

use std::{sync::Arc, time::Duration};

use quiver_proto::{
    Manifest, pb,
    tenant::{Tenant, TenantDirectory},
};
use quiver_upstream::UpstreamConfig;
use tokio_util::sync::CancellationToken;

use crate::{
    error_chain::with_causes,
    manifest_store::ManifestStore,
    node_metrics::report_served_version,
    node_role::NodeRole,
    raft::network::{ChannelError, MAX_MESSAGE_BYTES, TlsMaterial, channel},
    sealed_secrets::{SecretsByTenant, secrets_from_pb},
};

/// How often a node re-reports itself between manifest changes.
pub const REPORT_EVERY: Duration = Duration::from_secs(1);

/// Called with the registry whenever it changes (secrets still by reference).
pub type RegistrySink = Arc<dyn Fn(Vec<UpstreamConfig>) + Send + Sync>;

/// Called with every tenant's sealed secrets whenever they change
/// (ciphertext only; an executor opens them with the cluster key).
pub type SecretSink = Arc<dyn Fn(SecretsByTenant) + Send + Sync>;

/// Where the watcher hands what it receives besides the manifest and the
/// tenants (which go into the [`ManifestStore`]).
#[derive(Clone, Default)]
pub struct WatchSinks {
    /// The upstream registry.
    pub registry: Option<RegistrySink>,
    /// The tenants' sealed secrets.
    pub secrets: Option<SecretSink>,
}

/// Where to watch and how to name this node.
#[derive(Clone)]
pub struct WatchConfig {
    /// Control-plane endpoints, `host:port`.
    pub endpoints: Vec<String>,
    /// mTLS, when the cluster uses it.
    pub tls: Option<TlsMaterial>,
    /// This node's name in reports (unique in the fleet).
    pub node: String,
    /// What kind of node this is.
    pub role: NodeRole,
    /// Its readiness and admin address, once it knows them.
    pub health: ReportedHealth,
    /// Where an executor serves `quiver.v1.Executor` (`http://host:port`).
    pub grpc: Option<String>,
    /// Where an edge serves MCP (`http://host:port`), for its peers.
    pub mcp: Option<String>,
    /// Whether the control plane answers, as the watcher and reporter see it.
    pub contact: ControlPlaneContact,
}

/// Whether this node's control plane answers, for `/status` and `/readyz`:
/// a node cut off from it keeps serving the last manifest it holds, and
/// says since when.
#[derive(Clone, Default)]
pub struct ControlPlaneContact(Arc<std::sync::Mutex<Contact>>);

#[derive(Default)]
struct Contact {
    /// Set at the first attempt.
    tried: bool,
    connected: bool,
    last_answer: Option<std::time::Instant>,
    error: Option<String>,
}

/// [`ControlPlaneContact`] as `/status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ContactStatus {
    /// Whether the last exchange with the control plane succeeded.
    pub connected: bool,
    /// Milliseconds since it last answered (absent: never).
    pub last_answer_ms: Option<u64>,
    /// What failed, while it does not answer.
    pub error: Option<String>,
}

impl ControlPlaneContact {
    fn lock(&self) -> std::sync::MutexGuard<'_, Contact> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn answered(&self) {
        let mut contact = self.lock();
        if contact.tried && !contact.connected {
            tracing::info!("the control plane answers again");
        }
        *contact = Contact {
            tried: true,
            connected: true,
            last_answer: Some(std::time::Instant::now()),
            error: None,
        };
    }

    fn failed(&self, error: String) {
        let mut contact = self.lock();
        contact.tried = true;
        contact.connected = false;
        contact.error = Some(error);
    }

    /// The current state.
    pub fn status(&self) -> ContactStatus {
        let contact = self.lock();
        ContactStatus {
            connected: contact.connected,
            last_answer_ms: contact
                .last_answer
                .map(|at| u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX)),
            error: contact.error.clone(),
        }
    }

    /// A readiness check that never fails (a node cut off from the control
    /// plane still serves) but says how stale `store`'s manifest may be.
    pub fn check(
        &self,
        store: Arc<ManifestStore>,
    ) -> impl Fn() -> Result<String, quiver_telemetry::NotReady> + Send + Sync + 'static {
        let contact = self.clone();
        move || {
            let status = contact.status();
            let version = store.current().version;
            Ok(match (status.connected, status.last_answer_ms) {
                (true, _) => format!("connected; manifest version {version}"),
                (false, Some(ms)) => format!(
                    "unreachable for {:.1} s ({}); serving the last manifest held, version {version}",
                    ms as f64 / 1000.0,
                    status.error.unwrap_or_default()
                ),
                (false, None) => format!(
                    "not reached yet ({})",
                    status.error.unwrap_or_else(|| "connecting".into())
                ),
            })
        }
    }
}

/// A node's readiness as its reports carry it: set once the node built its
/// checks (after the watcher started), read at every report. Setting it
/// sends a report at once, so `cluster verify` run right after the node's
/// start-up line already shows its readiness.
#[derive(Clone, Default)]
pub struct ReportedHealth {
    health: Arc<std::sync::OnceLock<(quiver_telemetry::Health, Option<String>)>>,
    set: Arc<tokio::sync::Notify>,
    reported: Arc<tokio::sync::Notify>,
}

impl ReportedHealth {
    /// Reports carry `health` (and the admin listener's URL) from now on.
    pub fn set(&self, health: quiver_telemetry::Health, admin: Option<String>) {
        if self.health.set((health, admin)).is_ok() {
            self.set.notify_one();
        }
    }

    /// Waits (up to `within`) until a report carrying the readiness set by
    /// [`Self::set`] has reached the control plane or failed: a node prints
    /// its start-up line after this, so what `quiver ctl` shows from then on
    /// includes its readiness.
    pub async fn reported(&self, within: Duration) {
        let _ = tokio::time::timeout(within, self.reported.notified()).await;
    }

    /// Completes once [`Self::set`] has been called (for the reporter).
    async fn was_set(&self) {
        self.set.notified().await;
    }

    /// What the next report says; nothing (`ready` unset) before [`Self::set`].
    pub fn current(&self) -> crate::admin::ReportedReadiness {
        let Some((health, admin)) = self.health.get() else {
            return Default::default();
        };
        let readiness = health.readiness();
        let failed: Vec<String> = readiness
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        crate::admin::ReportedReadiness {
            ready: Some(readiness.ready),
            not_ready: failed.join("; "),
            admin: admin.clone().unwrap_or_default(),
            grpc: String::new(),
            mcp: String::new(),
        }
    }
}

/// Why a watch stream ended; the watcher logs it and resumes elsewhere.
#[derive(Debug, thiserror::Error)]
enum WatchError {
    /// No channel to the endpoint.
    #[error("no channel to the control plane")]
    Channel(#[from] ChannelError),
    /// The call or the stream failed.
    #[error("the manifest stream failed")]
    Stream(#[from] tonic::Status),
    /// The control plane ended the stream.
    #[error("the control plane closed the stream")]
    Closed,
    /// An upstream in an update is not one this node can read.
    #[error("unreadable upstream registry")]
    Registry(#[from] quiver_upstream::UpstreamMessageError),
    /// A tenant in an update is not one this node can read.
    #[error("unreadable tenants")]
    Tenants(#[from] quiver_proto::registry::UnknownEnumValue),
    /// A manifest delta does not apply (the stream resumes, sending the
    /// whole manifest).
    #[error("manifest delta")]
    Delta(#[from] quiver_proto::delta::DeltaError),
    /// The manifest in an update does not decode.
    #[error("unreadable manifest version {version}")]
    Manifest {
        /// Its version.
        version: u64,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// Starts watching; the task ends with `shutdown`.
pub fn spawn_watcher(
    config: WatchConfig,
    store: Arc<ManifestStore>,
    registry: Option<RegistrySink>,
    shutdown: CancellationToken,
) {
    let sinks = WatchSinks {
        registry,
        secrets: None,
    };
    spawn_watcher_with(config, store, sinks, shutdown);
}

/// [`spawn_watcher`] handing the registry and the sealed secrets to `sinks`.
pub fn spawn_watcher_with(
    config: WatchConfig,
    store: Arc<ManifestStore>,
    sinks: WatchSinks,
    shutdown: CancellationToken,
) {
    report_served_version(&store, config.role, &shutdown);
    tokio::spawn(async move {
        tokio::select! {
            () = watch_loop(&config, &store, &sinks) => {}
            () = shutdown.cancelled() => {}
        }
    });
}

async fn watch_loop(config: &WatchConfig, store: &Arc<ManifestStore>, sinks: &WatchSinks) {
    let mut backoff = Duration::from_millis(100);
    let mut held = Held::default();
    let mut turn = 0usize;
    loop {
        let addr = &config.endpoints[turn % config.endpoints.len().max(1)];
        turn += 1;
        match watch_once(config, addr, store, sinks, &mut held).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => {
                config
                    .contact
                    .failed(format!("{addr}: {}", with_causes(&e)));
                tracing::warn!(
                    endpoint = %addr,
                    "manifest watch: {}; retrying in {backoff:?}",
                    with_causes(&e)
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// What this node last received, across reconnects.
#[derive(Default)]
struct Held {
    /// The upstream registry as last applied.
    registry: Option<pb::Upstreams>,
    /// The tenants as last applied.
    tenants: Option<pb::Tenants>,
    /// The sealed secrets as last applied.
    secrets: Option<pb::SecretsByTenant>,
    /// The last manifest version received.
    version: Option<u64>,
}

async fn watch_once(
    config: &WatchConfig,
    addr: &str,
    store: &Arc<ManifestStore>,
    sinks: &WatchSinks,
    held: &mut Held,
) -> Result<(), WatchError> {
    let mut client =
        pb::control_plane_client::ControlPlaneClient::new(channel(addr, config.tls.as_ref())?)
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
    let after = store.current().version;
    // After a reconnect, ask for anything newer than what we hold; the first
    // connection asks for the current state.
    let request = pb::WatchManifestRequest {
        after_version: if held.registry.is_some() { after } else { 0 },
        accepts_deltas: true,
    };
    let mut stream = client.watch_manifest(request).await?.into_inner();
    let mut report = tokio::time::interval(REPORT_EVERY);
    loop {
        tokio::select! {
            message = stream.message() => {
                let Some(update) = message? else {
                    return Err(WatchError::Closed);
                };
                config.contact.answered();
                apply_update(config, store, sinks, held, update)?;
                send_report(&mut client, config, store).await;
            }
            _ = report.tick() => send_report(&mut client, config, store).await,
            () = config.health.was_set() => send_report(&mut client, config, store).await,
        }
    }
}

/// Applies `incoming` with `apply` when it differs from what is `held`; it is
/// held once it applied, so a part that failed is applied again when a new
/// stream sends it.
fn apply_part<T: Clone + PartialEq>(
    incoming: Option<T>,
    held: &mut Option<T>,
    apply: impl FnOnce(T) -> Result<(), WatchError>,
) -> Result<(), WatchError> {
    let Some(part) = incoming.filter(|part| held.as_ref() != Some(part)) else {
        return Ok(());
    };
    apply(part.clone())?;
    *held = Some(part);
    Ok(())
}

fn apply_update(
    config: &WatchConfig,
    store: &ManifestStore,
    sinks: &WatchSinks,
    held: &mut Held,
    update: pb::ManifestUpdate,
) -> Result<(), WatchError> {
    // Absent: unchanged since the last update of this stream (or a control
    // plane that does not send it): keep what is held.
    apply_part(update.upstreams, &mut held.registry, |message| {
        let upstreams = message.upstreams.into_iter().map(UpstreamConfig::from_pb);
        let upstreams = upstreams.collect::<Result<Vec<_>, _>>()?;
        if let Some(sink) = &sinks.registry {
            sink(upstreams);
        }
        Ok(())
    })?;
    apply_part(update.secrets, &mut held.secrets, |message| {
        if let Some(sink) = &sinks.secrets {
            sink(secrets_from_pb(message));
        }
        Ok(())
    })?;
    apply_part(update.tenants, &mut held.tenants, |message| {
        let tenants = message.tenants.into_iter().map(Tenant::from_pb);
        store.install_tenants(TenantDirectory::new(
            tenants.collect::<Result<Vec<_>, _>>()?,
        ));
        Ok(())
    })?;
    let (manifest, claimed) = if let Some(message) = update.manifest {
        let manifest = Manifest::from_pb(&message).map_err(|source| WatchError::Manifest {
            version: message.version,
            source,
        })?;
        (manifest, message.stub_hash)
    } else if let Some(delta) = update.delta {
        let manifest = quiver_proto::delta::apply(&store.current(), &delta)?;
        (manifest, delta.stub_hash)
    } else {
        return Ok(());
    };
    let local = manifest.stub_hash.to_hex();
    if local != claimed {
        // Reported as is: `cluster verify` names this node.
        tracing::error!(
            node = %config.node,
            version = manifest.version,
            claimed = %claimed,
            computed = %local,
            "stub hash of the manifest differs from the control plane's"
        );
    }
    // The first update is installed even at version 0, so a consumer waiting
    // for "the control plane answered" is not left waiting for a change.
    let first = held.version.is_none();
    let version = manifest.version;
    if first || version != store.current().version {
        store.install(Arc::new(manifest));
    }
    held.version = Some(version);
    Ok(())
}

async fn send_report(
    client: &mut pb::control_plane_client::ControlPlaneClient<tonic::transport::Channel>,
    config: &WatchConfig,
    store: &ManifestStore,
) {
    let manifest = store.current();
    let readiness = config.health.current();
    let report = pb::NodeReport {
        node: config.node.clone(),
        role: config.role.to_pb().into(),
        manifest_version: manifest.version,
        stub_hash: manifest.stub_hash.to_hex(),
        ready: readiness.ready,
        not_ready: readiness.not_ready,
        admin: readiness.admin,
        grpc: config.grpc.clone().unwrap_or_default(),
        mcp: config.mcp.clone().unwrap_or_default(),
    };
    let answer = client.report_node(report).await;
    if readiness.ready.is_some() {
        config.health.reported.notify_one();
    }
    match answer {
        Ok(_) => config.contact.answered(),
        Err(e) => {
            tracing::debug!("report to the control plane failed: {e}");
            config.contact.failed(format!("reporting: {}", e.message()));
        }
    }
}

/// For a node that builds its own manifest (a standalone executor with a local
/// config): report what it holds every [`REPORT_EVERY`], so `cluster verify`
/// can tell whether it matches the control plane.
pub fn spawn_reporter(config: WatchConfig, store: Arc<ManifestStore>, shutdown: CancellationToken) {
    report_served_version(&store, config.role, &shutdown);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REPORT_EVERY);
        let mut turn = 0usize;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = config.health.was_set() => {}
                () = shutdown.cancelled() => return,
            }
            let addr = &config.endpoints[turn % config.endpoints.len().max(1)];
            match channel(addr, config.tls.as_ref()) {
                Ok(ch) => {
                    let mut client = pb::control_plane_client::ControlPlaneClient::new(ch);
                    let before = std::time::Instant::now();
                    send_report(&mut client, &config, &store).await;
                    if before.elapsed() > Duration::from_secs(2) {
                        turn += 1;
                    }
                }
                Err(e) => {
                    config
                        .contact
                        .failed(format!("{addr}: {}", with_causes(&e)));
                    tracing::warn!(
                        endpoint = %addr,
                        "reporting to the control plane: {}",
                        with_causes(&e)
                    );
                    turn += 1;
                }
            }
        }
    });
}
