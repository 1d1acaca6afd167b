//! One upstream: connects on demand, notices when the connection dies, lists
//! tools with pagination and calls tools at most once. It never retries a call
//! and never decides what a caller sees of an error (the edge redacts).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use quiver_contract::{CallOptions, ResourceUpdate, UpstreamError};
use quiver_proto::{
    ToolDef,
    secret_value::{SecretValue, TenantSecrets},
    upstream_config::{Transport, UpstreamConfig, UpstreamProtocol},
};
use rmcp::{
    RoleClient, ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
        ClientRequest, JsonObject, ListToolsRequest, PaginatedRequestParams, ServerResult,
    },
    service::{
        ClientLifecycleMode, ClientServiceExt as _, PeerRequestOptions, RunningService,
        RunningServiceCancellationToken,
    },
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{broadcast, mpsc},
};
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};
use tracing::Instrument as _;

use crate::{
    breaker::{BreakerConfig, BreakerState, CircuitBreaker},
    client::{ClientSignal, InFlight, InFlightGuard, UpstreamClient},
    event::UpstreamEvent,
    request_span::ClientRequestSpan,
    secret_scrub::SecretScrub,
    status::{UpstreamState, UpstreamStatus, now_secs},
    stdio::{self, SpawnError},
    streamable_http::{self, HttpTransportError},
    tenant_credentials::{
        CredentialStamp, CredentialsError, SecretHolder, SecretSlot, TenantCredentials,
    },
};

mod calls;
mod connect;
mod task_follow;

type Peer = rmcp::service::Peer<RoleClient>;

struct Live {
    peer: Peer,
    stop: RunningServiceCancellationToken,
    description: String,
    /// A stdio upstream's process group (it leads its own), stopped whole at
    /// shutdown so wrappers (`npx`, `uvx`, `sh -c`) and what they started go too.
    process_group: Option<u32>,
    /// For a per-tenant upstream: whose secrets, of which versions, it was made with.
    stamp: Option<CredentialStamp>,
}

impl Live {
    /// Closes the connection (and its child process group).
    async fn close(self) {
        self.stop.cancel();
        if let Some(group) = self.process_group {
            stdio::stop_process_group(group).await;
        }
    }
}

/// The client's end of an in-process byte stream to an MCP server.
type InProcessStream = (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
);

/// Where an upstream's connections come from.
enum Connector {
    /// The configured transport: a spawned process or Streamable HTTP.
    Configured,
    /// A stream handed over at construction, used by the first connection only.
    InProcess(Mutex<Option<InProcessStream>>),
}

/// One downstream MCP server.
pub struct Upstream {
    config: UpstreamConfig,
    /// For a per-tenant upstream: whose secrets its connections use.
    credentials: Option<TenantCredentials>,
    /// The secrets of its current connection, and what scrubs them (and
    /// those of the connection before, which may still finish calls) from
    /// whatever the upstream sends back.
    scrub: Mutex<(Vec<SecretValue>, Arc<SecretScrub>)>,
    /// Connections made so far (the number of the current one).
    connections: AtomicU64,
    /// Learned when `protocol = "auto"` found no MCP 2026-07-28: later
    /// connections open a session at once.
    speaks_sessions: AtomicBool,
    connector: Connector,
    live: tokio::sync::Mutex<Option<Live>>,
    status: Mutex<UpstreamStatus>,
    events: broadcast::Sender<UpstreamEvent>,
    /// Where `notifications/resources/updated` of this upstream go (the set's hub).
    updates_to: std::sync::OnceLock<broadcast::Sender<ResourceUpdate>>,
    /// For an upstream of MCP 2026-07-28, which has no `resources/subscribe`:
    /// one `subscriptions/listen` stream per subscribed URI.
    resource_listens: Mutex<std::collections::HashMap<String, AbortOnDropHandle<()>>>,
    in_flight: Arc<InFlight>,
    breaker: CircuitBreaker,
    shutdown: CancellationToken,
    /// For an HTTP upstream behind OAuth: its authorization.
    oauth: Option<crate::oauth::Authorizer>,
}

impl Upstream {
    /// A new, not yet connected upstream. A per-tenant one (its header or env
    /// values reference `${tenant_secret:NAME}`) made this way has no secrets
    /// to connect with: an [`crate::UpstreamSet`] gives its upstreams the
    /// node's secrets and routes each tenant's calls to a connection of its own.
    ///
    /// An upstream behind OAuth where a person grants access, made this way,
    /// asks its [`Consent`](crate::Consent) ([`Upstream::with_consent`]) and
    /// keeps the token in this process; in a set, each tenant's connection
    /// uses the token the control plane holds for that tenant instead.
    pub fn new(config: UpstreamConfig) -> Arc<Upstream> {
        let holder = SecretHolder::Discovery {
            preferred: config.discovery_tenant.clone(),
        };
        let mut names = config.tenant_secret_names();
        if let Some(grant) = config.oauth_grant_secret() {
            names.remove(&grant);
        }
        Upstream::with_secret_names(config, names, holder, Arc::default())
    }

    /// An upstream whose `${tenant_secret:NAME}` references (and OAuth
    /// grant, if any) resolve for `holder` from `slot`.
    pub(crate) fn with_credentials(
        config: UpstreamConfig,
        holder: SecretHolder,
        slot: Arc<SecretSlot>,
    ) -> Arc<Upstream> {
        let names = config.tenant_secret_names();
        Upstream::with_secret_names(config, names, holder, slot)
    }

    pub(crate) fn with_secret_names(
        config: UpstreamConfig,
        names: std::collections::BTreeSet<String>,
        holder: SecretHolder,
        slot: Arc<SecretSlot>,
    ) -> Arc<Upstream> {
        let credentials = (!names.is_empty()).then(|| TenantCredentials::new(names, holder, slot));
        Upstream::with_connector(config, credentials, Connector::Configured)
    }

    /// The tenant secret holding the access token its connections send, when
    /// its OAuth grants are the tenants' own (kept by the control plane).
    pub(crate) fn grant_secret(&self) -> Option<String> {
        self.config.oauth.as_ref()?;
        let grant = self.config.oauth_token_name();
        self.credentials
            .as_ref()
            .is_some_and(|c| c.names().contains(&grant))
            .then_some(grant)
    }

    /// An upstream whose server is already at the other end of `stream`: an
    /// MCP server in this process, e.g. over one half of
    /// [`tokio::io::duplex`] (in-process tests, embedded servers).
    ///
    /// The stream serves the first connection, made on first use like any
    /// other. Once it has ended, connecting again fails (a stream cannot be
    /// reopened): the upstream is `down` and calls fail as they do for a server
    /// that stopped. `config` gives the id, time limits and breaker settings;
    /// its transport is not used.
    ///
    /// ```
    /// # async fn demo() {
    /// use quiver_upstream::{Upstream, UpstreamConfig, UpstreamState};
    ///
    /// let (client_end, _server_end) = tokio::io::duplex(64 * 1024);
    /// // … serve an rmcp server on `_server_end` …
    /// let upstream = Upstream::over_stream(UpstreamConfig::stdio("demo", "unused", vec![]), client_end);
    /// assert_eq!(upstream.status().state, UpstreamState::Idle);
    /// # }
    /// ```
    pub fn over_stream<S>(config: UpstreamConfig, stream: S) -> Arc<Upstream>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(stream);
        let stream: InProcessStream = (Box::new(read), Box::new(write));
        Upstream::with_connector(config, None, Connector::InProcess(Mutex::new(Some(stream))))
    }

    fn with_connector(
        config: UpstreamConfig,
        credentials: Option<TenantCredentials>,
        connector: Connector,
    ) -> Arc<Upstream> {
        let (events, _) = broadcast::channel(64);
        let status = UpstreamStatus {
            id: config.id.clone(),
            state: UpstreamState::Idle,
            last_error: None,
            failures: 0,
            since: now_secs(),
            tools: 0,
            breaker: BreakerState::Closed,
            protocol: None,
        };
        let oauth =
            match (&config.oauth, &config.transport) {
                (Some(settings), Transport::Http { url, .. }) => Some(
                    crate::oauth::Authorizer::new(&config.id, url, settings.clone()),
                ),
                _ => None,
            };
        Arc::new(Upstream {
            oauth,
            breaker: CircuitBreaker::new(BreakerConfig::of(&config)),
            config,
            credentials,
            scrub: Mutex::default(),
            connections: AtomicU64::new(0),
            speaks_sessions: AtomicBool::new(false),
            updates_to: std::sync::OnceLock::new(),
            resource_listens: Mutex::default(),
            connector,
            live: tokio::sync::Mutex::new(None),
            status: Mutex::new(status),
            events,
            in_flight: Arc::default(),
            shutdown: CancellationToken::new(),
        })
    }

    /// Like [`Upstream::new`], with who grants it access when it is behind
    /// OAuth (its `oauth` settings): `consent` is asked with a link whenever
    /// the upstream refuses for want of authorization or scope. Without one,
    /// such an upstream cannot be used in a single process.
    pub fn with_consent(
        config: UpstreamConfig,
        consent: Arc<dyn crate::oauth::Consent>,
    ) -> Arc<Upstream> {
        let upstream = Upstream::new(config);
        if let Some(oauth) = &upstream.oauth {
            // Nobody else holds it yet: this is part of making it.
            oauth.set_consent(consent);
        }
        upstream
    }

    /// Its configuration.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.config.id
    }

    /// The tenant this connection serves, for a per-tenant upstream's
    /// connection made for one tenant (`None` for a shared upstream and for
    /// discovery's connection).
    pub fn tenant(&self) -> Option<&str> {
        match self.credentials.as_ref().map(TenantCredentials::holder) {
            Some(SecretHolder::Tenant(tenant)) => Some(tenant),
            _ => None,
        }
    }

    /// Its per-tenant credentials, if it takes any.
    pub(crate) fn credentials(&self) -> Option<&TenantCredentials> {
        self.credentials.as_ref()
    }

    /// The node's secrets changed in a way that concerns this upstream: the
    /// next use reconnects with the new ones (the idle connection is retired
    /// now), and watchers (discovery) hear of it.
    pub(crate) fn credentials_changed(self: &Arc<Self>) {
        let _ = self.events.send(UpstreamEvent::CredentialsChanged);
        let this = self.clone();
        tokio::spawn(async move {
            let stale = {
                let mut live = this.live.lock().await;
                let fresh = live.as_ref().is_some_and(|l| {
                    this.credentials.as_ref().map(|c| c.stamp()) == Some(l.stamp.clone())
                });
                if fresh { None } else { live.take() }
            };
            if let Some(old) = stale {
                this.retire(old);
            }
        });
    }

    /// Closes a connection made with secrets that changed, once the calls in
    /// flight on it had their time (its call timeout): they were sent with
    /// the old credentials and are left to finish.
    fn retire(&self, old: Live) {
        let grace = self.config.call_timeout();
        let shutdown = self.shutdown.clone();
        tracing::info!(upstream = %self.config.id, tenant = self.tenant().unwrap_or("-"), "credentials changed; retiring the connection");
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(grace) => {}
                () = shutdown.cancelled() => {}
            }
            old.close().await;
        });
    }

    /// Has the next request open a new connection (after a new OAuth grant:
    /// its token travels on the new one); calls in flight on the current one
    /// finish there.
    pub(super) async fn reconnect(&self) {
        if let Some(old) = self.live.lock().await.take() {
            self.retire(old);
        }
    }

    /// Subscribes to its events.
    pub fn subscribe(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.events.subscribe()
    }

    /// Whether calls get through its circuit breaker now.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// Current status.
    pub fn status(&self) -> UpstreamStatus {
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        status.breaker = self.breaker.state();
        status
    }

    fn set_status(&self, update: impl FnOnce(&mut UpstreamStatus)) {
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        let before = status.state;
        update(&mut status);
        if status.state != before {
            status.since = now_secs();
        }
    }

    /// The server's description as it introduced itself (instructions or name), once connected.
    pub async fn description(&self) -> Option<String> {
        self.live
            .lock()
            .await
            .as_ref()
            .map(|l| l.description.clone())
    }

    /// Closes the connection (and its child process) and stops reconnecting.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        if let Some(live) = self.live.lock().await.take() {
            live.close().await;
        }
    }

    fn unavailable(&self, reason: String) -> UpstreamError {
        UpstreamError::Unavailable {
            id: self.config.id.clone(),
            reason,
        }
    }

    fn failed(&self, reason: String) -> UpstreamError {
        tracing::warn!(upstream = %self.config.id, %reason, "connection failed");
        self.set_status(|s| {
            s.state = UpstreamState::Down;
            s.failures += 1;
            s.last_error = Some(reason.clone());
        });
        self.unavailable(reason)
    }
}
