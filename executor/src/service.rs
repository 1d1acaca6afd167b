//! The `quiver.v1.Executor` gRPC service: single tool calls and scripts, each
//! checked against this executor's own view of the manifest (never trusting
//! the caller's), over the connections this process holds.

use std::sync::Arc;

use futures::StreamExt as _;
use quiver_contract::{CallOptions, CallOrigin, DEFAULT_TENANT, Dispatch, Scripts, wire};
use quiver_fleet::{
    relay::{CollectedLogs, HopDownStream, RelaySink},
    task_records::{TaskEnd, TaskRecords, TaskTicket},
};
use quiver_proto::pb::{self, hop_down, hop_up};
use quiver_telemetry::{
    propagation, quiver_span,
    spans::{RpcMethod, traced_rpc as traced},
};
use quiver_view::{LiveViews, ToolView, redact::redact};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// Serves `quiver.v1.Executor`.
#[derive(Clone)]
pub struct ExecutorService {
    views: Arc<LiveViews>,
    anonymous: bool,
    dispatch: Arc<dyn Dispatch>,
    scripts: Arc<dyn Scripts>,
    /// This executor's name in the fleet, on its spans.
    node: Option<String>,
    /// The fleet's task records, where a call that became a task has its
    /// end written (with etcd).
    task_records: Option<Arc<TaskRecords>>,
    /// Cancelled when the executor stops: the streams that would otherwise
    /// never end (resource updates) end then, so shutdown does not wait on them.
    stopping: CancellationToken,
}

impl ExecutorService {
    /// A service over `views` (kept current in the background; the same
    /// ones its local scripts are checked against): every call and script
    /// runs against the view of the tenant it names, as this executor
    /// computes it. A tenant the control plane does not hold (such as the
    /// built-in `default`) is served every tool only when `anonymous` is set,
    /// as behind edges that authenticate nobody; otherwise it is refused.
    pub fn with_views(
        views: Arc<LiveViews>,
        anonymous: bool,
        dispatch: Arc<dyn Dispatch>,
        scripts: Arc<dyn Scripts>,
    ) -> ExecutorService {
        ExecutorService {
            views,
            anonymous,
            dispatch,
            scripts,
            node: None,
            task_records: None,
            stopping: CancellationToken::new(),
        }
    }

    /// The same service, ending its endless streams when `stopping` is
    /// cancelled (the executor's shutdown waits for every open stream).
    pub fn stopping_on(mut self, stopping: CancellationToken) -> ExecutorService {
        self.stopping = stopping;
        self
    }

    /// The same service, writing how calls that became tasks end into
    /// `records` (the fleet's etcd).
    pub fn recording_tasks_in(mut self, records: Arc<TaskRecords>) -> ExecutorService {
        self.task_records = Some(records);
        self
    }

    /// The same service, naming itself `node` on its spans (`quiver.executor`).
    pub fn named(mut self, node: impl Into<String>) -> ExecutorService {
        self.node = Some(node.into());
        self
    }

    /// The server span of one RPC, its parent the trace context in the
    /// request's metadata.
    fn rpc_span<T>(&self, method: &'static str, request: &Request<T>) -> tracing::Span {
        let span = quiver_span!(format!("quiver.v1.Executor/{method}"), "server");
        span.record("rpc.system", "grpc");
        span.record("rpc.method", method);
        if let Some(node) = &self.node {
            span.record("quiver.executor", node.as_str());
        }
        propagation::adopt(
            &span,
            propagation::extract_from_metadata(request.metadata()),
        );
        span
    }

    /// The view of `tenant` as this executor sees it; the caller's word for
    /// what the tenant may see is never taken.
    fn view_of(&self, tenant: &str) -> Result<Arc<ToolView>, Status> {
        if let Some(view) = self.views.view_of(tenant, self.anonymous) {
            return Ok(view);
        }
        Err(Status::permission_denied(format!(
            "tenant `{tenant}` is not known to this executor: check that it follows the control plane that holds the tenant (--control-plane), or start it with --auth none to serve tenants it does not hold"
        )))
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
        let span = self.rpc_span("CallTool", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Executor",
                method: "CallTool",
            },
            span,
            self.answer_call_tool(request),
        )
        .await
        .map_err(answered)
    }

    async fn execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let span = self.rpc_span("Execute", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Executor",
                method: "Execute",
            },
            span,
            self.answer_execute(request),
        )
        .await
        .map_err(answered)
    }

    async fn request(
        &self,
        request: Request<pb::McpRequest>,
    ) -> Result<Response<pb::McpResponse>, Status> {
        let span = self.rpc_span("Request", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Executor",
                method: "Request",
            },
            span,
            self.answer_request(request),
        )
        .await
        .map_err(answered)
    }

    type CallToolStreamStream = HopDownStream;

    async fn call_tool_stream(
        &self,
        request: Request<tonic::Streaming<pb::HopUp>>,
    ) -> Result<Response<HopDownStream>, Status> {
        let span = self.rpc_span("CallToolStream", &request);
        let mut up = request.into_inner();
        let Some(hop_up::Message::Call(call)) = first_message(&mut up).await? else {
            return Err(answered(Status::invalid_argument(
                "the first message of CallToolStream must be the call",
            )));
        };
        let this = self.clone();
        Ok(self.stream(up, span, move |sink| async move {
            this.run_call_tool(call, Some(sink))
                .await
                .map(hop_down::Message::CallResult)
        }))
    }

    type ExecuteStreamStream = HopDownStream;

    async fn execute_stream(
        &self,
        request: Request<tonic::Streaming<pb::HopUp>>,
    ) -> Result<Response<HopDownStream>, Status> {
        let span = self.rpc_span("ExecuteStream", &request);
        let mut up = request.into_inner();
        let Some(hop_up::Message::Execute(execute)) = first_message(&mut up).await? else {
            return Err(answered(Status::invalid_argument(
                "the first message of ExecuteStream must be the script",
            )));
        };
        let this = self.clone();
        Ok(self.stream(up, span, move |sink| async move {
            this.run_execute(execute, Some(sink))
                .await
                .map(hop_down::Message::ExecuteResult)
        }))
    }

    type WatchResourceUpdatesStream = std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<pb::ResourceUpdated, Status>> + Send + 'static>,
    >;

    async fn watch_resource_updates(
        &self,
        _request: Request<pb::WatchResourceUpdatesRequest>,
    ) -> Result<Response<Self::WatchResourceUpdatesStream>, Status> {
        let Some(updates) = self.dispatch.resource_updates() else {
            return Err(answered(Status::unimplemented(
                "this executor does not hear its upstreams' resource updates",
            )));
        };
        // A watcher that fell behind misses updates (as a session would),
        // and goes on with the next.
        let stream = tokio_stream::wrappers::BroadcastStream::new(updates)
            .filter_map(|update| {
                std::future::ready(update.ok().map(|update| {
                    Ok(pb::ResourceUpdated {
                        server: update.server,
                        uri: update.uri,
                    })
                }))
            })
            .take_until(self.stopping.clone().cancelled_owned());
        Ok(Response::new(Box::pin(stream)))
    }
}

/// The first message of a streamed hop.
async fn first_message(
    up: &mut tonic::Streaming<pb::HopUp>,
) -> Result<Option<hop_up::Message>, Status> {
    Ok(up
        .message()
        .await
        .map_err(answered)?
        .and_then(|m| m.message))
}

impl ExecutorService {
    /// Runs `work` with a [`RelaySink`] over the hop's streams; its answer
    /// is the last message down. The caller closing its stream drops `work`
    /// (the call, or the script and its worker, stop).
    fn stream<W, Fut>(
        &self,
        up: tonic::Streaming<pb::HopUp>,
        span: tracing::Span,
        work: W,
    ) -> Response<HopDownStream>
    where
        W: FnOnce(Arc<dyn quiver_contract::CallSink>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<hop_down::Message, Status>> + Send + 'static,
    {
        let (down, rx) = tokio::sync::mpsc::channel(32);
        let sink = RelaySink::start(down.clone(), up);
        let (mut detached, stopped) = (sink.detached(), sink.cancelled());
        let (records, node) = (self.task_records.clone(), self.node.clone());
        tokio::spawn(async move {
            let work = tracing::Instrument::instrument(work(sink), span);
            tokio::pin!(work);
            let mut told = true;
            let answer = loop {
                // A call that became a task runs on when its caller's stream
                // closes (its edge left); only an explicit cancel stops it.
                let task = detached.borrow().clone();
                tokio::select! {
                    answer = &mut work => break answer,
                    () = stopped.cancelled() => return,
                    () = down.closed(), if task.is_none() => return,
                    changed = detached.changed(), if task.is_none() && told => {
                        told = changed.is_ok();
                        let ticket = detached.borrow().clone();
                        if let (Some(records), Some(ticket)) = (&records, ticket) {
                            record_runner(records.clone(), ticket, node.clone());
                        }
                    }
                }
            };
            let ticket = detached.borrow().clone();
            if let (Some(records), Some(ticket)) = (&records, ticket) {
                record_end(records, &ticket, node.clone(), &answer).await;
            }
            let last = answer
                .map(|message| pb::HopDown {
                    message: Some(message),
                })
                .map_err(answered);
            let _ = down.send(last).await;
        });
        Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }
}

/// Names `node` as the runner in task `ticket`'s record (in the background).
fn record_runner(records: Arc<TaskRecords>, ticket: TaskTicket, node: Option<String>) {
    tokio::spawn(async move {
        let named = records
            .update(&ticket.id, |record| {
                if record.tenant == ticket.tenant {
                    record.executor = Some(node.clone().unwrap_or_else(|| "executor".into()));
                }
            })
            .await;
        if let Err(e) = named {
            tracing::warn!(task = %ticket.id, "could not name this executor in the task's record: {e}");
        }
    });
}

/// Writes how the work of task `ticket` ended into its record, so that any
/// edge can answer for it when its own edge is gone.
async fn record_end(
    records: &TaskRecords,
    ticket: &TaskTicket,
    node: Option<String>,
    answer: &Result<hop_down::Message, Status>,
) {
    let end = match answer {
        Ok(hop_down::Message::ExecuteResult(response)) => {
            // What reaches etcd is redacted as what reaches a client is.
            match wire::result_from_pb(Ok(response.clone())) {
                Ok(mut outcome) => {
                    if let Some(error) = &mut outcome.error {
                        error.message = redact(&error.message);
                    }
                    TaskEnd::Script {
                        outcome: Box::new(outcome),
                    }
                }
                Err(e) => TaskEnd::ScriptFailed {
                    reason: redact(&e.to_string()),
                },
            }
        }
        Ok(hop_down::Message::CallResult(response)) => {
            match serde_json::from_str(&response.result_json) {
                Ok(result) => TaskEnd::Tool { result },
                Err(e) => TaskEnd::ToolFailed {
                    code: -32603,
                    message: format!("unreadable result: {e}"),
                },
            }
        }
        Ok(_) => return,
        Err(status) => TaskEnd::ToolFailed {
            code: -32603,
            message: redact(status.message()),
        },
    };
    let written = records
        .update(&ticket.id, |record| {
            if record.tenant == ticket.tenant && record.end.is_none() {
                record.executor = Some(node.clone().unwrap_or_else(|| "executor".into()));
                record.end = Some(end.clone());
            }
        })
        .await;
    if let Err(e) = written {
        tracing::warn!(task = %ticket.id, "could not record how the task ended: {e}");
    }
}

/// Marks an error status as this service's answer, so a caller can tell it
/// from the transport failing (see `quiver_fleet::remote::ANSWERED_BY`).
fn answered(mut status: Status) -> Status {
    status.metadata_mut().insert(
        quiver_fleet::remote::ANSWERED_BY,
        tonic::metadata::MetadataValue::from_static("executor"),
    );
    status
}

/// The answers, each run inside its RPC's span by the trait impl above.
impl ExecutorService {
    async fn answer_call_tool(
        &self,
        request: Request<pb::CallToolRequest>,
    ) -> Result<Response<pb::CallToolResponse>, Status> {
        // Nobody hears the call while it runs: its log messages come back
        // with the result.
        let logs = Arc::new(CollectedLogs::default());
        let mut response = self
            .run_call_tool(request.into_inner(), Some(logs.clone()))
            .await?;
        response.upstream_logs_json = logs.take();
        Ok(Response::new(response))
    }

    async fn run_call_tool(
        &self,
        mut request: pb::CallToolRequest,
        sink: Option<Arc<dyn quiver_contract::CallSink>>,
    ) -> Result<pb::CallToolResponse, Status> {
        if request.tenant.is_empty() {
            request.tenant = DEFAULT_TENANT.into();
        }
        tracing::Span::current().record("quiver.tenant", request.tenant.as_str());
        tracing::Span::current().record("gen_ai.tool.name", request.tool.as_str());
        let view = self.view_of(&request.tenant)?;
        // The caller's word is not enough: the tool must be in the tenant's
        // view as this executor computes it (for a call an app's view made,
        // among the tools an app may call).
        let tool = if request.from_app {
            view.app_call_by_id(&request.server, &request.tool)
        } else {
            view.by_id(&request.server, &request.tool)
        };
        let Some(tool) = tool else {
            return Err(Status::not_found(format!(
                "tool `{}` of server `{}` is not in this executor's view of tenant `{}`",
                request.tool, request.server, request.tenant
            )));
        };
        let arguments: serde_json::Value = if request.arguments_json.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&request.arguments_json)
                .map_err(|e| Status::invalid_argument(format!("arguments_json is not JSON: {e}")))?
        };
        let mut call = view
            .prepare_call(&request.tenant, tool, &arguments)
            .map_err(|errors| Status::invalid_argument(errors.message(&tool.tool.exposed_name)))?;
        call.origin = CallOrigin {
            caller: request.caller,
            edge: request.edge,
            script_sha256: (!request.script_sha256.is_empty()).then_some(request.script_sha256),
            subject_token: (!request.subject_token.is_empty())
                .then(|| quiver_proto::secret_value::SecretValue::new(request.subject_token)),
            from_app: request.from_app,
        };
        // The caller going away drops this future, and with it the call.
        let mut options = CallOptions {
            sink,
            input_responses: serde_json::from_str(&request.input_responses_json).ok(),
            ..CallOptions::default()
        };
        if request.timeout_ms > 0 {
            options.timeout = Some(std::time::Duration::from_millis(u64::from(
                request.timeout_ms,
            )));
        }
        let result = self
            .dispatch
            .call_tool(call, options)
            .await
            .map_err(|e| quiver_fleet::remote::upstream_status(&e, redact(&e.to_string())))?;
        let result_json =
            serde_json::to_string(&result).map_err(|e| Status::internal(e.to_string()))?;
        Ok(pb::CallToolResponse {
            result_json,
            upstream_logs_json: Vec::new(),
        })
    }

    async fn answer_request(
        &self,
        request: Request<pb::McpRequest>,
    ) -> Result<Response<pb::McpResponse>, Status> {
        let request = request.into_inner();
        let mcp: rmcp::model::ClientRequest =
            serde_json::from_str(&request.request_json).map_err(|e| {
                Status::invalid_argument(format!("request_json is not an MCP request: {e}"))
            })?;
        let mut options = CallOptions::default();
        if request.timeout_ms > 0 {
            options.timeout = Some(std::time::Duration::from_millis(u64::from(
                request.timeout_ms,
            )));
        }
        // The caller going away drops this future, and with it the request.
        let result = self
            .dispatch
            .request(&request.server, mcp, options)
            .await
            .map_err(|e| Status::unavailable(redact(&e.to_string())))?;
        let result_json =
            serde_json::to_string(&result).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::McpResponse { result_json }))
    }

    async fn answer_execute(
        &self,
        request: Request<pb::ExecuteRequest>,
    ) -> Result<Response<pb::ExecuteResponse>, Status> {
        let logs = Arc::new(CollectedLogs::default());
        let mut response = self
            .run_execute(request.into_inner(), Some(logs.clone()))
            .await?;
        response.upstream_logs_json = logs.take();
        Ok(Response::new(response))
    }

    async fn run_execute(
        &self,
        request: pb::ExecuteRequest,
        sink: Option<Arc<dyn quiver_contract::CallSink>>,
    ) -> Result<pb::ExecuteResponse, Status> {
        let mut request = wire::request_from_pb(request);
        if request.tenant.is_empty() {
            request.tenant = DEFAULT_TENANT.into();
        }
        if request.session.is_empty() {
            request.session = "anonymous".into();
        }
        // An unknown tenant is refused here, with its gRPC status; the
        // scripts look its view up themselves.
        self.view_of(&request.tenant)?;
        // A client that cancels resets the stream and tonic drops this
        // future: the guard then stops the script and frees its worker.
        let cancel = CancellationToken::new();
        let _stop_when_dropped = cancel.clone().drop_guard();
        let result = self.scripts.execute(request, cancel, sink).await;
        wire::result_to_pb(result)
    }
}
