//! The `quiver.v1.Executor` gRPC service: single tool calls and scripts, each
//! checked against this executor's own view of the manifest (never trusting
//! the caller's), over the connections this process holds.

use std::sync::Arc;

use arc_swap::ArcSwap;
use quiver_proto::{Manifest, pb};
use quiver_view::{ToolView, redact::redact};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::{
    CallOptions, Dispatch, ToolCall,
    script::{ExecuteError, Scripts},
};

/// Serves `quiver.v1.Executor`.
pub struct ExecutorService {
    view: Arc<ArcSwap<ToolView>>,
    dispatch: Arc<dyn Dispatch>,
    scripts: Arc<dyn Scripts>,
}

impl ExecutorService {
    /// A service over `manifests` (kept current in the background), running calls
    /// through `dispatch` and scripts through `scripts`.
    pub fn new(
        mut manifests: watch::Receiver<Arc<Manifest>>,
        dispatch: Arc<dyn Dispatch>,
        scripts: Arc<dyn Scripts>,
    ) -> ExecutorService {
        let first = manifests.borrow_and_update().clone();
        let view = Arc::new(ArcSwap::from_pointee(ToolView::all(first)));
        let weak = Arc::downgrade(&view);
        tokio::spawn(async move {
            while manifests.changed().await.is_ok() {
                let manifest = manifests.borrow_and_update().clone();
                let Some(view) = weak.upgrade() else { return };
                if let Ok(next) = tokio::task::spawn_blocking(move || ToolView::all(manifest)).await
                {
                    view.store(Arc::new(next));
                }
            }
        });
        ExecutorService {
            view,
            dispatch,
            scripts,
        }
    }

    /// The tonic server wrapper.
    pub fn into_server(self) -> pb::executor_server::ExecutorServer<ExecutorService> {
        pb::executor_server::ExecutorServer::new(self)
    }
}

#[tonic::async_trait]
impl pb::executor_server::Executor for ExecutorService {
    async fn call_tool(
        &self,
        request: Request<pb::CallToolRequest>,
    ) -> Result<Response<pb::CallToolResponse>, Status> {
        let request = request.into_inner();
        let view = self.view.load_full();
        // The caller's word is not enough: the tool must be in this executor's view.
        let Some(tool) = view
            .iter()
            .find(|t| t.tool.id.server == request.server && t.tool.id.tool == request.tool)
        else {
            return Err(Status::not_found(format!(
                "tool `{}` of server `{}` is not in this executor's view",
                request.tool, request.server
            )));
        };
        let arguments: serde_json::Value = if request.arguments_json.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&request.arguments_json)
                .map_err(|e| Status::invalid_argument(format!("arguments_json is not JSON: {e}")))?
        };
        if let Err(errors) = view
            .check(tool.index)
            .check(&arguments, tool.server.validation)
        {
            return Err(Status::invalid_argument(
                errors.message(&tool.tool.exposed_name),
            ));
        }
        let call = ToolCall {
            tenant: request.tenant,
            server: request.server,
            tool: request.tool,
            arguments: arguments.as_object().cloned(),
        };
        let mut options = CallOptions::default();
        if request.timeout_ms > 0 {
            options.timeout = Some(std::time::Duration::from_millis(u64::from(
                request.timeout_ms,
            )));
        }
        let result = self
            .dispatch
            .call_tool(call, options)
            .await
            .map_err(|e| Status::unavailable(redact(&e.to_string())))?;
        let result_json =
            serde_json::to_string(&result).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::CallToolResponse { result_json }))
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let request = request.into_inner();
        let view = self.view.load_full();
        let session = if request.session.is_empty() {
            "anonymous".to_string()
        } else {
            format!("{}/{}", request.tenant, request.session)
        };
        let outcome = self
            .scripts
            .execute(
                &request.code,
                &session,
                view,
                CancellationToken::new(),
                None,
            )
            .await;
        let response = match outcome {
            Ok(outcome) => {
                let (error, error_kind, error_line) = match outcome.error {
                    Some(e) => (e.message, e.kind, e.line.unwrap_or(0)),
                    None => (String::new(), String::new(), 0),
                };
                pb::ExecuteResponse {
                    result_json: outcome.result.map(|r| r.to_string()).unwrap_or_default(),
                    logs: outcome.logs,
                    calls: Vec::new(),
                    error,
                    truncated: outcome.truncated,
                    error_kind,
                    error_line,
                }
            }
            Err(ExecuteError::Rejected(errors)) => pb::ExecuteResponse {
                error: errors.to_string(),
                error_kind: "rejected".into(),
                error_line: errors.errors.first().map_or(0, |v| v.line),
                ..Default::default()
            },
            Err(other) => return Err(Status::resource_exhausted(redact(&other.to_string()))),
        };
        Ok(Response::new(response))
    }
}
