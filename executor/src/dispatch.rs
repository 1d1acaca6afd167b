//! Dispatching one tool call to the upstream that owns it.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_upstream::{CallOptions, UpstreamError, UpstreamSet};
use rmcp::model::{CallToolResult, ClientRequest, JsonObject, ServerResult};

/// One tool call, already checked against the caller's view and the tool's schema.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// Tenant the call is made for (for audit and the executor's own policy check).
    pub tenant: String,
    /// Upstream id.
    pub server: String,
    /// Tool name on that upstream.
    pub tool: String,
    /// Arguments.
    pub arguments: Option<JsonObject>,
}

/// Something that runs tool calls: in-process ([`LocalExecutor`]) or a remote executor.
pub trait Dispatch: Send + Sync {
    /// Runs `call` once (never retried).
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>>;

    /// Sends any other MCP request (resources, prompts, completion) to upstream
    /// `server` once, for passthrough.
    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>>;
}

/// Runs calls on upstream connections held by this process.
pub struct LocalExecutor {
    upstreams: Arc<UpstreamSet>,
}

impl LocalExecutor {
    /// An executor over `upstreams`.
    pub fn new(upstreams: Arc<UpstreamSet>) -> LocalExecutor {
        LocalExecutor { upstreams }
    }

    /// The upstreams it holds.
    pub fn upstreams(&self) -> &Arc<UpstreamSet> {
        &self.upstreams
    }
}

impl Dispatch for LocalExecutor {
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move {
            let upstream = self.upstreams.get(&call.server)?;
            tracing::debug!(tenant = %call.tenant, server = %call.server, tool = %call.tool, "dispatching tool call");
            upstream
                .call_tool(&call.tool, call.arguments, options)
                .await
        })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        Box::pin(async move { self.upstreams.get(server)?.request(request, options).await })
    }
}
