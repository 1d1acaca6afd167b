//! One request to an upstream as telemetry sees it: a client span named as
//! the MCP semantic conventions say, the trace context carried to the
//! server in `params._meta`, and `mcp.client.operation.duration`. Neither
//! arguments nor results are recorded, only how the request ended.

use std::time::Instant;

use opentelemetry::KeyValue;
use quiver_proto::upstream_config::{Transport, UpstreamConfig};
use quiver_telemetry::{instruments, mcp_client_span, propagation, spans};
use rmcp::model::{ClientRequest, GetMeta as _, ServerResult};

use quiver_contract::UpstreamError;

/// The span and metric labels of one request, from sending to its answer.
pub(crate) struct ClientRequestSpan {
    /// The span the request is sent and awaited in.
    pub(crate) span: tracing::Span,
    labels: Vec<KeyValue>,
    started: Instant,
}

impl ClientRequestSpan {
    /// Opens the span of `request` to `upstream` (for `tenant` when the
    /// connection is one tenant's) and writes its trace context into the
    /// request's `_meta`.
    pub(crate) fn start(
        upstream: &UpstreamConfig,
        tenant: Option<&str>,
        request: &mut ClientRequest,
    ) -> ClientRequestSpan {
        let method = request.method().to_string();
        let tool = match &*request {
            ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
            _ => None,
        };
        let span = mcp_client_span!(method.as_str(), tool.as_deref());
        span.record("quiver.upstream", upstream.id.as_str());
        if let Some(address) = server_address(&upstream.transport) {
            span.record("server.address", address.as_str());
        }
        if let Some(tenant) = tenant {
            span.record("quiver.tenant", tenant);
        }
        let mut labels = vec![
            KeyValue::new("mcp.method.name", method),
            KeyValue::new("quiver.upstream", upstream.id.clone()),
        ];
        if let Some(tool) = tool {
            span.record("gen_ai.tool.name", tool.as_str());
            span.record("gen_ai.operation.name", "execute_tool");
            // The tool was resolved against the manifest before it got here.
            labels.push(KeyValue::new("gen_ai.tool.name", tool));
        }
        span.in_scope(|| propagation::inject_into_meta(request.get_meta_mut()));
        ClientRequestSpan {
            span,
            labels,
            started: Instant::now(),
        }
    }

    /// Records how the request ended on the span and in the metric.
    pub(crate) fn finish(mut self, result: &Result<ServerResult, UpstreamError>) {
        let error = match result {
            Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => {
                Some("tool_error".to_string())
            }
            Ok(_) => None,
            Err(e) => {
                if let UpstreamError::Remote { code, .. } = e {
                    self.span
                        .record("rpc.response.status_code", code.to_string());
                }
                Some(e.kind())
            }
        };
        if let Some(error) = error {
            spans::record_error(&self.span, &error);
            self.labels.push(KeyValue::new("error.type", error));
        }
        instruments()
            .client_operation_duration
            .record(self.started.elapsed().as_secs_f64(), &self.labels);
    }
}

/// The host of an HTTP upstream's URL (`server.address`).
fn server_address(transport: &Transport) -> Option<String> {
    match transport {
        Transport::Http { url, .. } => url
            .parse::<http::Uri>()
            .ok()
            .and_then(|uri| uri.host().map(str::to_string)),
        _ => None,
    }
}
