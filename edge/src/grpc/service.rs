//! `quiver.v1.Gateway`: list, search, describe, call and execute over gRPC,
//! each answered from the caller's view exactly as the MCP modes answer, so a
//! tool outside the view is absent from every answer and error. It owns the
//! mapping to gRPC messages and statuses, not the rules behind them.

use std::{sync::Arc, time::Duration};

use quiver_contract::{API_DECLARATION, CallOptions, MORE_API_DECLARATION};
use quiver_proto::pb::{
    DescribeRequest, DescribeResponse, GatewayCallToolRequest, GatewayCallToolResponse,
    GatewayExecuteRequest, GatewayTool, ListToolsRequest, ListToolsResponse, SearchHit,
    SearchToolsRequest, SearchToolsResponse, ToolDeclaration, UnknownTool,
    gateway_server::{Gateway as GatewayApi, GatewayServer},
};
use quiver_telemetry::{
    propagation, quiver_span,
    spans::{self, RpcMethod, traced_rpc as traced},
};
use quiver_view::{
    ToolView,
    search_result::search_limit,
    search_telemetry::SearchSurface,
    suggest::{closest, unknown_tool_message},
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use super::{
    auth::{UNAUTHENTICATED, principal},
    execute::{self, ExecuteEvents},
};
use crate::{auth::Principal, gateway::Gateway, modes::call_checked};

/// Most names one `Describe` takes.
const MAX_DESCRIBE: usize = 100;

/// Suggestions offered for an unknown name.
const SUGGESTIONS: usize = 3;

/// The `quiver.v1.Gateway` service of one edge.
#[derive(Clone)]
pub struct GatewayService {
    gateway: Arc<Gateway>,
}

impl GatewayService {
    /// The service answering from `gateway`'s views and backends.
    pub fn new(gateway: Arc<Gateway>) -> GatewayService {
        GatewayService { gateway }
    }

    /// The tonic server wrapping it.
    pub fn into_server(self) -> GatewayServer<GatewayService> {
        GatewayServer::new(self)
    }

    /// Who sent `request`, and what it may see now.
    async fn caller<T>(&self, request: &Request<T>) -> Result<(Principal, Arc<ToolView>), Status> {
        let principal = principal(&self.gateway, request.metadata()).await?;
        tracing::Span::current().record("quiver.tenant", &*principal.tenant);
        // Only a tenant removed since its key was checked has no view.
        let view = self
            .gateway
            .view_for(&principal)
            .ok_or_else(|| Status::unauthenticated(UNAUTHENTICATED))?;
        Ok((principal, view))
    }
}

/// NOT_FOUND for `name`, worded from the view alone: a tool of another
/// tenant gets the answer of a tool that exists nowhere.
fn unknown_tool(view: &ToolView, name: &str) -> Status {
    let suggestions = closest(name, view.exposed_names(), SUGGESTIONS);
    Status::not_found(unknown_tool_message(
        name,
        &suggestions,
        "find tool names with ListTools or SearchTools",
    ))
}

/// The arguments of a call: `null` for none, else a JSON object.
fn arguments(json: &str) -> Result<Value, Status> {
    if json.trim().is_empty() {
        return Ok(Value::Null);
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value @ (Value::Object(_) | Value::Null)) => Ok(value),
        Ok(_) => Err(Status::invalid_argument(
            "arguments_json must be a JSON object, e.g. {\"city\": \"Lisbon\"}",
        )),
        Err(e) => Err(Status::invalid_argument(format!(
            "arguments_json is not JSON ({e}); send a JSON object, e.g. {{\"city\": \"Lisbon\"}}"
        ))),
    }
}

/// The answers, each run inside its RPC's span by the trait impl below.
impl GatewayService {
    async fn answer_list_tools(
        &self,
        request: Request<ListToolsRequest>,
    ) -> Result<Response<ListToolsResponse>, Status> {
        let (_, view) = self.caller(&request).await?;
        let tools = view
            .iter()
            .map(|t| GatewayTool {
                name: t.tool.exposed_name.clone(),
                server: t.tool.id.server.clone(),
                tool: t.tool.id.tool.clone(),
                description: t.tool.def.description.clone(),
                input_schema_json: t.tool.def.input_schema.to_string(),
                signature: t.tool.stub.signature.clone(),
            })
            .collect();
        let script_api = match self.gateway.scripts() {
            Some(_) => format!("{API_DECLARATION}\n{MORE_API_DECLARATION}"),
            None => String::new(),
        };
        Ok(Response::new(ListToolsResponse {
            tools,
            manifest_version: view.manifest().version,
            script_api,
        }))
    }

    async fn answer_search_tools(
        &self,
        request: Request<SearchToolsRequest>,
    ) -> Result<Response<SearchToolsResponse>, Status> {
        let (principal, view) = self.caller(&request).await?;
        let request = request.into_inner();
        let asked = (request.limit > 0).then_some(request.limit as usize);
        let limit = search_limit(asked, self.gateway.config().search_limit);
        let results = view
            .search_results(SearchSurface::Api, &principal.tenant, &request.query, limit)
            .into_iter()
            .map(|(tool, hit)| SearchHit {
                name: hit.name,
                server: hit.server,
                tool: hit.tool,
                score: hit.score,
                description: tool.tool.def.description.clone(),
                input_schema_json: tool.tool.def.input_schema.to_string(),
                signature: hit.signature,
                summary: hit.summary,
            })
            .collect();
        Ok(Response::new(SearchToolsResponse { results }))
    }

    async fn answer_describe(
        &self,
        request: Request<DescribeRequest>,
    ) -> Result<Response<DescribeResponse>, Status> {
        let (principal, view) = self.caller(&request).await?;
        let names = request.into_inner().names;
        if names.is_empty() || names.len() > MAX_DESCRIBE {
            return Err(Status::invalid_argument(format!(
                "names: give 1 to {MAX_DESCRIBE} tool names from ListTools or SearchTools (got {})",
                names.len()
            )));
        }
        let mut answer = DescribeResponse::default();
        for name in names {
            match view.resolve(&name) {
                Some(t) => {
                    view.record_describe(&principal.tenant, t);
                    answer.tools.push(ToolDeclaration {
                        name: t.tool.exposed_name.clone(),
                        server: t.tool.id.server.clone(),
                        tool: t.tool.id.tool.clone(),
                        declaration: t.tool.stub.declaration.clone(),
                    });
                }
                None => {
                    let suggestions = closest(&name, view.exposed_names(), SUGGESTIONS);
                    answer.unknown.push(UnknownTool { name, suggestions });
                }
            }
        }
        Ok(Response::new(answer))
    }

    async fn answer_call_tool(
        &self,
        request: Request<GatewayCallToolRequest>,
    ) -> Result<Response<GatewayCallToolResponse>, Status> {
        let (principal, view) = self.caller(&request).await?;
        let request = request.into_inner();
        let tool = view
            .resolve(&request.name)
            .ok_or_else(|| unknown_tool(&view, &request.name))?;
        tracing::Span::current().record("gen_ai.tool.name", tool.tool.exposed_name.as_str());
        let index = tool.index;
        let sent = arguments(&request.arguments_json)?;
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let options = CallOptions {
            timeout: (request.timeout_ms > 0)
                .then(|| Duration::from_millis(u64::from(request.timeout_ms))),
            cancel,
            sink: None,
            input_responses: None,
        };
        let dispatch = self.gateway.dispatch().clone();
        let origin = self.gateway.origin_of(&principal);
        // The call runs on a task of its own. When the client cancels, tonic
        // drops this future and the guard cancels the token; the call, still
        // being polled, sees it and tells the upstream (a dropped call could
        // not).
        let call = tokio::spawn(
            async move {
                let tool = view.get(index);
                call_checked(
                    dispatch.as_ref(),
                    &view,
                    &principal.tenant,
                    &origin,
                    tool,
                    sent,
                    options,
                )
                .await
                .map_err(|errors| {
                    Status::invalid_argument(errors.message(&tool.tool.exposed_name))
                })?
                .map_err(|e| Status::failed_precondition(e.message.to_string()))
            }
            .instrument(tracing::Span::current()),
        );
        let result = call
            .await
            .map_err(|e| Status::internal(format!("the call's task failed: {e}")))??;
        let result_json = serde_json::to_string(&result).map_err(|e| {
            Status::internal(format!("the tool's result could not be encoded: {e}"))
        })?;
        Ok(Response::new(GatewayCallToolResponse {
            result_json,
            is_error: result.is_error == Some(true),
        }))
    }

    async fn answer_execute(
        &self,
        request: Request<GatewayExecuteRequest>,
    ) -> Result<Response<ExecuteEvents>, Status> {
        // The executor checks the script's calls against its own view of
        // the tenant; the caller's is not passed on.
        let (principal, _) = self.caller(&request).await?;
        let Some(scripts) = self.gateway.scripts() else {
            return Err(Status::unimplemented(
                "scripts are not enabled on this edge; call tools one at a time with CallTool",
            ));
        };
        let events = execute::start(
            scripts.clone(),
            &principal.tenant,
            self.gateway.origin_of(&principal),
            request.into_inner(),
        )?;
        Ok(Response::new(events))
    }
}

/// The span of one RPC, its parent the trace context in the request's metadata.
fn rpc_span<T>(method: &'static str, request: &Request<T>) -> tracing::Span {
    let span = quiver_span!(format!("quiver.v1.Gateway/{method}"), "server");
    span.record("rpc.system", "grpc");
    span.record("rpc.method", method);
    propagation::adopt(
        &span,
        propagation::extract_from_metadata(request.metadata()),
    );
    span
}

#[tonic::async_trait]
impl GatewayApi for GatewayService {
    async fn list_tools(
        &self,
        request: Request<ListToolsRequest>,
    ) -> Result<Response<ListToolsResponse>, Status> {
        let span = rpc_span("ListTools", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Gateway",
                method: "ListTools",
            },
            span,
            self.answer_list_tools(request),
        )
        .await
    }

    async fn search_tools(
        &self,
        request: Request<SearchToolsRequest>,
    ) -> Result<Response<SearchToolsResponse>, Status> {
        let span = rpc_span("SearchTools", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Gateway",
                method: "SearchTools",
            },
            span,
            self.answer_search_tools(request),
        )
        .await
    }

    async fn describe(
        &self,
        request: Request<DescribeRequest>,
    ) -> Result<Response<DescribeResponse>, Status> {
        let span = rpc_span("Describe", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Gateway",
                method: "Describe",
            },
            span,
            self.answer_describe(request),
        )
        .await
    }

    async fn call_tool(
        &self,
        request: Request<GatewayCallToolRequest>,
    ) -> Result<Response<GatewayCallToolResponse>, Status> {
        let span = rpc_span("CallTool", &request);
        let result = traced(
            RpcMethod {
                service: "quiver.v1.Gateway",
                method: "CallTool",
            },
            span.clone(),
            self.answer_call_tool(request),
        )
        .await;
        if result.as_ref().is_ok_and(|r| r.get_ref().is_error) {
            spans::record_error(&span, "tool_error");
        }
        result
    }

    type ExecuteStream = ExecuteEvents;

    /// The span covers starting the script; the script itself runs, in
    /// that span, while the stream is read.
    async fn execute(
        &self,
        request: Request<GatewayExecuteRequest>,
    ) -> Result<Response<ExecuteEvents>, Status> {
        let span = rpc_span("Execute", &request);
        traced(
            RpcMethod {
                service: "quiver.v1.Gateway",
                method: "Execute",
            },
            span,
            self.answer_execute(request),
        )
        .await
    }
}
