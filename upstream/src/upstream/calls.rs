//! Requests to a connected upstream: listing, calls at most once, the
//! rounds of `input_required`, and cancellation when a caller goes.

use super::*;

/// What a request says about its caller: to an upstream of MCP 2026-07-28,
/// the caller's capabilities (so it asks only for what the caller can give)
/// and the least severe log message it wants, in the request's `_meta`.
fn request_options(peer: &Peer, sink: Option<&dyn crate::CallSink>) -> PeerRequestOptions {
    let options = PeerRequestOptions::no_options();
    let Some(sink) = sink else {
        return options;
    };
    if !is_stateless(peer) {
        // In a session, the capabilities are the session's; a caller that
        // takes tasks (SEP-2663) says so on its requests, so the upstream
        // may make them tasks (followed in `task_follow`).
        return match sink.client_capabilities().filter(|c| c.supports_tasks()) {
            Some(capabilities) => {
                let mut meta = rmcp::model::RequestMetaObject::new();
                meta.set_client_capabilities(capabilities);
                options.with_meta(meta)
            }
            None => options,
        };
    }
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
pub(super) fn is_stateless(peer: &Peer) -> bool {
    peer.peer_info().is_some_and(|info| {
        info.protocol_version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
    })
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

/// How long a renewed OAuth token may take to reach this node from the
/// control plane before the refused request fails.
const GRANT_ARRIVAL: Duration = Duration::from_secs(10);
impl Upstream {
    /// Lists every tool, following pagination. Listing has no side effects, so a
    /// broken connection is re-opened once.
    pub async fn list_tools(self: &Arc<Self>) -> Result<Vec<ToolDef>, UpstreamError> {
        let mut attempt = 0;
        let mut grants = 0;
        loop {
            attempt += 1;
            let seen = self.oauth_generation();
            let peer = match self.peer().await {
                Ok(peer) => peer,
                // The connection itself was refused for want of authorization.
                Err(UpstreamError::Unauthorized { reason, .. }) => {
                    self.authorize_again(&reason, &mut grants, seen).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
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
                Err(e)
                    if let Some(UpstreamError::Unauthorized { reason, .. }) =
                        self.refused_for_authorization(&e) =>
                {
                    self.authorize_again(&reason, &mut grants, seen).await?;
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
                // The upstream made a task of it: the caller still gets one result.
                ServerResult::CreateTaskResult(created) => {
                    return self.follow_task(created, options).await;
                }
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

    pub(super) fn input_not_given(&self, reason: String) -> UpstreamError {
        UpstreamError::Protocol {
            id: self.config.id.clone(),
            detail: format!("it asked the client for input, which was not given: {reason}"),
        }
    }

    /// [`Upstream::request`] past the circuit breaker, scrubbed.
    pub(super) async fn request_admitted(
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
        // Only an upstream behind OAuth may send a request again: the copy
        // is made for it alone.
        let again = self
            .oauth
            .is_some()
            .then(|| (request.clone(), options.clone()));
        let mut seen = self.oauth_generation();
        let mut result = self.request_once(request, options).await;
        // Refused for want of authorization or scope (so it did not run):
        // ask for a new grant and send it again, a few times at most.
        let mut grants = 0;
        while let (Some((request, options)), Err(UpstreamError::Unauthorized { reason, .. })) =
            (&again, &result)
        {
            if let Err(refused) = self
                .authorize_again(&reason.clone(), &mut grants, seen)
                .await
            {
                result = Err(refused);
                break;
            }
            seen = self.oauth_generation();
            result = self.request_once(request.clone(), options.clone()).await;
        }
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
                _ if let Some(refused) = self.refused_for_authorization(&e) => refused,
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
            Ok(Err(e)) if let Some(refused) = self.refused_for_authorization(&e) => Err(refused),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                Err(UpstreamError::LostDuringCall {
                    id: self.config.id.clone(),
                })
            }
            Ok(Err(e)) => Err(self.service_error(e, timeout)),
        }
    }

    /// For an upstream behind OAuth: the refusal `e` is, when the server
    /// answered 401 or 403 with a challenge (the request did not run).
    fn refused_for_authorization(&self, e: &ServiceError) -> Option<UpstreamError> {
        Some(UpstreamError::Unauthorized {
            id: self.config.id.clone(),
            reason: self.challenge_of(e)?.to_string(),
        })
    }

    /// For an upstream behind OAuth: the `WWW-Authenticate` challenge of the
    /// 401 or 403 that refused `e`'s request.
    fn challenge_of<'e>(&self, e: &'e ServiceError) -> Option<&'e str> {
        self.oauth.as_ref()?;
        e.auth_challenge()
    }

    /// After a refusal whose challenge is `challenge`: a new grant (the
    /// `grants`-th in a row, at most [`crate::oauth::MAX_STEP_UPS`]), and a new
    /// connection that carries it.
    async fn authorize_again(
        &self,
        challenge: &str,
        grants: &mut u32,
        seen: u64,
    ) -> Result<(), UpstreamError> {
        let refused = |reason: String| UpstreamError::Unauthorized {
            id: self.config.id.clone(),
            reason,
        };
        let oauth = self
            .oauth
            .as_ref()
            .ok_or_else(|| refused(challenge.into()))?;
        if self.grant_secret().is_some() {
            return self
                .renew_grant(challenge, grants)
                .await
                .map_err(|e| refused(e.to_string()));
        }
        if *grants == crate::oauth::MAX_STEP_UPS {
            return Err(refused(
                crate::oauth::OAuthError::ScopeRetries(*grants).to_string(),
            ));
        }
        *grants += 1;
        oauth
            .authorize(Some(challenge), seen)
            .await
            .map_err(|e| refused(e.to_string()))?;
        self.reconnect().await;
        Ok(())
    }

    /// After a refusal of a tenant's own token: the control plane renews it
    /// (once per request), and the next connection carries the renewed one.
    /// A refusal for want of scope is not renewable: the person has to
    /// grant more.
    async fn renew_grant(&self, challenge: &str, grants: &mut u32) -> Result<(), RenewRefusal> {
        let id = &self.config.id;
        let credentials = self.credentials.as_ref().ok_or(RenewRefusal::NoGrant)?;
        let before = credentials.stamp();
        let tenant = before
            .as_ref()
            .map(|stamp| stamp.tenant().to_string())
            .ok_or(RenewRefusal::NoGrant)?;
        // What to do next, with `flags` added to the authorize command.
        let again = |flags: &str| match self.config.acts_for_caller() {
            true => "the caller's own token may lack what the exchange needs".to_string(),
            false => format!(
                "authorize again with `quiver ctl upstream authorize {id} --tenant {tenant}{flags}`"
            ),
        };
        if challenge.contains("insufficient_scope") {
            let scopes = crate::oauth::challenge_scope(challenge)
                .unwrap_or_default()
                .to_string();
            return Err(match self.config.acts_for_caller() {
                true => RenewRefusal::CallerScope { scopes },
                false => {
                    let flags: String = scopes
                        .split_whitespace()
                        .map(|scope| format!(" --scope {scope}"))
                        .collect();
                    RenewRefusal::TenantScope {
                        next: again(&flags),
                        scopes,
                        tenant,
                    }
                }
            });
        }
        if *grants > 0 {
            return Err(RenewRefusal::RefusedAgain {
                challenge: challenge.to_string(),
                next: again(""),
                tenant,
            });
        }
        *grants += 1;
        let renewer = credentials
            .renewer()
            .ok_or_else(|| RenewRefusal::NoRenewer {
                tenant: tenant.clone(),
            })?;
        let mut events = self.subscribe();
        tracing::info!(upstream = %id, %tenant, "token refused; asking the control plane to renew it");
        renewer.renew(&tenant, id).await?;
        // The renewed token arrives with the tenants' secrets.
        let deadline = tokio::time::Instant::now() + GRANT_ARRIVAL;
        while credentials.stamp() == before {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => {
                    return Err(RenewRefusal::NotArrived {
                        tenant,
                        after: GRANT_ARRIVAL,
                    });
                }
            }
        }
        self.reconnect().await;
        Ok(())
    }

    /// The generation of this upstream's OAuth grants (0 without OAuth).
    fn oauth_generation(&self) -> u64 {
        self.oauth
            .as_ref()
            .map_or(0, crate::oauth::Authorizer::generation)
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

pub(super) fn response_kind(result: &ServerResult) -> String {
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

/// Why an upstream's refusal of a tenant's token did not lead to a new one.
/// Worded for the operator (what to do next); never holds a token.
#[derive(Debug, thiserror::Error)]
enum RenewRefusal {
    /// The connection holds no tenant's grant.
    #[error("no tenant holds a grant to renew")]
    NoGrant,
    /// The upstream wants scope the exchanged token does not carry.
    #[error(
        "it asks for more scope{} than the token exchanged for the caller carries; add it to the upstream's `oauth.scopes` if the caller's own token allows it",
        asked(scopes)
    )]
    CallerScope {
        /// The scopes the challenge names (may be empty).
        scopes: String,
    },
    /// The upstream wants scope the tenant did not grant.
    #[error(
        "it asks for more scope{} than tenant `{tenant}` granted; {next}",
        asked(scopes)
    )]
    TenantScope {
        /// The scopes the challenge names (may be empty).
        scopes: String,
        /// The tenant.
        tenant: String,
        /// What to do next.
        next: String,
    },
    /// The renewed token was refused too.
    #[error("it refused tenant `{tenant}`'s renewed token too ({challenge}); {next}")]
    RefusedAgain {
        /// The tenant.
        tenant: String,
        /// The upstream's challenge.
        challenge: String,
        /// What to do next.
        next: String,
    },
    /// Nothing on this node renews grants.
    #[error("it refused tenant `{tenant}`'s token and this node has no control plane to renew it")]
    NoRenewer {
        /// The tenant.
        tenant: String,
    },
    /// The renewal itself failed.
    #[error(transparent)]
    Renewal(#[from] crate::RenewalError),
    /// The renewal was committed but its token never reached this node.
    #[error("tenant `{tenant}`'s token was renewed but did not reach this node within {after:?}")]
    NotArrived {
        /// The tenant.
        tenant: String,
        /// How long this node waited.
        after: Duration,
    },
}

/// ` (`scopes`)`, or nothing without scopes.
fn asked(scopes: &str) -> String {
    match scopes {
        "" => String::new(),
        scopes => format!(" (`{scopes}`)"),
    }
}
