//! One MCP session: the rmcp server handler that answers `initialize`,
//! `tools/list` and `tools/call` for a mode, over the current view of the
//! session's tenant. The tenant is the one the `initialize` request was
//! authenticated as; every later request must come from the same tenant,
//! and is answered from that tenant's view as it is at that moment.
#![allow(deprecated)] // logging is current in the protocol versions served here

use std::{
    borrow::Cow,
    sync::{Arc, OnceLock},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams,
        CompleteRequestParams, CompleteResult, CreateTaskResult, DiscoverResult, ErrorCode,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
        Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        ResultType, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

use opentelemetry::KeyValue;
use quiver_telemetry::instruments;
use quiver_view::{ToolView, token_estimate::estimate_tokens};

use crate::{
    auth::{AuthMode, Principal},
    gateway::Gateway,
    input_required::{
        AskClient, Drive, GivenInput, Progress, RunningCall, TaskTicketSlot, TaskWall,
        UpstreamTaskSignal,
    },
    mode::Mode,
    modes::{
        self, Backends, ModeHandler, ToolRequest, forward_app_call,
        forwarded::{self, convert},
        is_app_call,
    },
    revision::is_stateless,
};

/// The protocol versions the edge speaks: 2026-07-28 statelessly (every
/// request carries its version, client and capabilities in `_meta`), the
/// older ones in sessions opened by `initialize`.
pub const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

pub use crate::traced_session::GatewaySession;

mod subscriptions;

/// The rmcp handler of one MCP session; [`GatewaySession`] wraps it in a
/// span per request.
#[derive(Clone)]
pub(crate) struct SessionHandler {
    gateway: Arc<Gateway>,
    /// The mode its path names; `None` at `/mcp`, where the tenant's mode
    /// (or the edge's default) applies.
    path_mode: Option<Mode>,
    /// Who opened it, and what it serves; set by `initialize`.
    bound: Arc<OnceLock<Bound>>,
    /// Identifies the session's stash.
    id: Arc<str>,
}

/// What `initialize` fixed for the rest of a session.
struct Bound {
    /// The tenant that opened it.
    principal: Principal,
    /// Its mode.
    mode: Mode,
    /// Everything mode-specific: the tools, the instructions, the calls.
    handler: Arc<dyn ModeHandler>,
    /// Estimated tokens of the mode's own `tools/list` (its meta tools do not
    /// depend on the view), measured at the session's first listing.
    listed_tokens: OnceLock<u64>,
}

impl SessionHandler {
    /// A session on `gateway` in the mode its path names, or (`None`) the
    /// tenant's mode.
    pub(crate) fn at(gateway: Arc<Gateway>, path_mode: Option<Mode>) -> SessionHandler {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id: Arc<str> = format!("{}-{n}", std::process::id()).into();
        SessionHandler {
            gateway,
            path_mode,
            bound: Arc::new(OnceLock::new()),
            id,
        }
    }
}

impl SessionHandler {
    /// The gateway it serves.
    pub(crate) fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// What a request's stash belongs to: the session it names (the same on
    /// every edge that serves it), else this handler's own id.
    fn stash_session(&self, context: &RequestContext<RoleServer>) -> Arc<str> {
        crate::sessions::session_of(context).map_or_else(|| self.id.clone(), Arc::from)
    }
}

/// What a bound session is, for telemetry.
pub(crate) struct SessionFacts<'a> {
    /// The tenant that opened it.
    pub(crate) tenant: &'a str,
    /// Its mode.
    pub(crate) mode: Mode,
    /// The manifest version of the tenant's current view.
    pub(crate) manifest_version: Option<u64>,
}

/// Counts what a mode that lists less than every tool saved: the view's
/// full listing (estimated when the view was built) minus the mode's own.
fn count_tokens_saved(bound: &Bound, view: &ToolView, listed: &[Tool]) {
    let own = *bound.listed_tokens.get_or_init(|| {
        estimate_tokens(serde_json::to_string(listed).map_or(0, |json| json.len()))
    });
    instruments().tokens_saved.add(
        view.listing_tokens().saturating_sub(own),
        &[KeyValue::new("quiver.mode", bound.mode.as_str())],
    );
}

/// How long search and code mode's meta-tool listing may be cached.
const META_TOOLS_TTL_MS: u64 = 3_600_000;

/// Carries a stateless client's answers (`inputResponses`) and the
/// upstream's `requestState` of an earlier `input_required` to the upstream
/// that asked: prompts and resources are forwarded as they are.
fn with_input(
    params: &mut serde_json::Value,
    responses: Option<rmcp::model::InputResponses>,
    state: Option<String>,
) {
    if let Some(responses) = responses {
        params["inputResponses"] = serde_json::json!(responses);
    }
    if let Some(state) = state {
        params["requestState"] = serde_json::Value::String(state);
    }
}

/// An upstream's `input_required` answer, passed on to the client as it is.
fn input_required(result: &serde_json::Value) -> Option<rmcp::model::InputRequiredResult> {
    (result.get("resultType").and_then(serde_json::Value::as_str) == Some("input_required"))
        .then(|| serde_json::from_value(result.clone()).ok())
        .flatten()
}

/// A request refused because of who sent it (JSON-RPC `invalid_request`).
fn refused(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::INVALID_REQUEST, message, None)
}

impl SessionHandler {
    fn dispatch(&self) -> &dyn quiver_contract::Dispatch {
        self.gateway.dispatch().as_ref()
    }

    /// Who sent the request: the principal the HTTP layer established, or,
    /// without HTTP (stdio, in-process clients), the anonymous tenant when
    /// the edge accepts anonymous callers.
    fn principal(&self, context: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
        match context.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
                ErrorData::internal_error("the request reached a session unauthenticated", None)
            }),
            None if self.gateway.config().auth == AuthMode::None => Ok(Principal::anonymous()),
            None => Err(refused(
                "this edge requires authentication, which this transport cannot carry".into(),
            )),
        }
    }

    /// What the session's spans and metrics say about it once `initialize`
    /// bound it: its tenant, mode and the manifest version of its view.
    pub(crate) fn facts(&self) -> Option<SessionFacts<'_>> {
        let bound = self.bound.get()?;
        let manifest_version = self
            .gateway
            .view_for(&bound.principal)
            .map(|view| view.manifest().version);
        Some(SessionFacts {
            tenant: &bound.principal.tenant,
            mode: bound.mode,
            manifest_version,
        })
    }

    /// Whether `name` is a tool this session answers `tools/call` for (so a
    /// metric may name it without taking any name a client makes up).
    pub(crate) fn offers_tool(&self, name: &str) -> bool {
        let Some(bound) = self.bound.get() else {
            return false;
        };
        self.gateway
            .view_for(&bound.principal)
            .is_some_and(|view| bound.handler.offers(&view, name))
    }

    /// The handler of `mode` over this gateway's backends.
    fn handler(&self, mode: Mode) -> Arc<dyn ModeHandler> {
        modes::handler(
            mode,
            Backends {
                dispatch: self.gateway.dispatch().clone(),
                scripts: self.gateway.scripts().cloned(),
                search_limit: self.gateway.config().search_limit,
            },
        )
    }

    /// Fixes the session's tenant and mode (at `initialize`, or at the first
    /// request of a session that skipped it).
    fn bind(&self, principal: Principal) -> &Bound {
        self.bound.get_or_init(|| {
            let mode = self.path_mode.unwrap_or_else(|| {
                self.gateway
                    .views()
                    .tenants()
                    .get(&principal.tenant)
                    .and_then(|t| t.mode)
                    .unwrap_or(self.gateway.config().default_mode)
            });
            Bound {
                principal,
                mode,
                handler: self.handler(mode),
                listed_tokens: OnceLock::new(),
            }
        })
    }

    /// The session's binding and its tenant's current view, when the request
    /// comes from the tenant that opened the session.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(&Bound, Arc<ToolView>), ErrorData> {
        let principal = self.principal(context)?;
        let bound = self.bind(principal.clone());
        if bound.principal.tenant != principal.tenant {
            return Err(refused(
                "this session was opened by another tenant; initialize a session of your own"
                    .into(),
            ));
        }
        let view = self.gateway.view_for(&principal).ok_or_else(|| {
            refused(format!(
                "tenant `{}` no longer exists on this gateway; ask its operator, or use another tenant's credential",
                principal.tenant
            ))
        })?;
        Ok((bound, view))
    }

    /// The caller's view, for a request about the upstreams' prompts and
    /// resources, which every mode serves as passthrough does.
    fn content_view(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<ToolView>, ErrorData> {
        self.caller(context).map(|(_, view)| view)
    }

    /// How long a client may keep a `tools/list` answer, and who may share
    /// it. Search and code mode at their own paths list meta tools that only
    /// change with Quiver's version: an hour, public. Anything else may
    /// change at any moment (passthrough lists the tenant's view of the
    /// manifest; at `/mcp` an operator may change the tenant's mode): not
    /// cached (clients listening hear of changes), private when tenants see
    /// different views.
    fn tool_list_cache_hints(&self, bound: &Bound) -> (u64, CacheScope) {
        let fixed = self.path_mode.is_some() && bound.mode != Mode::Passthrough;
        if fixed {
            (META_TOOLS_TTL_MS, CacheScope::Public)
        } else if self.gateway.config().auth == AuthMode::None {
            (0, CacheScope::Public)
        } else {
            (0, CacheScope::Private)
        }
    }

    /// Answers `tools/call` in the session's mode.
    async fn call_tool_now(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResult, ErrorData> {
        let (bound, view) = self.caller(&context)?;
        // This request's own credential: a token renewed since `initialize`,
        // and whose it is, travel with the call.
        let origin = self.gateway.origin_of(&self.principal(&context)?);
        let session = self.stash_session(&context);
        let request = ToolRequest {
            view,
            tenant: &bound.principal.tenant,
            origin: &origin,
            name: request.name.as_ref(),
            arguments: request.arguments,
            session: &session,
            context: &context,
        };
        // An MCP App's view names its own server's tools as that server does.
        let mut result = if is_app_call(&*bound.handler, &request) {
            forward_app_call(self.gateway.dispatch().as_ref(), request).await?
        } else {
            bound.handler.call(request).await?
        };
        // An upstream of an older revision sends no `resultType` (rmcp strips
        // it again for clients of older revisions).
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result)
    }
}

impl ServerHandler for SessionHandler {
    fn get_info(&self) -> ServerConfig {
        // Before `initialize` (rmcp asks for it only then): what an
        // anonymous caller of this path would get.
        let (handler, view) = match self.bound.get() {
            Some(bound) => (
                bound.handler.clone(),
                self.gateway
                    .view_for(&bound.principal)
                    .unwrap_or_else(|| self.gateway.view()),
            ),
            None => {
                let mode = self.path_mode.unwrap_or(self.gateway.config().default_mode);
                (self.handler(mode), self.gateway.view())
            }
        };
        // MCP Apps in every mode: a view's `ui://` resource is served as any
        // resource, and its calls reach its server's tools (passthrough is
        // where a host finds the tools that link views).
        let mut capabilities = handler.capabilities();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                quiver_proto::apps::UI_EXTENSION.into(),
                quiver_proto::apps::extension_settings(),
            );
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("quiver", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(handler.instructions(&view))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // The tenant is fixed here: the capabilities, instructions and every
        // later answer are its own.
        self.caller(&context)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
        if let Some(restored) = context.extensions.get::<SessionRestoreMarker>() {
            self.subscribe_again(&restored.id, &context.peer).await;
        }
        if self
            .bound
            .get()
            .is_some_and(|b| b.mode == Mode::Passthrough)
        {
            self.gateway.listen_for_changes(context.peer);
        }
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if is_stateless(&context) {
            // 2026-07-28 has no session to set a level on: `_meta.logLevel` per request.
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "logging/setLevel is not part of MCP 2026-07-28: name a logLevel in each request's _meta",
                None,
            ));
        }
        // Upstream log messages are relayed as they come; the level is accepted for conformance.
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let view = self.content_view(&context)?;
        convert(forwarded::list_resources(self.dispatch(), &view, false).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let view = self.content_view(&context)?;
        convert(forwarded::list_resources(self.dispatch(), &view, true).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let view = self.content_view(&context)?;
        let server = forwarded::route_uri(self.dispatch(), &view, &request.uri).await?;
        let mut params = serde_json::json!({"uri": request.uri});
        with_input(&mut params, request.input_responses, request.request_state);
        let result = forwarded::send(self.dispatch(), &server, "resources/read", params).await?;
        Ok(match input_required(&result) {
            Some(asked) => ReadResourceResponse::InputRequired(asked),
            None => ReadResourceResponse::Complete(convert::<ReadResourceResult>(result)?),
        })
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward_subscription("resources/subscribe", &request.uri, &context)
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward_subscription("resources/unsubscribe", &request.uri, &context)
            .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let view = self.content_view(&context)?;
        convert(forwarded::list_prompts(self.dispatch(), &view).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let view = self.content_view(&context)?;
        let (server, name) = forwarded::route_prompt(self.dispatch(), &view, &request.name).await?;
        let mut params = serde_json::json!({"name": name});
        if let Some(arguments) = request.arguments {
            params["arguments"] = serde_json::Value::Object(arguments.into_iter().collect());
        }
        with_input(&mut params, request.input_responses, request.request_state);
        let result = forwarded::send(self.dispatch(), &server, "prompts/get", params).await?;
        Ok(match input_required(&result) {
            Some(asked) => GetPromptResponse::InputRequired(asked),
            None => GetPromptResponse::Complete(convert::<GetPromptResult>(result)?),
        })
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let view = self.content_view(&context)?;
        let mut params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let server = match params["ref"]["type"].as_str() {
            Some("ref/prompt") => {
                let exposed = params["ref"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let (server, name) =
                    forwarded::route_prompt(self.dispatch(), &view, &exposed).await?;
                params["ref"]["name"] = serde_json::Value::String(name);
                server
            }
            Some("ref/resource") => {
                let uri = params["ref"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                forwarded::route_uri(self.dispatch(), &view, &uri).await?
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "ref.type must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        convert(forwarded::send(self.dispatch(), &server, "completion/complete", params).await?)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (bound, view) = self.caller(&context)?;
        let tools = bound.handler.tools(&view);
        if bound.mode != Mode::Passthrough {
            count_tokens_saved(bound, &view, &tools);
        }
        let mut result = ListToolsResult::with_all_items(tools);
        let (ttl_ms, scope) = self.tool_list_cache_hints(bound);
        result.ttl_ms = Some(ttl_ms);
        result.cache_scope = Some(scope);
        Ok(result)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // Bound first, so the capabilities and instructions are the caller's
        // tenant's (its mode at `/mcp`, its view).
        self.caller(&context)?;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    /// A tool's definition for checking a stateless request's `Mcp-Param-*`
    /// headers against its `x-mcp-header` annotations (rmcp asks before the
    /// request reaches a handler; every mode calls a tool of the view by its
    /// own name). Only where every caller sees the same view (an edge that
    /// authenticates nobody): elsewhere the caller's view is not known yet,
    /// and the headers are not checked.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.gateway.config().auth != AuthMode::None {
            return None;
        }
        modes::listed_tool(&self.gateway.view(), name)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // List changes and resource updates of every kind the session's
        // capabilities announce (rmcp keeps only those).
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let context = subscription.request_context().clone();
        self.caller(&context)?;
        let mut installed = self.gateway.views_installed();
        let mut updated = self.gateway.resource_updates();
        let sink = subscription.sink().clone();
        let owner = format!("{}/listen/{}", self.id, context.id);
        let uris = subscription
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        self.listen_to_resources(&uris, &owner, &context).await;
        loop {
            tokio::select! {
                () = subscription.cancelled() => break,
                changed = installed.changed() => {
                    if changed.is_err() {
                        // The gateway is going away: end the stream gracefully.
                        break;
                    }
                    // A new manifest or tenant policy may change what the
                    // tenant lists; a kind the filter left out is not sent.
                    let _ = sink.notify_tool_list_changed().await;
                }
                update = updated.recv() => match update {
                    // The sink sends only the URIs the filter accepted.
                    Ok(update) => {
                        let _ = sink.notify_resource_updated(update.uri).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        self.stop_listening_to_resources(&owner).await;
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let stateless = is_stateless(&context);
        let takes_tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        // A plain session call goes straight on (it checks its caller once).
        if !stateless && !takes_tasks {
            return self.call_tool_now(request, context).await.map(Into::into);
        }
        let (bound, _) = self.caller(&context)?;
        let tenant = bound.principal.tenant.clone();
        let tasks = self.gateway.tasks().clone();
        // A client that takes tasks (SEP-2663) gets one for a call that runs
        // long, that its upstream made a task of, or (in a session) that
        // needs the client; while its tenant has room for one.
        let room = takes_tasks.then(|| tasks.reserve(&tenant)).flatten();
        let may_become_task = room.is_some();
        if !stateless && !may_become_task {
            return self.call_tool_now(request, context).await.map(Into::into);
        }
        // A stateless client cannot be asked mid-call: a call that needs it
        // is parked, and the client answers `input_required` (see
        // `input_required`).
        let how = Drive {
            window: may_become_task.then(|| tasks.limits().after),
            park_asks: stateless,
        };
        let tool = request.name.to_string();
        let parked = self.gateway.parked_calls();
        let progress = match request.request_state.clone() {
            Some(state) => {
                let responses = request.input_responses.clone();
                parked
                    .resume(&state, (&tenant, &tool), responses, how)
                    .await
            }
            None => {
                let (asks, asked) = tokio::sync::mpsc::channel(1);
                let cancel = tokio_util::sync::CancellationToken::new();
                let mut call_context = context.clone();
                // The call outlives this HTTP request when it waits for the
                // client or becomes a task; it ends when nobody drives it any more.
                call_context.ct = cancel.clone();
                call_context.extensions.insert(AskClient(asks));
                if let Some(given) = request.input_responses.clone() {
                    call_context.extensions.insert(GivenInput(given));
                }
                let (made_task, upstream_task) = tokio::sync::watch::channel(false);
                call_context
                    .extensions
                    .insert(UpstreamTaskSignal(made_task));
                let (ticket, _) = tokio::sync::watch::channel(None);
                if may_become_task {
                    call_context
                        .extensions
                        .insert(TaskTicketSlot(ticket.clone()));
                    let wall = self
                        .gateway
                        .views()
                        .tenants()
                        .get(&tenant)
                        .and_then(|t| t.task_wall_ms);
                    if let Some(wall) = wall {
                        call_context.extensions.insert(TaskWall(wall));
                    }
                }
                let this = self.clone();
                // In the request's span, so the call's spans (the hop, the
                // executor's) stay in the caller's trace.
                let task = tokio::spawn(tracing::Instrument::instrument(
                    async move { this.call_tool_now(request, call_context).await },
                    tracing::Span::current(),
                ));
                let call = RunningCall::new(&tenant, &tool, task, asked, cancel)
                    .watching(upstream_task)
                    .ticketed(ticket);
                // `notifications/cancelled`, the session ending, or a
                // stateless client's connection dropping (rmcp cancels the
                // request) stops a call that has not become a task or been
                // parked for the client's answer yet (dropping it stops it).
                tokio::select! {
                    progress = parked.drive_within(call, how) => progress,
                    () = context.ct.cancelled() => Progress::Done(Err(ErrorData::internal_error(
                        "the call was cancelled by the client",
                        None,
                    ))),
                }
            }
        };
        match progress {
            Progress::Done(result) => result.map(Into::into),
            Progress::NeedsInput(asked) => Ok(CallToolResponse::InputRequired(asked)),
            Progress::Running(call, asked) => {
                let origin = self.gateway.origin_of(&self.principal(&context)?);
                let Some(room) = room else {
                    // Only a call with room is handed back to become a task.
                    // (A call without room never runs past a window.)
                    return Err(ErrorData::internal_error(
                        "the call outgrew its request but its tenant had no room for a task; call the tool again",
                        None,
                    ));
                };
                let task = tasks.adopt(call, asked, (&origin, &tool), room).await;
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (bound, _) = self.caller(&context)?;
        let task = self
            .gateway
            .tasks()
            .get(&bound.principal.tenant, &request.task_id)
            .await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (bound, _) = self.caller(&context)?;
        self.gateway
            .tasks()
            .update(
                &bound.principal.tenant,
                &request.task_id,
                request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (bound, _) = self.caller(&context)?;
        self.gateway
            .tasks()
            .cancel(&bound.principal.tenant, &request.task_id)
            .await
    }
}
