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

use quiver_proto::ToolDef;
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
    breaker::{BreakerState, CircuitBreaker},
    call_options::CallOptions,
    client::{ClientSignal, InFlight, InFlightGuard, UpstreamClient},
    config::{Transport, UpstreamConfig, UpstreamProtocol},
    error::UpstreamError,
    event::{ResourceUpdate, UpstreamEvent},
    request_span::ClientRequestSpan,
    secret_scrub::SecretScrub,
    secret_value::{SecretValue, TenantSecrets},
    status::{UpstreamState, UpstreamStatus, now_secs},
    stdio::{self, SpawnError},
    streamable_http::{self, HttpTransportError},
    tenant_credentials::{
        CredentialStamp, CredentialsError, SecretHolder, SecretSlot, TenantCredentials,
    },
};

type Peer = rmcp::service::Peer<RoleClient>;

/// How a connection to an upstream speaking `protocol` starts: the newest
/// revision first (`server/discover`), `initialize` for older servers.
fn lifecycle(protocol: UpstreamProtocol) -> ClientLifecycleMode {
    use rmcp::model::ProtocolVersion as V;
    match protocol {
        UpstreamProtocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![V::V_2026_07_28],
            legacy_version: Some(V::V_2025_11_25),
        },
        UpstreamProtocol::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![V::V_2026_07_28],
        },
        UpstreamProtocol::Sessions => ClientLifecycleMode::Initialize,
    }
}

/// What a request says about its caller: to an upstream of MCP 2026-07-28,
/// the caller's capabilities (so it asks only for what the caller can give)
/// and the least severe log message it wants, in the request's `_meta`.
fn request_options(peer: &Peer, sink: Option<&dyn crate::CallSink>) -> PeerRequestOptions {
    let options = PeerRequestOptions::no_options();
    let Some(sink) = sink.filter(|_| is_stateless(peer)) else {
        return options;
    };
    let mut meta = rmcp::model::RequestMetaObject::new();
    if let Some(capabilities) = sink.client_capabilities() {
        meta.set_client_capabilities(capabilities);
    }
    #[allow(deprecated)] // logLevel is current in 2026-07-28
    if let Some(level) = sink.log_level() {
        meta.set_log_level(level);
    }
    options.with_meta(meta)
}

/// Whether the connection speaks MCP 2026-07-28 (or later): stateless,
/// `_meta` on every request, notifications only on `subscriptions/listen`.
fn is_stateless(peer: &Peer) -> bool {
    peer.peer_info().is_some_and(|info| {
        info.protocol_version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
    })
}

/// An upstream of MCP 2026-07-28 says its lists changed only on a
/// `subscriptions/listen` stream: one per connection, for the lists it says
/// change, its notifications handed to the connection's owner like a 2025
/// upstream's. The stream ends with the connection (or the returned handle).
fn listen_for_list_changes(
    peer: &Peer,
    signals: mpsc::UnboundedSender<ClientSignal>,
) -> AbortOnDropHandle<()> {
    let peer = peer.clone();
    AbortOnDropHandle::new(tokio::spawn(async move {
        let changes = peer
            .peer_info()
            .and_then(|info| info.capabilities.tools.clone())
            .and_then(|tools| tools.list_changed)
            .unwrap_or(false);
        if !changes {
            return;
        }
        let filter = rmcp::model::SubscriptionFilter::builder()
            .tools_list_changed()
            .build();
        let Ok(mut subscription) = peer.listen(filter).await else {
            return;
        };
        while let Ok(Some(notification)) = subscription.next().await {
            if let rmcp::model::ServerNotification::ToolListChangedNotification(_) = notification
                && signals.send(ClientSignal::ToolsChanged).is_err()
            {
                return;
            }
        }
    }))
}

/// The part of an upstream error's `data` a client needs (and no more: the
/// rest may say things about the upstream the client should not hear): the
/// capabilities a `-32021` requires, the URI of a resource not found.
fn meaningful_data(code: i32, data: Option<serde_json::Value>) -> Option<Box<serde_json::Value>> {
    let data = data?;
    let keep = match code {
        -32021 => "requiredCapabilities",
        -32002 | -32602 => "uri",
        _ => return None,
    };
    let value = data.get(keep)?.clone();
    Some(Box::new(serde_json::json!({ keep: value })))
}

/// Why a connection could not be started.
#[derive(Debug, thiserror::Error)]
enum ServeFailure {
    /// `server/discover` found no revision both sides speak.
    #[error("initialize failed: {0}")]
    NoCommonVersion(Box<rmcp::service::ClientInitializeError>),
    /// The lifecycle failed otherwise.
    #[error("initialize failed: {0}")]
    Initialize(Box<rmcp::service::ClientInitializeError>),
    /// An in-process upstream's stream was used up.
    #[error("the in-process stream has ended and cannot be reopened")]
    StreamEnded,
    /// A stdio upstream's process did not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// An HTTP upstream's transport could not be set up.
    #[error(transparent)]
    Http(#[from] HttpTransportError),
}

impl From<rmcp::service::ClientInitializeError> for ServeFailure {
    fn from(e: rmcp::service::ClientInitializeError) -> ServeFailure {
        match e {
            rmcp::service::ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
                ServeFailure::NoCommonVersion(Box::new(e))
            }
            other => ServeFailure::Initialize(Box::new(other)),
        }
    }
}

/// Why connecting to an upstream failed (the upstream's `last_error`).
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    /// A per-tenant upstream has no credentials to connect with.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// The transport or the session could not be opened.
    #[error(transparent)]
    Serve(#[from] ServeFailure),
    /// The task connecting failed.
    #[error("the connection attempt failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

/// Rounds of `input_required` answered for one request before giving up.
const MAX_INPUT_ROUNDS: usize = 10;

/// Puts the client's answers and the upstream's state into the retry of
/// `request`; `false` for a request that cannot carry them.
fn with_input(
    request: &mut ClientRequest,
    responses: rmcp::model::InputResponses,
    state: Option<String>,
) -> bool {
    match request {
        ClientRequest::CallToolRequest(r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
        }
        ClientRequest::GetPromptRequest(r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
        }
        ClientRequest::ReadResourceRequest(r) => {
            r.params.input_responses = Some(responses);
            r.params.request_state = state;
        }
        _ => return false,
    }
    true
}

/// Pages of `tools/list` followed before giving up (a server that never stops paging).
const MAX_LIST_PAGES: usize = 1000;

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
}

impl Upstream {
    /// A new, not yet connected upstream. A per-tenant one (its header or env
    /// values reference `${tenant_secret:NAME}`) made this way has no secrets
    /// to connect with: an [`crate::UpstreamSet`] gives its upstreams the
    /// node's secrets and routes each tenant's calls to a connection of its own.
    pub fn new(config: UpstreamConfig) -> Arc<Upstream> {
        let holder = SecretHolder::Discovery {
            preferred: config.discovery_tenant.clone(),
        };
        Upstream::with_credentials(config, holder, Arc::default())
    }

    /// An upstream whose `${tenant_secret:NAME}` references (if any) resolve
    /// for `holder` from `slot`.
    pub(crate) fn with_credentials(
        config: UpstreamConfig,
        holder: SecretHolder,
        slot: Arc<SecretSlot>,
    ) -> Arc<Upstream> {
        let names = config.tenant_secret_names();
        let credentials = (!names.is_empty()).then(|| TenantCredentials::new(names, holder, slot));
        Upstream::with_connector(config, credentials, Connector::Configured)
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
        Arc::new(Upstream {
            breaker: CircuitBreaker::new(config.breaker()),
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

    /// The live peer, connecting first if needed. Nothing is sent to the server
    /// before this returns, so a failure here never loses a call.
    async fn peer(self: &Arc<Self>) -> Result<Peer, UpstreamError> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_ref() {
            // A per-tenant connection made with secrets since changed is not reused.
            let current = self
                .credentials
                .as_ref()
                .is_none_or(|c| c.stamp() == l.stamp);
            if !l.peer.is_transport_closed() && current {
                return Ok(l.peer.clone());
            }
            if let Some(old) = live.take()
                && !old.peer.is_transport_closed()
            {
                self.retire(old);
            }
        }
        if self.shutdown.is_cancelled() {
            return Err(self.unavailable("shutting down".into()));
        }
        self.set_status(|s| s.state = UpstreamState::Connecting);
        // On a task of its own, outside the caller's span: the connection's
        // tasks (rmcp's serve loop takes the current span) outlive the
        // request, and would keep its span, and so its trace, from ending.
        // Dropping it (a timeout, a caller gone) stops the attempt, as before.
        let this = self.clone();
        let connecting = AbortOnDropHandle::new(tokio::spawn(async move { this.connect().await }));
        let connected = tokio::time::timeout(self.config.connect_timeout(), connecting)
            .await
            .map(|joined| joined.unwrap_or_else(|e| Err(ConnectError::Task(e))));
        let result = match connected {
            Ok(Ok(l)) => l,
            Ok(Err(reason)) => return Err(self.failed(reason.to_string())),
            Err(_) => {
                return Err(self.failed(format!(
                    "no answer to initialize within {} ms",
                    self.config.connect_timeout_ms
                )));
            }
        };
        let peer = result.peer.clone();
        *live = Some(result);
        let protocol = peer
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        self.set_status(|s| {
            s.protocol = protocol;
            s.state = UpstreamState::Connected;
            s.last_error = None;
            s.failures = 0;
        });
        let _ = self.events.send(UpstreamEvent::Connected);
        tracing::info!(upstream = %self.config.id, tenant = self.tenant().unwrap_or("-"), "connected");
        Ok(peer)
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

    async fn connect(self: &Arc<Self>) -> Result<Live, ConnectError> {
        let (secrets, stamp) = match &self.credentials {
            Some(credentials) => {
                let (secrets, stamp) = credentials.resolve()?;
                (Some(secrets), Some(stamp))
            }
            None => (None, None),
        };
        let (signals, mut signal_rx) = mpsc::unbounded_channel();
        let signals_tx = signals.clone();
        let handler = UpstreamClient {
            in_flight: self.in_flight.clone(),
            signals,
        };
        let (service, process_group) = self.serve(handler, secrets.as_ref()).await?;
        if let Some(secrets) = secrets {
            let mut scrub = self.scrub.lock().unwrap_or_else(|p| p.into_inner());
            let current: Vec<SecretValue> = secrets.values().cloned().collect();
            let both = current.iter().chain(scrub.0.iter()).cloned();
            *scrub = (current.clone(), Arc::new(SecretScrub::new(both)));
        }
        let peer = service.peer().clone();
        let description = peer
            .peer_info()
            .map(|info| {
                info.instructions
                    .clone()
                    .filter(|i| !i.trim().is_empty())
                    .or_else(|| {
                        info.server_info
                            .as_ref()
                            .and_then(|s| s.description.clone())
                    })
                    .or_else(|| info.server_info.as_ref().and_then(|s| s.title.clone()))
                    .or_else(|| info.server_info.as_ref().map(|s| s.name.clone()))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let stop = service.cancellation_token();

        // Own the service in a task: when it ends, the upstream is disconnected
        // (unless a newer connection replaced this one: a retired connection
        // ending says nothing of the current one).
        let this = Arc::downgrade(self);
        let generation = self.connections.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::spawn(async move {
            let reason = service.waiting().await;
            if let Some(upstream) = this.upgrade()
                && upstream.connections.load(Ordering::SeqCst) == generation
            {
                tracing::warn!(upstream = %upstream.config.id, ?reason, "connection ended");
                upstream.set_status(|s| {
                    if s.state == UpstreamState::Connected {
                        s.state = UpstreamState::Down;
                        s.last_error = Some("connection ended".into());
                    }
                });
                let _ = upstream.events.send(UpstreamEvent::Disconnected);
            }
        });
        let events = self.events.clone();
        let updates = self.updates_to.get().cloned();
        let id = self.config.id.clone();
        let listening = is_stateless(&peer).then(|| listen_for_list_changes(&peer, signals_tx));
        tokio::spawn(async move {
            // Ends with the connection (the handler, holding the sender, is gone).
            let _listening = listening;
            while let Some(signal) = signal_rx.recv().await {
                match signal {
                    ClientSignal::ToolsChanged => {
                        let _ = events.send(UpstreamEvent::ToolsChanged);
                    }
                    ClientSignal::ResourceUpdated(uri) => {
                        if let Some(updates) = &updates {
                            let _ = updates.send(ResourceUpdate {
                                server: id.clone(),
                                uri,
                            });
                        }
                    }
                }
            }
        });
        Ok(Live {
            peer,
            stop,
            description,
            process_group,
            stamp,
        })
    }

    /// Opens a transport as the connector says and initialises the session
    /// over it; `secrets` resolve `${tenant_secret:NAME}` references.
    async fn serve(
        &self,
        handler: UpstreamClient,
        secrets: Option<&TenantSecrets>,
    ) -> Result<(RunningService<RoleClient, UpstreamClient>, Option<u32>), ServeFailure> {
        let protocol = match self.config.protocol {
            UpstreamProtocol::Auto if self.speaks_sessions.load(Ordering::Relaxed) => {
                UpstreamProtocol::Sessions
            }
            configured => configured,
        };
        match self.serve_as(handler.clone(), secrets, protocol).await {
            // A server that knows of MCP 2026-07-28 but does not speak it
            // refuses `server/discover` with the versions it does speak, on a
            // connection it then closes: open another with `initialize`, and
            // go straight to it from now on.
            Err(reason @ ServeFailure::NoCommonVersion(_))
                if protocol == UpstreamProtocol::Auto =>
            {
                tracing::debug!(upstream = %self.config.id, "{reason}; opening a session instead");
                self.speaks_sessions.store(true, Ordering::Relaxed);
                self.serve_as(handler, secrets, UpstreamProtocol::Sessions)
                    .await
            }
            result => result,
        }
    }

    /// Opens a transport as the connector says and starts the MCP lifecycle
    /// `protocol` names over it.
    async fn serve_as(
        &self,
        handler: UpstreamClient,
        secrets: Option<&TenantSecrets>,
        protocol: UpstreamProtocol,
    ) -> Result<(RunningService<RoleClient, UpstreamClient>, Option<u32>), ServeFailure> {
        let lifecycle = lifecycle(protocol);
        if let Connector::InProcess(stream) = &self.connector {
            let stream = stream.lock().unwrap_or_else(|p| p.into_inner()).take();
            let Some(stream) = stream else {
                return Err(ServeFailure::StreamEnded);
            };
            let stream = counting(stream, &handler);
            let service = handler.serve_with_lifecycle(stream, lifecycle).await?;
            return Ok((service, None));
        }
        match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (transport, process_group) =
                    stdio::spawn(&self.config.id, command, args, env, cwd.as_deref(), secrets)?;
                let transport = counting(transport, &handler);
                let service = handler.serve_with_lifecycle(transport, lifecycle).await?;
                Ok((service, process_group))
            }
            Transport::Http { url, headers } => {
                let transport = streamable_http::transport(url, headers, secrets)?;
                let transport = counting(transport, &handler);
                let service = handler.serve_with_lifecycle(transport, lifecycle).await?;
                Ok((service, None))
            }
        }
    }

    /// Lists every tool, following pagination. Listing has no side effects, so a
    /// broken connection is re-opened once.
    pub async fn list_tools(self: &Arc<Self>) -> Result<Vec<ToolDef>, UpstreamError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let peer = self.peer().await?;
            match self.list_pages(&peer).await {
                Ok(tools) => {
                    self.set_status(|s| s.tools = tools.len());
                    // Tool definitions reach every tenant's manifest.
                    let scrub = self.scrubber();
                    if scrub.is_empty() {
                        return Ok(tools);
                    }
                    return Ok(tools.into_iter().map(|t| scrub.serde(t)).collect());
                }
                Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                    if attempt < 2 =>
                {
                    continue;
                }
                Err(e) => return Err(self.service_error(e, self.config.call_timeout())),
            }
        }
    }

    async fn list_pages(&self, peer: &Peer) -> Result<Vec<ToolDef>, ServiceError> {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_LIST_PAGES {
            let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
                PaginatedRequestParams::default().with_cursor(cursor.take()),
            ));
            let options = PeerRequestOptions::with_timeout(self.config.call_timeout());
            let response = peer
                .send_request_with_option(request, options)
                .await?
                .await_response()
                .await?;
            let ServerResult::ListToolsResult(page) = response else {
                return Err(ServiceError::UnexpectedResponse);
            };
            for tool in page.tools {
                match serde_json::to_value(&tool).and_then(serde_json::from_value::<ToolDef>) {
                    Ok(def) => tools.push(def),
                    Err(e) => {
                        tracing::warn!(upstream = %self.config.id, tool = %tool.name, "skipping tool: {e}")
                    }
                }
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(tools),
            }
        }
        tracing::warn!(upstream = %self.config.id, "tools/list paged more than {MAX_LIST_PAGES} times; keeping what was listed");
        Ok(tools)
    }

    /// Calls `tool` once. Never retried: a failure after the request was sent says so.
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        match self
            .request(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                options,
            )
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(result),
            other => Err(UpstreamError::Protocol {
                id: self.config.id.clone(),
                detail: format!(
                    "expected a tools/call result, got {}",
                    response_kind(&other)
                ),
            }),
        }
    }

    /// Sends one request (resources, prompts, completion, a tool call…) once and
    /// returns the upstream's result. Never retried once sent. Refused at once
    /// while the circuit breaker is open.
    pub async fn request(
        self: &Arc<Self>,
        mut request: ClientRequest,
        options: CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        if let Some(answered) = self.subscribe_by_listening(&request).await {
            return answered;
        }
        let traced = ClientRequestSpan::start(&self.config, self.tenant(), &mut request);
        let result = self
            .request_rounds(request, options)
            .instrument(traced.span.clone())
            .await;
        traced.finish(&result);
        result
    }

    /// Has resource updates of this upstream reported to `updates` (once).
    pub fn report_resource_updates_to(&self, updates: broadcast::Sender<ResourceUpdate>) {
        let _ = self.updates_to.set(updates);
    }

    /// `resources/subscribe` and `resources/unsubscribe` to an upstream of
    /// MCP 2026-07-28, which has neither: a `subscriptions/listen` stream per
    /// subscribed URI, its updates reported like a 2025 upstream's. `None`
    /// for any other request, or an upstream of an older revision.
    async fn subscribe_by_listening(
        self: &Arc<Self>,
        request: &ClientRequest,
    ) -> Option<Result<ServerResult, UpstreamError>> {
        let (uri, subscribe) = match request {
            ClientRequest::SubscribeRequest(r) => (r.params.uri.clone(), true),
            ClientRequest::UnsubscribeRequest(r) => (r.params.uri.clone(), false),
            _ => return None,
        };
        let peer = match self.peer().await {
            Ok(peer) if is_stateless(&peer) => peer,
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        };
        let mut listens = self
            .resource_listens
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !subscribe {
            listens.remove(&uri);
            return Some(Ok(ServerResult::empty(())));
        }
        let updates = self.updates_to.get().cloned();
        let id = self.config.id.clone();
        let filter = rmcp::model::SubscriptionFilter::builder()
            .resource_subscription(uri.clone())
            .build();
        let listen = tokio::spawn(async move {
            let Ok(mut subscription) = peer.listen(filter).await else {
                return;
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if let (
                    rmcp::model::ServerNotification::ResourceUpdatedNotification(updated),
                    Some(updates),
                ) = (notification, &updates)
                {
                    let _ = updates.send(ResourceUpdate {
                        server: id.clone(),
                        uri: updated.params.uri,
                    });
                }
            }
        });
        listens.insert(uri, AbortOnDropHandle::new(listen));
        Some(Ok(ServerResult::empty(())))
    }

    /// [`Upstream::request_admitted`] until the upstream stops asking for
    /// input: an MCP 2026-07-28 upstream answers `input_required` (sampling,
    /// elicitation, roots) instead of asking mid-call; the caller's sink
    /// answers, and the request is sent again with those answers and the
    /// upstream's `requestState`, at most [`MAX_INPUT_ROUNDS`] times. With
    /// no sink, `input_required` is the answer.
    async fn request_rounds(
        self: &Arc<Self>,
        mut request: ClientRequest,
        options: CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        if let Some(given) = options.input_responses.clone() {
            with_input(&mut request, given, None);
        }
        for _ in 0..MAX_INPUT_ROUNDS {
            let asked = match self
                .request_admitted(request.clone(), options.clone())
                .await?
            {
                ServerResult::InputRequiredResult(asked) => asked,
                other => return Ok(other),
            };
            // Without a sink, the caller answers `input_required` itself
            // (a forwarded prompts/get or resources/read of a stateless client).
            let Some(sink) = &options.sink else {
                return Ok(ServerResult::InputRequiredResult(asked));
            };
            let responses = match asked.input_requests {
                Some(requests) => sink
                    .input(requests)
                    .await
                    .map_err(|e| self.input_not_given(e.message.to_string()))?,
                None => Default::default(),
            };
            if !with_input(&mut request, responses, asked.request_state) {
                return Err(UpstreamError::Protocol {
                    id: self.config.id.clone(),
                    detail: "input_required in answer to a request that cannot carry input".into(),
                });
            }
        }
        Err(UpstreamError::Protocol {
            id: self.config.id.clone(),
            detail: format!("still asked for input after {MAX_INPUT_ROUNDS} rounds"),
        })
    }

    fn input_not_given(&self, reason: String) -> UpstreamError {
        UpstreamError::Protocol {
            id: self.config.id.clone(),
            detail: format!("it asked the client for input, which was not given: {reason}"),
        }
    }

    /// [`Upstream::request`] past the circuit breaker, scrubbed.
    async fn request_admitted(
        self: &Arc<Self>,
        request: ClientRequest,
        options: CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        let admission = self
            .breaker
            .admit()
            .map_err(|retry_in| UpstreamError::CircuitOpen {
                id: self.config.id.clone(),
                retry_in,
            })?;
        let result = self.request_once(request, options).await;
        let healthy = match &result {
            Ok(_) | Err(UpstreamError::Remote { .. } | UpstreamError::Cancelled { .. }) => true,
            Err(_) => false,
        };
        self.breaker.record(admission, healthy);
        let scrub = self.scrubber();
        if scrub.is_empty() {
            return result;
        }
        match result {
            Ok(ServerResult::CallToolResult(r)) => Ok(ServerResult::CallToolResult(scrub.serde(r))),
            Ok(other) => Ok(scrub.serde(other)),
            Err(e) => Err(scrub.error(e)),
        }
    }

    /// What scrubs this upstream's per-tenant secrets from its answers
    /// (empty for an upstream shared by every tenant).
    fn scrubber(&self) -> Arc<SecretScrub> {
        self.scrub
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }

    async fn request_once(
        self: &Arc<Self>,
        request: ClientRequest,
        options: CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        let timeout = options
            .timeout
            .unwrap_or_else(|| self.config.call_timeout());
        let peer = tokio::select! {
            peer = self.peer() => peer?,
            () = options.cancel.cancelled() => return Err(UpstreamError::Cancelled { id: self.config.id.clone() }),
        };
        // rmcp assigns the progress token while sending; register it before any
        // notification about it can be handled.
        let sent_options = request_options(&peer, options.sink.as_deref());
        let mut registry = self.in_flight.lock().await;
        let handle = peer
            .send_request_with_option(request, sent_options)
            .await
            .map_err(|e| match e {
                // The request never left: safe to report as unavailable.
                ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                    self.unavailable("connection closed before the request was sent".into())
                }
                other => self.service_error(other, timeout),
            })?;
        let guard = options.sink.map(|sink| {
            registry.insert(handle.progress_token.clone(), sink);
            InFlightGuard {
                token: handle.progress_token.clone(),
                in_flight: self.in_flight.clone(),
            }
        });
        drop(registry);
        let id = handle.id.clone();
        // Whoever drops this call before it ends (a script stopped, a client
        // gone) still tells the server, as an explicit cancel does.
        let mut abandoned = CancelOnDrop {
            peer: Some(peer.clone()),
            id: id.clone(),
        };
        let response = tokio::select! {
            response = tokio::time::timeout(timeout, handle.await_response()) => response,
            () = options.cancel.cancelled() => {
                abandoned.disarm();
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some("cancelled by the caller".into())))
                    .await;
                return Err(UpstreamError::Cancelled { id: self.config.id.clone() });
            }
        };
        abandoned.disarm();
        if guard.is_some() {
            // Its log messages and progress read before the response reach
            // its sink first.
            self.in_flight.relayed_settled().await;
        }
        drop(guard);
        match response {
            Err(_) => {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some(format!("timed out after {timeout:?}")),
                    ))
                    .await;
                Err(UpstreamError::Timeout {
                    id: self.config.id.clone(),
                    timeout,
                })
            }
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(UpstreamError::LostDuringCall {
                    id: self.config.id.clone(),
                })
            }
            Ok(Err(e)) => Err(self.service_error(e, timeout)),
        }
    }

    /// Optional MCP features the server declared at initialize (`resources`,
    /// `prompts`, `completions`), once connected.
    pub async fn features(&self) -> Vec<String> {
        let live = self.live.lock().await;
        let Some(info) = live.as_ref().and_then(|l| l.peer.peer_info()) else {
            return Vec::new();
        };
        let caps = &info.capabilities;
        let mut features = Vec::new();
        if caps.completions.is_some() {
            features.push("completions".to_string());
        }
        if caps.prompts.is_some() {
            features.push("prompts".to_string());
        }
        if caps.resources.is_some() {
            features.push("resources".to_string());
        }
        features
    }

    fn service_error(&self, error: ServiceError, timeout: Duration) -> UpstreamError {
        let id = self.config.id.clone();
        match error {
            ServiceError::McpError(e) => UpstreamError::Remote {
                id,
                code: e.code.0,
                message: e.message.to_string(),
                data: meaningful_data(e.code.0, e.data),
            },
            ServiceError::Timeout { .. } => UpstreamError::Timeout { id, timeout },
            ServiceError::Cancelled { .. } => UpstreamError::Cancelled { id },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.unavailable("connection closed".into())
            }
            other => UpstreamError::Protocol {
                id,
                detail: other.to_string(),
            },
        }
    }
}

fn response_kind(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .unwrap_or_else(|| "an unknown result".into())
}

/// Sends `notifications/cancelled` for a call whose future is dropped
/// before it ends (from a task of its own: a drop cannot wait).
struct CancelOnDrop {
    peer: Option<Peer>,
    id: rmcp::model::RequestId,
}

impl CancelOnDrop {
    /// The call ended (answered, timed out or cancelled explicitly).
    fn disarm(&mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = self.id.clone();
        runtime.spawn(async move {
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(id),
                    Some("the caller went away".into()),
                ))
                .await;
        });
    }
}

/// `transport`, counting the log messages read for `handler`'s calls.
fn counting<T, E, A>(
    transport: T,
    handler: &UpstreamClient,
) -> crate::client::CountingLogs<impl rmcp::transport::Transport<RoleClient, Error = E> + 'static>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    crate::client::CountingLogs::new(transport.into_transport(), handler.in_flight.clone())
}
