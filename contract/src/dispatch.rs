//! Running one prepared tool call, or another MCP request, on the upstream
//! that owns it: the trait the edge's modes and a script's host call.

use crate::{CallOptions, ResourceUpdate, UpstreamError};
use futures::future::BoxFuture;
use quiver_view::ToolCall;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};

/// Something that runs tool calls: an executor in this process or a remote one.
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

    /// The resource updates (`notifications/resources/updated`) of the
    /// upstreams it reaches, from now on; `None` when it cannot report them.
    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<ResourceUpdate>> {
        None
    }
}
