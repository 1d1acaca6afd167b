//! The in-process side of the contract's [`Dispatch`]: a prepared call runs
//! on an upstream connection this process holds; for an upstream that takes
//! per-tenant credentials, on the calling tenant's own connection.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_contract::{CallOptions, Dispatch, ToolCall, UpstreamError};
use quiver_upstream::UpstreamSet;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};

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
            // One tenant's (or caller's) credentials never serve another's call.
            let upstream = self
                .upstreams
                .for_call(
                    &call.server,
                    &call.tenant,
                    &call.origin.caller,
                    call.origin.subject_token.as_ref(),
                )
                .await?;
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
        Box::pin(async move {
            let upstream = self.upstreams.get(server)?;
            if upstream.config().is_per_tenant() || upstream.config().acts_for_caller() {
                // Such requests carry no tenant, and this upstream's
                // credentials are one tenant's.
                return Err(UpstreamError::CredentialsUnavailable {
                    id: server.to_string(),
                    reason: "resources, prompts and completion requests carry no tenant or caller, so they are not forwarded to it".into(),
                });
            }
            upstream.request(request, options).await
        })
    }

    fn resource_updates(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<quiver_upstream::ResourceUpdate>> {
        Some(self.upstreams.resource_updates())
    }
}
