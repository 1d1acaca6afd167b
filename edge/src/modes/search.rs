//! Search mode: `search_tools` finds tools, `call_tool` calls them.

use std::{fmt::Write as _, sync::Arc};

use rmcp::{
    RoleServer,
    model::{CallToolResult, JsonObject, Tool},
    service::RequestContext,
};
use serde::Deserialize;
use serde_json::json;

use super::{forward, meta_tool, parse_args, tool_ok, unknown_tool};
use crate::{gateway::Gateway, view::ToolView};

/// Largest `limit` honoured.
const MAX_LIMIT: usize = 20;

/// The two tools of search mode.
pub fn list() -> Vec<Tool> {
    vec![
        meta_tool(
            "search_tools",
            "Find tools for a task. Returns matching tools with their input schemas.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What you want to do"},
                "limit": {"type": "integer", "description": "Max results (default 5)"}
            }, "required": ["query"]}),
        ),
        meta_tool(
            "call_tool",
            "Call a tool found by search_tools.",
            json!({"type": "object", "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object"}
            }, "required": ["name"]}),
        ),
    ]
}

/// Instructions sent at initialize.
pub fn instructions() -> String {
    "Find tools with search_tools, then run one with call_tool.".into()
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

/// `search_tools`.
pub fn search_tools(
    view: &ToolView,
    args: Option<JsonObject>,
    default_limit: usize,
) -> CallToolResult {
    let args: SearchArgs =
        match parse_args("search_tools", args, "{query: string, limit?: integer}") {
            Ok(a) => a,
            Err(e) => return *e,
        };
    let limit = args.limit.unwrap_or(default_limit).clamp(1, MAX_LIMIT);
    let hits = view.search_for("default", &args.query, limit);
    let mut text = String::new();
    let mut results = Vec::with_capacity(hits.len());
    for (tool, score) in &hits {
        let t = tool.tool;
        let schema = serde_json::to_string(&t.def.input_schema).unwrap_or_default();
        let _ = writeln!(
            text,
            "{} — {}\n  arguments: {schema}",
            t.exposed_name, t.stub.summary
        );
        results.push(json!({
            "name": t.exposed_name,
            "server": t.id.server,
            "tool": t.id.tool,
            "score": (f64::from(*score) * 1000.0).round() / 1000.0,
            "description": t.def.description,
            "inputSchema": t.def.input_schema,
        }));
    }
    if hits.is_empty() {
        text = format!("No tools match `{}`. Try other words.", args.query);
    } else {
        text.push_str("Call one with call_tool {name, arguments}.");
    }
    tool_ok(text, Some(json!({"results": results})))
}

/// `call_tool`, or a direct call by a tool's own name.
pub async fn call_tool(
    gateway: &Arc<Gateway>,
    view: &ToolView,
    args: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    let args: CallArgs = match parse_args("call_tool", args, "{name: string, arguments?: object}") {
        Ok(a) => a,
        Err(e) => return *e,
    };
    call_by_name(gateway, view, &args.name, args.arguments, context).await
}

/// Calls a visible tool by its exposed name.
pub async fn call_by_name(
    gateway: &Arc<Gateway>,
    view: &ToolView,
    name: &str,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    match view.by_exposed(name) {
        Some(tool) => forward(gateway, tool, view, arguments, context).await,
        None => unknown_tool(view, name, "use search_tools to find the right name"),
    }
}

/// Whether `value` is one of search mode's own tool names.
pub fn is_meta(name: &str) -> bool {
    matches!(name, "search_tools" | "call_tool")
}
