//! Opening a connection to an upstream: its transport, its lifecycle, and
//! what it tells its owner when its lists change.

use super::{calls::is_stateless, *};
use crate::trace_headers::TracingHttpClient;
use quiver_proto::references::TENANT_SECRET_PREFIX;

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
    /// An upstream behind OAuth could not be authorized.
    #[error(transparent)]
    OAuth(#[from] crate::oauth::OAuthError),
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

impl ConnectError {
    /// The `WWW-Authenticate` challenge of the 401 or 403 that refused the
    /// connection's initialize, if that is why it failed.
    fn auth_challenge(&self) -> Option<&str> {
        match self {
            ConnectError::Serve(ServeFailure::Initialize(e) | ServeFailure::NoCommonVersion(e)) => {
                e.auth_challenge()
            }
            _ => None,
        }
    }
}

impl Upstream {
    /// The live peer, connecting first if needed. Nothing is sent to the server
    /// before this returns, so a failure here never loses a call.
    pub(super) async fn peer(self: &Arc<Self>) -> Result<Peer, UpstreamError> {
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
            Ok(Err(reason)) => {
                let failed = self.failed(reason.to_string());
                // Behind OAuth, a connection refused for want of
                // authorization (a token revoked or expired while no
                // connection was open) is a refusal like a call's: the
                // caller renews the grant and connects again.
                return Err(
                    match reason.auth_challenge().filter(|_| self.oauth.is_some()) {
                        Some(challenge) => UpstreamError::Unauthorized {
                            id: self.config.id.clone(),
                            reason: challenge.to_string(),
                        },
                        None => failed,
                    },
                );
            }
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
                crate::install_crypto_provider();
                let plain = || TracingHttpClient::new().map_err(HttpTransportError::from);
                // A tenant's own grant: its access token, as the control
                // plane last refreshed it, is the bearer token.
                let with_grant;
                let headers = match self.grant_secret() {
                    Some(grant) => {
                        with_grant = with_bearer_secret(headers, &grant);
                        &with_grant
                    }
                    None => headers,
                };
                let http = |client| serve_http(&handler, client, url, headers, secrets, &lifecycle);
                let oauth = self
                    .oauth
                    .as_ref()
                    .filter(|_| self.grant_secret().is_none());
                let Some(oauth) = oauth else {
                    let service = http(plain()?).await??;
                    return Ok((service, None));
                };
                // Behind OAuth: over the authorized client once there is one.
                // A refusal for want of authorization asks for it (once),
                // then connects again.
                let mut asked = false;
                loop {
                    let seen = oauth.generation();
                    let attempt = match oauth.client().await {
                        Some(client) => {
                            serve_http(&handler, client, url, headers, secrets, &lifecycle).await?
                        }
                        None => http(plain()?).await?,
                    };
                    match attempt {
                        Err(refused)
                            if !asked
                                && (refused.auth_challenge().is_some()
                                    || refused.is_authorization_required()) =>
                        {
                            asked = true;
                            let challenge = refused.auth_challenge().map(str::to_string);
                            oauth.authorize(challenge.as_deref(), seen).await?;
                        }
                        attempt => return Ok((attempt?, None)),
                    }
                }
            }
        }
    }
}

/// `headers` with an `Authorization` header sending the tenant secret
/// `name` as a bearer token.
fn with_bearer_secret(
    headers: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut headers = headers.clone();
    headers.retain(|header, _| !header.eq_ignore_ascii_case("authorization"));
    headers.insert(
        "Authorization".into(),
        format!("Bearer ${{{TENANT_SECRET_PREFIX}{name}}}"),
    );
    headers
}

/// Starts the MCP lifecycle over Streamable HTTP to `url` through `client`
/// (plain, or one that adds OAuth's bearer header).
async fn serve_http<C>(
    handler: &UpstreamClient,
    client: C,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    secrets: Option<&TenantSecrets>,
    lifecycle: &ClientLifecycleMode,
) -> Result<
    Result<RunningService<RoleClient, UpstreamClient>, rmcp::service::ClientInitializeError>,
    HttpTransportError,
>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Send + Sync + 'static,
{
    let transport = streamable_http::transport(client, url, headers, secrets)?;
    let transport = counting(transport, handler);
    Ok(handler
        .clone()
        .serve_with_lifecycle(transport, lifecycle.clone())
        .await)
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
