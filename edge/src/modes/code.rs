//! Code mode: progressive discovery (`list` → `search` → `describe`). The
//! `execute` tool arrives with the sandboxed executor; until then it is absent.

use std::fmt::Write as _;

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde::Deserialize;
use serde_json::json;

use super::{meta_tool, parse_args, tool_error, tool_ok, unknown_tool};
use crate::{
    suggest::closest,
    view::{ToolView, ViewTool},
};

/// Largest `limit` honoured.
const MAX_LIMIT: usize = 20;
/// Most tools `describe` renders in one call.
const MAX_DESCRIBE: usize = 20;

/// The tools of code mode (`execute` only when scripts can run).
pub fn list(execute: bool) -> Vec<Tool> {
    let mut tools = vec![
        meta_tool(
            "list",
            "List servers, or one server's tools as one-line signatures.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Server name; omit for all servers"}
            }}),
        ),
        meta_tool(
            "search",
            "Search tools by task; returns signatures, best first.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "description": "Default 5"}
            }, "required": ["query"]}),
        ),
        meta_tool(
            "describe",
            "Full TypeScript declarations of tools, by name.",
            json!({"type": "object", "properties": {
                "names": {"type": "array", "items": {"type": "string"}}
            }, "required": ["names"]}),
        ),
    ];
    if execute {
        tools.push(meta_tool(
            "execute",
            &execute_description(),
            json!({"type": "object", "properties": {
            "code": {"type": "string", "description": "JavaScript: the body of an async function"}
        }, "required": ["code"]}),
        ));
    }
    tools
}

fn execute_description() -> String {
    format!(
        "Run JavaScript that calls tools; only what it returns comes back. The code is the body of an async function (use await and return). In scope:\n{}\nCall tools as tools.<server>.<tool>(args) or tools.call(name, args); Promise.all runs calls in parallel.",
        quiver_executor::script::API_DECLARATION
    )
}

/// Instructions sent at initialize.
pub fn instructions(view: &ToolView) -> String {
    format!(
        "{} tools on {} servers are available without listing them all: find them with search or list, then read exact parameters with describe.",
        view.len(),
        view.servers().count()
    )
}

/// Whether `name` is one of code mode's own tools.
pub fn is_meta(name: &str) -> bool {
    matches!(name, "list" | "search" | "describe" | "execute")
}

#[derive(Deserialize)]
struct ExecuteArgs {
    code: String,
}

/// `execute {code}`: runs the script on a sandboxed worker against the session's view.
pub async fn execute_tool(
    gateway: &std::sync::Arc<crate::gateway::Gateway>,
    view: std::sync::Arc<ToolView>,
    session: &str,
    args: Option<JsonObject>,
    cancel: tokio_util::sync::CancellationToken,
    relay: crate::relay::SessionRelay,
) -> CallToolResult {
    use quiver_executor::script::ExecuteError;
    let args: ExecuteArgs = match parse_args("execute", args, "{code: string}") {
        Ok(a) => a,
        Err(e) => return *e,
    };
    let Some(scripts) = gateway.scripts() else {
        return tool_error(
            "unavailable",
            "scripts are not enabled on this gateway".into(),
            json!({}),
        );
    };
    match scripts
        .execute(
            &args.code,
            session,
            view,
            cancel,
            Some(std::sync::Arc::new(relay)),
        )
        .await
    {
        Ok(outcome) => {
            let logs = outcome.logs.clone();
            match outcome.error {
                None => {
                    let result = outcome.result.unwrap_or(serde_json::Value::Null);
                    let mut text = serde_json::to_string(&result).unwrap_or_default();
                    if !logs.is_empty() {
                        let _ = write!(text, "\n--- console ---\n{}", logs.join("\n"));
                    }
                    tool_ok(
                        text,
                        Some(
                            json!({"result": result, "logs": logs, "truncated": outcome.truncated}),
                        ),
                    )
                }
                Some(error) => {
                    let at = error
                        .line
                        .map(|l| format!(" (line {l})"))
                        .unwrap_or_default();
                    let mut text = format!(
                        "script {}: {}{at}",
                        error.kind,
                        // What the script itself wrote (a path, an id) stays.
                        quiver_view::redact::redact_for_caller(
                            &error.message,
                            &serde_json::Value::String(args.code.clone())
                        )
                    );
                    if !logs.is_empty() {
                        let _ = write!(text, "\n--- console ---\n{}", logs.join("\n"));
                    }
                    tool_error(
                        &format!("script_{}", error.kind),
                        text,
                        json!({"line": error.line, "logs": logs}),
                    )
                }
            }
        }
        Err(ExecuteError::Rejected(errors)) => {
            let violations = serde_json::to_value(&errors.errors).unwrap_or_default();
            tool_error(
                "script_rejected",
                format!("the script was rejected before running; fix and resend:\n{errors}"),
                json!({"violations": violations}),
            )
        }
        Err(e) => tool_error(
            "executor_error",
            quiver_view::redact::redact(&e.to_string()),
            json!({}),
        ),
    }
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Names {
    Many(Vec<String>),
    One(String),
}

#[derive(Deserialize)]
struct DescribeArgs {
    names: Names,
}

/// `list {path?}`.
pub fn list_tool(view: &ToolView, args: Option<JsonObject>) -> CallToolResult {
    let args: ListArgs = match parse_args("list", args, "{path?: string}") {
        Ok(a) => a,
        Err(e) => return *e,
    };
    let path = args
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != "/");
    match path {
        None => {
            let mut text = String::new();
            let mut servers = Vec::new();
            for server in view.servers() {
                let count = view.tools_of(server).count();
                let _ = writeln!(
                    text,
                    "{} — {} ({count} tools)",
                    server.js, server.description
                );
                servers.push(
                    json!({"name": server.js, "description": server.description, "tools": count}),
                );
            }
            if servers.is_empty() {
                text.push_str("No servers are available yet.");
            }
            tool_ok(text, Some(json!({"servers": servers})))
        }
        Some(path) => {
            let name = path
                .trim_start_matches('/')
                .trim_start_matches("tools.")
                .trim_end_matches('/');
            let Some(server) = view.server(name) else {
                let suggestions = closest(name, view.servers().map(|s| s.js.as_str()), 3);
                let hint = if suggestions.is_empty() {
                    "call list without a path to see the servers".to_string()
                } else {
                    format!(
                        "did you mean {}?",
                        suggestions
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                return tool_error(
                    "unknown_server",
                    format!("unknown server `{name}`; {hint}"),
                    json!({"suggestions": suggestions}),
                );
            };
            let mut text = String::new();
            let mut tools = Vec::new();
            for t in view.tools_of(server) {
                let _ = writeln!(text, "{} — {}", t.tool.stub.signature, t.tool.stub.summary);
                tools.push(json!({"name": t.tool.exposed_name, "signature": t.tool.stub.signature, "summary": t.tool.stub.summary}));
            }
            tool_ok(text, Some(json!({"server": server.js, "tools": tools})))
        }
    }
}

/// `search {query, limit?}`.
pub fn search_tool(
    view: &ToolView,
    args: Option<JsonObject>,
    default_limit: usize,
) -> CallToolResult {
    let args: SearchArgs = match parse_args("search", args, "{query: string, limit?: integer}") {
        Ok(a) => a,
        Err(e) => return *e,
    };
    let limit = args.limit.unwrap_or(default_limit).clamp(1, MAX_LIMIT);
    let hits = view.search_for("default", &args.query, limit);
    if hits.is_empty() {
        return tool_ok(
            format!("No tools match `{}`.", args.query),
            Some(json!({"results": []})),
        );
    }
    let mut text = String::new();
    let mut results = Vec::with_capacity(hits.len());
    for (t, score) in hits {
        let _ = writeln!(text, "{} — {}", t.tool.stub.signature, t.tool.stub.summary);
        results.push(json!({
            "name": t.tool.exposed_name,
            "server": t.tool.id.server,
            "tool": t.tool.id.tool,
            // `server` is its own field here, so the signature starts at the tool.
            "signature": relative_signature(&t),
            "summary": t.tool.stub.summary,
            "score": (f64::from(score) * 100.0).round() / 100.0,
        }));
    }
    tool_ok(text, Some(json!({"results": results})))
}

/// The signature without its `server.` prefix.
fn relative_signature(tool: &ViewTool<'_>) -> String {
    let signature = &tool.tool.stub.signature;
    signature
        .strip_prefix(tool.server.js.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(signature)
        .to_string()
}

/// `describe {names}`; the name `api` gives the script API declarations.
pub fn describe_tool(view: &ToolView, args: Option<JsonObject>) -> CallToolResult {
    let args: DescribeArgs = match parse_args("describe", args, "{names: string[]}") {
        Ok(a) => a,
        Err(e) => return *e,
    };
    let names = match args.names {
        Names::Many(n) => n,
        Names::One(n) => vec![n],
    };
    if names.is_empty() {
        return tool_error(
            "invalid_arguments",
            "`names` is empty; pass tool names from search or list".into(),
            json!({}),
        );
    }
    let mut text = String::new();
    let mut unknown = Vec::new();
    for name in names.iter().take(MAX_DESCRIBE) {
        if name == "api" {
            text.push_str(quiver_executor::script::API_DECLARATION);
            text.push('\n');
            continue;
        }
        match view.resolve(name) {
            Some(t) => {
                view.record_describe("default", t);
                text.push_str(&t.tool.stub.declaration);
                text.push('\n');
            }
            None => unknown.push(name.clone()),
        }
    }
    if names.len() > MAX_DESCRIBE {
        let _ = writeln!(
            text,
            "// {} more names not described; ask again for them.",
            names.len() - MAX_DESCRIBE
        );
    }
    if text.is_empty() {
        return unknown_tool(view, &unknown[0], "use search or list to find tool names");
    }
    for name in unknown {
        let suggestions = closest(&name, view.exposed_names(), 3);
        let _ = writeln!(
            text,
            "// unknown tool `{name}`{}",
            if suggestions.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", suggestions.join(", "))
            }
        );
    }
    tool_ok(text, None)
}
