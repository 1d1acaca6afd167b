//! Search mode: `search_tools` finds tools, `call_tool` calls them (a tool
//! may also be called by its own name).
#![allow(deprecated)] // logging is current in the protocol versions served here

use std::fmt::Write as _;

use futures::future::BoxFuture;
use quiver_contract::CallOrigin;
use quiver_view::{ToolView, search_result::search_limit, search_telemetry::SearchSurface};
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResult, JsonObject, ServerCapabilities, Tool},
    service::RequestContext,
};
use serde::Deserialize;
use serde_json::json;

use super::{
    forward::forward,
    handler::{Backends, ModeHandler, ToolRequest},
    tool_result::{
        meta_tool, meta_tool_capabilities, parse_args, tool_ok, unknown_tool, with_app_link,
    },
};

/// Search mode's own tool names.
const SEARCH_TOOLS: &str = "search_tools";
const CALL_TOOL: &str = "call_tool";

/// Search mode.
pub struct SearchMode {
    backends: Backends,
}

impl SearchMode {
    /// Search mode over `backends`.
    pub fn new(backends: Backends) -> SearchMode {
        SearchMode { backends }
    }

    /// `search_tools`.
    fn search_tools(
        &self,
        view: &ToolView,
        tenant: &str,
        args: Option<JsonObject>,
    ) -> CallToolResult {
        let args: SearchArgs =
            match parse_args(SEARCH_TOOLS, args, "{query: string, limit?: integer}") {
                Ok(a) => a,
                Err(e) => return *e,
            };
        let limit = search_limit(args.limit, self.backends.search_limit);
        let hits = view.search_results(SearchSurface::Search, tenant, &args.query, limit);
        let mut text = String::new();
        let mut results = Vec::with_capacity(hits.len());
        for (tool, hit) in &hits {
            let t = tool.tool;
            let schema = serde_json::to_string(&t.def.input_schema).unwrap_or_default();
            let _ = writeln!(
                text,
                "{} — {}\n  arguments: {schema}",
                t.exposed_name, t.stub.summary
            );
            let mut result = serde_json::to_value(hit).unwrap_or_default();
            result["description"] = json!(t.def.description);
            result["inputSchema"] = json!(t.def.input_schema);
            results.push(result);
        }
        if hits.is_empty() {
            text = format!(
                "No tools match `{}`. Try other words.",
                quiver_view::suggest::echoed(&args.query)
            );
        } else {
            text.push_str("Call one with call_tool {name, arguments}.");
        }
        tool_ok(text, Some(json!({"results": results})))
    }

    /// Calls a visible tool by its exposed name.
    async fn call_by_name(
        &self,
        view: &ToolView,
        (tenant, origin): (&str, &CallOrigin),
        name: &str,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match view.by_exposed(name) {
            Some(tool) => {
                let result = forward(
                    self.backends.dispatch.as_ref(),
                    view,
                    tenant,
                    origin,
                    tool,
                    arguments,
                    context,
                )
                .await?;
                Ok(with_app_link(result, tool))
            }
            None => Ok(unknown_tool(
                view,
                name,
                "use search_tools to find the right name",
            )),
        }
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

impl ModeHandler for SearchMode {
    fn capabilities(&self) -> ServerCapabilities {
        meta_tool_capabilities()
    }

    fn instructions(&self, _view: &ToolView) -> String {
        "Find tools with search_tools, then run one with call_tool.".into()
    }

    fn tools(&self, _view: &ToolView) -> Vec<Tool> {
        vec![
            meta_tool(
                SEARCH_TOOLS,
                "Find tools for a task. Returns matching tools with their input schemas.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "What you want to do"},
                    "limit": {"type": "integer", "description": "Max results (default 5)"}
                }, "required": ["query"]}),
            ),
            meta_tool(
                CALL_TOOL,
                "Call a tool found by search_tools.",
                json!({"type": "object", "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object"}
                }, "required": ["name"]}),
            ),
        ]
    }

    fn offers(&self, view: &ToolView, name: &str) -> bool {
        // A tool may also be called by its own name.
        name == SEARCH_TOOLS || name == CALL_TOOL || view.resolve(name).is_some()
    }

    fn call<'a>(
        &'a self,
        request: ToolRequest<'a>,
    ) -> BoxFuture<'a, Result<CallToolResult, ErrorData>> {
        Box::pin(async move {
            let view = &request.view;
            match request.name {
                SEARCH_TOOLS => Ok(self.search_tools(view, request.tenant, request.arguments)),
                CALL_TOOL => {
                    let args: CallArgs = match parse_args(
                        CALL_TOOL,
                        request.arguments,
                        "{name: string, arguments?: object}",
                    ) {
                        Ok(a) => a,
                        Err(e) => return Ok(*e),
                    };
                    self.call_by_name(
                        view,
                        (request.tenant, request.origin),
                        &args.name,
                        args.arguments,
                        request.context,
                    )
                    .await
                }
                other => {
                    self.call_by_name(
                        view,
                        (request.tenant, request.origin),
                        other,
                        request.arguments,
                        request.context,
                    )
                    .await
                }
            }
        })
    }
}
