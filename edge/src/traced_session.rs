//! The edge's MCP session as rmcp serves it: every request runs in one
//! server span named as the MCP semantic conventions say (its parent the
//! caller's `traceparent`, from `params._meta` or the HTTP headers) and is
//! timed in `mcp.server.operation.duration`; a session's lifetime is timed
//! when it ends. Only outcomes are recorded, never arguments or results.
#![allow(deprecated)] // logging and resource subscriptions are current in the protocol versions served here

use std::{
    borrow::Cow,
    sync::{Arc, OnceLock},
    time::Instant,
};

use opentelemetry::KeyValue;
use quiver_telemetry::{instruments, mcp_server_span, propagation, spans};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
        CompleteResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
        GetTaskResult, InitializeRequestParams, InitializeResult, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
        SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
        UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use tracing::Instrument as _;

use crate::{
    gateway::Gateway,
    mode::Mode,
    session::{SUPPORTED_VERSIONS, SessionHandler},
};

/// One MCP session of the edge: its handler, traced and timed per request.
#[derive(Clone)]
pub struct GatewaySession {
    handler: SessionHandler,
    lifetime: Arc<SessionLifetime>,
}

impl GatewaySession {
    /// A new MCP session in `mode` on `gateway`.
    pub fn new(gateway: Arc<Gateway>, mode: Mode) -> GatewaySession {
        GatewaySession::at(gateway, Some(mode))
    }

    /// A new session at `/mcp`: its mode is the tenant's, or the edge's default.
    pub fn at_default_path(gateway: Arc<Gateway>) -> GatewaySession {
        GatewaySession::at(gateway, None)
    }

    fn at(gateway: Arc<Gateway>, path_mode: Option<Mode>) -> GatewaySession {
        GatewaySession {
            handler: SessionHandler::at(gateway, path_mode),
            lifetime: Arc::new(SessionLifetime {
                opened: Instant::now(),
                labels: OnceLock::new(),
            }),
        }
    }
}

/// Times a session from its creation to the drop of its last handle (the
/// transport ending it), once it was initialized.
struct SessionLifetime {
    opened: Instant,
    /// The mode and protocol version, known once `initialize` was answered.
    labels: OnceLock<[KeyValue; 2]>,
}

impl Drop for SessionLifetime {
    fn drop(&mut self) {
        if let Some(labels) = self.labels.get() {
            instruments()
                .server_session_duration
                .record(self.opened.elapsed().as_secs_f64(), labels);
        }
    }
}

/// One request being answered: its span, what it is, when it started.
struct TracedRequest {
    span: tracing::Span,
    /// `mcp.method.name`.
    method: &'static str,
    /// The tool of a `tools/call`.
    tool: Option<String>,
    /// The protocol version the request is made under.
    protocol: Option<String>,
    started: Instant,
    /// Its session's end and the request's cancellation: when the session
    /// ends, the request is cancelled (its script or call stops).
    ends: Option<(
        tokio_util::sync::CancellationToken,
        tokio_util::sync::CancellationToken,
    )>,
}

/// A protocol version as a metric label: one the edge speaks, else
/// `_OTHER` (an `initialize` may name any string).
fn protocol_label(version: &str) -> String {
    if SUPPORTED_VERSIONS.iter().any(|v| v.as_str() == version) {
        version.to_string()
    } else {
        "_OTHER".to_string()
    }
}

/// Longest tool name recorded as sent (no real one comes close).
const MAX_RECORDED_NAME: usize = 128;

/// `name`, cut to [`MAX_RECORDED_NAME`] bytes at a character boundary.
fn bounded(name: &str) -> &str {
    let mut end = name.len().min(MAX_RECORDED_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// How a handler's answer ended, for `error.type`.
trait Outcome {
    /// A `tools/call` result with `isError`.
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl Outcome for CallToolResponse {
    fn is_tool_error(&self) -> bool {
        matches!(self, CallToolResponse::Complete(r) if r.is_error == Some(true))
    }
}
impl Outcome for () {}
impl Outcome for InitializeResult {}
impl Outcome for ListToolsResult {}
impl Outcome for ListResourcesResult {}
impl Outcome for ListResourceTemplatesResult {}
impl Outcome for ReadResourceResponse {}
impl Outcome for ListPromptsResult {}
impl Outcome for GetPromptResponse {}
impl Outcome for CompleteResult {}
impl Outcome for DiscoverResult {}
impl Outcome for GetTaskResult {}

/// `error.type` of a request's outcome: `tool_error` for a result with
/// `isError`, the JSON-RPC code for an error; `None` when it succeeded.
fn error_type<T: Outcome>(result: &Result<T, ErrorData>) -> Option<String> {
    match result {
        Ok(r) if r.is_tool_error() => Some("tool_error".into()),
        Ok(_) => None,
        Err(e) => Some(e.code.0.to_string()),
    }
}

impl GatewaySession {
    /// Opens the span of one request, its parent the trace context the
    /// request carries (`params._meta` first, then the HTTP headers).
    fn start(
        &self,
        method: &'static str,
        tool: Option<String>,
        protocol: Option<ProtocolVersion>,
        context: &RequestContext<RoleServer>,
    ) -> TracedRequest {
        let protocol = protocol
            .or_else(|| context.protocol_version())
            .map(|v| v.to_string());
        // Span names become operation lists in tracing backends: a tool the
        // session does not offer (any name a client makes up) stays out of it.
        let named = tool.as_deref().filter(|t| self.handler.offers_tool(t));
        let span = mcp_server_span!(method, named);
        if let Some(tool) = &tool {
            span.record("gen_ai.tool.name", bounded(tool));
            span.record("gen_ai.operation.name", "execute_tool");
        }
        if let Some(protocol) = &protocol {
            span.record("mcp.protocol.version", protocol.as_str());
        }
        span.record("jsonrpc.request.id", context.id.to_string());
        let parts = context.extensions.get::<axum::http::request::Parts>();
        if let Some(session) = parts
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
        {
            span.record("mcp.session.id", bounded(session));
        }
        let parent = propagation::extract_from_meta(&context.meta)
            .or_else(|| parts.and_then(|p| propagation::extract_from_headers(&p.headers)));
        propagation::adopt(&span, parent);
        // Only a session this edge knows: an id the client made up names
        // nothing, and is never remembered.
        let ends = crate::sessions::session_of(context)
            .and_then(|id| self.handler.gateway().sessions().ended(&id))
            .map(|ended| (ended, context.ct.clone()));
        TracedRequest {
            span,
            method,
            tool,
            protocol,
            started: Instant::now(),
            ends,
        }
    }

    /// Runs `answer` in the request's span, then records how it ended on the
    /// span and in the duration metric.
    async fn traced<T: Outcome>(
        &self,
        request: TracedRequest,
        answer: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        let answer = answer.instrument(request.span.clone());
        let result = match &request.ends {
            None => answer.await,
            Some((ended, cancel)) => {
                // rmcp lets a closed session's handlers drain for seconds;
                // the session's end cancels its requests at once.
                let ending = async {
                    ended.cancelled().await;
                    cancel.cancel();
                    std::future::pending::<()>().await
                };
                tokio::select! {
                    biased;
                    result = answer => result,
                    () = ending => unreachable!("pending never ends"),
                }
            }
        };
        self.finish(&request, error_type(&result), result.as_ref().err());
        result
    }

    fn finish(&self, request: &TracedRequest, error: Option<String>, failed: Option<&ErrorData>) {
        let span = &request.span;
        let mut labels = vec![KeyValue::new("mcp.method.name", request.method)];
        let session = self.handler.facts();
        if let Some(session) = &session {
            span.record("quiver.tenant", session.tenant);
            span.record("quiver.mode", session.mode.as_str());
            if let Some(version) = session.manifest_version {
                span.record("quiver.manifest.version", version);
            }
            labels.push(KeyValue::new("quiver.mode", session.mode.as_str()));
        }
        if let Some(protocol) = &request.protocol {
            labels.push(KeyValue::new(
                "mcp.protocol.version",
                protocol_label(protocol),
            ));
        }
        // Only tools this session offers become labels: a client's made-up
        // names would make the metric unbounded.
        if let Some(tool) = request
            .tool
            .as_deref()
            .filter(|t| self.handler.offers_tool(t))
        {
            labels.push(KeyValue::new("gen_ai.tool.name", tool.to_string()));
        }
        if let Some(e) = failed {
            span.record("rpc.response.status_code", e.code.0.to_string());
        }
        if let Some(error) = error {
            spans::record_error(span, &error);
            labels.push(KeyValue::new("error.type", error));
        }
        instruments()
            .server_operation_duration
            .record(request.started.elapsed().as_secs_f64(), &labels);
        if let (Some(session), Some(protocol)) = (&session, &request.protocol) {
            let _ = self.lifetime.labels.set([
                KeyValue::new("quiver.mode", session.mode.as_str()),
                KeyValue::new("mcp.protocol.version", protocol_label(protocol)),
            ]);
        }
    }
}

/// Handler methods that take a request and its context and answer it, each
/// in its span under its MCP method name.
macro_rules! traced_requests {
    ($($method:ident($params:ty) -> $answer:ty = $name:literal;)*) => {$(
        async fn $method(
            &self,
            request: $params,
            context: RequestContext<RoleServer>,
        ) -> Result<$answer, ErrorData> {
            let traced = self.start($name, None, None, &context);
            self.traced(traced, self.handler.$method(request, context)).await
        }
    )*};
}

/// Every request the session's handler answers goes through its span here;
/// what the handler does not override keeps rmcp's default.
impl ServerHandler for GatewaySession {
    fn get_info(&self) -> ServerConfig {
        self.handler.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.handler.supported_protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let traced = self.start(
            "initialize",
            None,
            Some(request.protocol_version.clone()),
            &context,
        );
        self.traced(traced, self.handler.initialize(request, context))
            .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.handler.on_initialized(context).await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let traced = self.start("server/discover", None, None, &context);
        self.traced(traced, self.handler.discover(context)).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.handler.accepted_subscription_filter(requested)
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.handler.get_tool(name)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // The span covers the whole stream: it ends when the client leaves.
        let traced = self.start(
            "subscriptions/listen",
            None,
            None,
            subscription.request_context(),
        );
        self.traced(traced, self.handler.listen(subscription)).await
    }

    traced_requests! {
        set_level(SetLevelRequestParams) -> () = "logging/setLevel";
        list_resources(Option<PaginatedRequestParams>) -> ListResourcesResult = "resources/list";
        list_resource_templates(Option<PaginatedRequestParams>) -> ListResourceTemplatesResult
            = "resources/templates/list";
        // The URI is not in the name: it may be unbounded, or say too much.
        read_resource(ReadResourceRequestParams) -> ReadResourceResponse = "resources/read";
        subscribe(SubscribeRequestParams) -> () = "resources/subscribe";
        unsubscribe(UnsubscribeRequestParams) -> () = "resources/unsubscribe";
        list_prompts(Option<PaginatedRequestParams>) -> ListPromptsResult = "prompts/list";
        get_prompt(GetPromptRequestParams) -> GetPromptResponse = "prompts/get";
        complete(CompleteRequestParams) -> CompleteResult = "completion/complete";
        list_tools(Option<PaginatedRequestParams>) -> ListToolsResult = "tools/list";
        get_task(GetTaskParams) -> GetTaskResult = "tasks/get";
        update_task(UpdateTaskParams) -> () = "tasks/update";
        cancel_task(CancelTaskParams) -> () = "tasks/cancel";
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let traced = self.start("tools/call", Some(request.name.to_string()), None, &context);
        self.traced(traced, self.handler.call_tool(request, context))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_protocol_versions_the_edge_speaks_become_labels() {
        assert_eq!(protocol_label("2025-06-18"), "2025-06-18");
        assert_eq!(protocol_label("1999-01-01-made-up"), "_OTHER");
    }

    #[test]
    fn a_recorded_name_is_cut_at_a_character_boundary() {
        assert_eq!(bounded("weather__get_forecast"), "weather__get_forecast");
        let long = "é".repeat(100);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_RECORDED_NAME && cut.len() >= MAX_RECORDED_NAME - 1);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
