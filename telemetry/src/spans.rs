//! Spans named and attributed as the OpenTelemetry semantic conventions for
//! MCP say: `{mcp.method.name} {target}`, with the conventions' attributes
//! declared up front (tracing needs every field at creation; unknown ones
//! stay empty and are not exported).
//!
//! Every span here uses [`TARGET`], which only the OpenTelemetry layer
//! listens to: with export off they are disabled at the call site.

/// The tracing target of telemetry spans.
pub const TARGET: &str = "quiver_otel";

/// The span name the conventions give: the method, then the tool (or prompt,
/// or resource) it acts on when there is one.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(target) if !target.is_empty() => format!("{method} {target}"),
        _ => method.to_string(),
    }
}

/// A span for an MCP request the edge (or an executor) answers.
#[macro_export]
macro_rules! mcp_server_span {
    ($method:expr, $target:expr) => {
        tracing::info_span!(
            target: "quiver_otel",
            "mcp.server",
            otel.name = %$crate::spans::span_name($method, $target),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            "mcp.method.name" = %$method,
            "gen_ai.tool.name" = tracing::field::Empty,
            "gen_ai.operation.name" = tracing::field::Empty,
            "mcp.protocol.version" = tracing::field::Empty,
            "mcp.session.id" = tracing::field::Empty,
            "jsonrpc.request.id" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "rpc.response.status_code" = tracing::field::Empty,
            "quiver.tenant" = tracing::field::Empty,
            "quiver.mode" = tracing::field::Empty,
            "quiver.manifest.version" = tracing::field::Empty,
            "quiver.executor" = tracing::field::Empty,
            "quiver.script.hash" = tracing::field::Empty,
        )
    };
}

/// A span for an MCP request Quiver sends to an upstream server.
#[macro_export]
macro_rules! mcp_client_span {
    ($method:expr, $target:expr) => {
        tracing::info_span!(
            target: "quiver_otel",
            "mcp.client",
            otel.name = %$crate::spans::span_name($method, $target),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            "mcp.method.name" = %$method,
            "gen_ai.tool.name" = tracing::field::Empty,
            "gen_ai.operation.name" = tracing::field::Empty,
            "mcp.protocol.version" = tracing::field::Empty,
            "jsonrpc.request.id" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "rpc.response.status_code" = tracing::field::Empty,
            "server.address" = tracing::field::Empty,
            "quiver.upstream" = tracing::field::Empty,
            "quiver.tenant" = tracing::field::Empty,
        )
    };
}

/// A span for Quiver's own work inside a request (the edge → executor hop,
/// a script's run).
#[macro_export]
macro_rules! quiver_span {
    ($name:expr, $kind:expr) => {
        tracing::info_span!(
            target: "quiver_otel",
            "quiver",
            otel.name = %$name,
            otel.kind = $kind,
            otel.status_code = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "quiver.tenant" = tracing::field::Empty,
            "quiver.mode" = tracing::field::Empty,
            "quiver.manifest.version" = tracing::field::Empty,
            "quiver.executor" = tracing::field::Empty,
            "quiver.script.hash" = tracing::field::Empty,
            "gen_ai.tool.name" = tracing::field::Empty,
            "rpc.system" = tracing::field::Empty,
            "rpc.method" = tracing::field::Empty,
        )
    };
}

/// One gRPC method a server answers: its service (`quiver.v1.Gateway`) and
/// method (`CallTool`).
#[derive(Debug, Clone, Copy)]
pub struct RpcMethod {
    /// The fully qualified service.
    pub service: &'static str,
    /// The method.
    pub method: &'static str,
}

/// Runs a gRPC handler's answer in `span`, marking the span failed when it
/// fails (`error.type` is the gRPC status code), and records its duration
/// as `rpc.server.duration` by `rpc.service`, `rpc.method` and
/// `rpc.grpc.status_code` (the OTel RPC conventions). For a server-streaming
/// method the duration ends when the stream starts.
pub async fn traced_rpc<T>(
    rpc: RpcMethod,
    span: tracing::Span,
    answer: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<tonic::Response<T>, tonic::Status> {
    use tracing::Instrument as _;
    let started = std::time::Instant::now();
    let result = answer.instrument(span.clone()).await;
    let code = match &result {
        Ok(_) => tonic::Code::Ok,
        Err(status) => {
            record_error(&span, &format!("{:?}", status.code()));
            status.code()
        }
    };
    crate::instruments().rpc_server_duration.record(
        started.elapsed().as_secs_f64(),
        &[
            opentelemetry::KeyValue::new("rpc.system", "grpc"),
            opentelemetry::KeyValue::new("rpc.service", rpc.service),
            opentelemetry::KeyValue::new("rpc.method", rpc.method),
            opentelemetry::KeyValue::new("rpc.grpc.status_code", i64::from(code as i32)),
        ],
    );
    result
}

/// Marks `span` failed with `error_type` (`tool_error` when a tool result
/// had `isError`, a JSON-RPC code, or Quiver's own error kind).
pub fn record_error(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}
