//! Code mode: progressive discovery (`list` → `search` → `describe`) and
//! `execute`, which runs a script against the session's view on an executor
//! (present only when the edge has one for scripts).
#![allow(deprecated)] // logging is current in the protocol versions served here

use std::fmt::Write as _;

use futures::future::BoxFuture;
use quiver_contract::{
    API_DECLARATION, ExecuteError, ExecuteRequest, Limits, MORE_API_DECLARATION, ScriptOutcome,
};
use quiver_view::{
    ToolView,
    redact::{redact, redact_for_caller},
    search_result::search_limit,
    search_telemetry::SearchSurface,
    suggest::{closest, unknown_tool_message},
};
use rmcp::{
    ErrorData,
    model::{CallToolResult, JsonObject, ServerCapabilities, Tool},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    forward::forward_by_name,
    handler::{Backends, ModeHandler, ToolRequest},
    reply_cap::within_cap,
    tool_result::{
        meta_tool, meta_tool_capabilities, parse_args, tool_error, tool_ok, unknown_tool,
    },
};
use crate::{input_required::TaskWall, relay::SessionRelay};

/// Most tools `describe` renders in one call.
const MAX_DESCRIBE: usize = 20;

/// Code mode's tools: the only place their names are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CodeTool {
    List,
    Search,
    Describe,
    Execute,
}

impl CodeTool {
    const ALL: [CodeTool; 4] = [
        CodeTool::List,
        CodeTool::Search,
        CodeTool::Describe,
        CodeTool::Execute,
    ];

    fn name(self) -> &'static str {
        match self {
            CodeTool::List => "list",
            CodeTool::Search => "search",
            CodeTool::Describe => "describe",
            CodeTool::Execute => "execute",
        }
    }

    fn named(name: &str) -> Option<CodeTool> {
        CodeTool::ALL.into_iter().find(|t| t.name() == name)
    }

    fn definition(self) -> Tool {
        match self {
            CodeTool::List => meta_tool(
                self.name(),
                "List servers, or one server's tools as one-line signatures.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "Server name; omit for all servers"}
                }}),
            ),
            CodeTool::Search => meta_tool(
                self.name(),
                "Search tools by task; returns signatures, best first.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "description": "Default 5"}
                }, "required": ["query"]}),
            ),
            CodeTool::Describe => meta_tool(
                self.name(),
                "Full TypeScript declarations of tools, by name.",
                json!({"type": "object", "properties": {
                    "names": {"type": "array", "items": {"type": "string"}}
                }, "required": ["names"]}),
            ),
            CodeTool::Execute => meta_tool(
                self.name(),
                &format!(
                    "Run JavaScript, the body of an async function; only its return value and console.log lines come back. In scope:\n{API_DECLARATION}\nCall tools.<server>.<tool>(args) or tools.call(name, args); Promise.all runs calls in parallel. stash keeps values between this session's runs, 1 h unless ttlSecs. describe([\"api\"]) adds resources."
                ),
                json!({"type": "object", "properties": {
                    "code": {"type": "string"},
                    "stash_id": {"type": "string", "description": "A stash shared by your tenant's runs that name it"}
                }, "required": ["code"]}),
            ),
        }
    }
}

/// Code mode.
pub struct CodeMode {
    backends: Backends,
}

impl CodeMode {
    /// Code mode over `backends`; `execute` is listed only with scripts.
    pub fn new(backends: Backends) -> CodeMode {
        CodeMode { backends }
    }

    /// The tools this edge offers.
    fn offered(&self) -> impl Iterator<Item = CodeTool> + '_ {
        CodeTool::ALL
            .into_iter()
            .filter(|t| *t != CodeTool::Execute || self.backends.scripts.is_some())
    }

    /// A tool of the view called by its own name, as passthrough calls it.
    async fn call_by_name(&self, request: ToolRequest<'_>) -> Result<CallToolResult, ErrorData> {
        let (view, name) = (request.view.clone(), request.name);
        forward_by_name(self.backends.dispatch.as_ref(), request)
            .await
            .unwrap_or_else(|| Ok(unknown_tool(&view, name, "use search to find tool names")))
    }

    /// `search {query, limit?}`.
    fn search_tool(
        &self,
        view: &ToolView,
        tenant: &str,
        args: Option<JsonObject>,
    ) -> CallToolResult {
        let args: SearchArgs = match parse_args(
            CodeTool::Search.name(),
            args,
            "{query: string, limit?: integer}",
        ) {
            Ok(a) => a,
            Err(e) => return *e,
        };
        let limit = search_limit(args.limit, self.backends.search_limit);
        let hits = view.search_results(SearchSurface::Code, tenant, &args.query, limit);
        if hits.is_empty() {
            return tool_ok(
                format!(
                    "No tools match `{}`.",
                    quiver_view::suggest::echoed(&args.query)
                ),
                Some(json!({"results": []})),
            );
        }
        let mut text = String::new();
        // The text names the server too: it has no separate field there.
        for (tool, hit) in &hits {
            let _ = writeln!(text, "{} — {}", tool.tool.stub.signature, hit.summary);
        }
        let results: Vec<_> = hits.into_iter().map(|(_, hit)| hit).collect();
        tool_ok(text, Some(json!({"results": results})))
    }

    /// `execute {code}`: runs the script on a sandboxed worker against the session's view.
    async fn execute_tool(&self, request: ToolRequest<'_>) -> CallToolResult {
        let args: ExecuteArgs = match parse_args(
            CodeTool::Execute.name(),
            request.arguments,
            "{code: string, stash_id?: string}",
        ) {
            Ok(a) => a,
            Err(e) => return *e,
        };
        let Some(scripts) = &self.backends.scripts else {
            return tool_error(
                "unavailable",
                "scripts are not enabled on this gateway".into(),
                json!({}),
            );
        };
        let stateless = crate::revision::is_stateless(request.context);
        let Some(stash) = stash_scope(args.stash_id.as_deref(), request.session, stateless) else {
            return tool_error(
                "invalid_arguments",
                "stash_id must be 1 to 64 letters, digits, `_`, `.` or `-`; nothing was run".into(),
                json!({"field": "stash_id"}),
            );
        };
        let relay = SessionRelay::for_request(request.context);
        let mut execute = ExecuteRequest::new(request.tenant, stash, args.code.as_str())
            .from_origin(request.origin.clone());
        // A script that may run as a task gets its tenant's wall time for tasks.
        if let Some(wall) = request.context.extensions.get::<TaskWall>() {
            execute = execute.as_possible_task(wall.0);
        }
        let outcome = scripts
            .execute(
                execute,
                request.context.ct.clone(),
                Some(std::sync::Arc::new(relay)),
            )
            .await;
        // The output cap holds for the whole reply as it leaves the edge.
        let cap = usize::try_from(Limits::default().output_bytes).unwrap_or(usize::MAX);
        within_cap(execute_result(outcome, &args.code), cap)
    }
}

/// What `execute` answers for a script that ended while its edge was away
/// (the script's own words are not at hand, so redaction keeps none of them).
pub(crate) fn script_result(outcome: Result<ScriptOutcome, ExecuteError>) -> CallToolResult {
    let cap = usize::try_from(Limits::default().output_bytes).unwrap_or(usize::MAX);
    within_cap(execute_result(outcome, ""), cap)
}

/// What `execute` answers for how a script ended.
fn execute_result(outcome: Result<ScriptOutcome, ExecuteError>, code: &str) -> CallToolResult {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(ExecuteError::Rejected(errors)) => {
            let violations = serde_json::to_value(&errors.errors).unwrap_or_default();
            return tool_error(
                "script_rejected",
                format!("the script was rejected before running; fix and resend:\n{errors}"),
                json!({"violations": violations}),
            );
        }
        Err(e) => return tool_error("executor_error", redact(&e.to_string()), json!({})),
    };
    let logs = outcome.logs;
    let Some(error) = outcome.error else {
        let result = outcome.result.unwrap_or(Value::Null);
        let mut text = serde_json::to_string(&result).unwrap_or_default();
        if !logs.is_empty() {
            let _ = write!(text, "\n--- console ---\n{}", logs.join("\n"));
        }
        return tool_ok(
            text,
            Some(json!({"result": result, "logs": logs, "truncated": outcome.truncated})),
        );
    };
    let at = error
        .line
        .map(|l| format!(" (line {l})"))
        .unwrap_or_default();
    let mut text = format!(
        "script {}: {}{at}",
        error.kind,
        // What the script itself wrote (a path, an id) stays.
        redact_for_caller(&error.message, &Value::String(code.to_string()))
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

impl ModeHandler for CodeMode {
    fn capabilities(&self) -> ServerCapabilities {
        meta_tool_capabilities()
    }

    fn instructions(&self, view: &ToolView) -> String {
        format!(
            "{} tools on {} servers are available without listing them all: find them with search or list, then read exact parameters with describe.",
            view.len(),
            view.servers().count()
        )
    }

    fn tools(&self, _view: &ToolView) -> Vec<Tool> {
        self.offered().map(CodeTool::definition).collect()
    }

    fn offers(&self, view: &ToolView, name: &str) -> bool {
        // A tool of the view may also be called by its own name.
        CodeTool::named(name).is_some_and(|t| self.offered().any(|o| o == t))
            || view.by_exposed(name).is_some()
    }

    fn call<'a>(
        &'a self,
        request: ToolRequest<'a>,
    ) -> BoxFuture<'a, Result<CallToolResult, ErrorData>> {
        Box::pin(async move {
            let tool = CodeTool::named(request.name).filter(|t| self.offered().any(|o| o == *t));
            Ok(match tool {
                Some(CodeTool::List) => list_tool(&request.view, request.arguments),
                Some(CodeTool::Search) => {
                    self.search_tool(&request.view, request.tenant, request.arguments)
                }
                Some(CodeTool::Describe) => {
                    describe_tool(&request.view, request.tenant, request.arguments)
                }
                Some(CodeTool::Execute) => self.execute_tool(request).await,
                None if request.view.by_exposed(request.name).is_some() => {
                    return self.call_by_name(request).await;
                }
                None => {
                    let other = request.name;
                    let offered: Vec<&str> = self
                        .offered()
                        .map(CodeTool::name)
                        .filter(|n| *n != other)
                        .collect();
                    let suggestions = closest(other, offered.into_iter(), 3);
                    return Err(ErrorData::invalid_params(
                        unknown_tool_message(
                            other,
                            &suggestions,
                            "code mode has the tools list, search and describe",
                        ),
                        None,
                    ));
                }
            })
        })
    }
}

#[derive(Deserialize)]
struct ExecuteArgs {
    code: String,
    #[serde(default)]
    stash_id: Option<String>,
}

/// The stash a script uses: the one `stash_id` names for the tenant, else
/// the session's own, else (a stateless client, which has no session) the
/// tenant's `default` one. `None` for a malformed name.
fn stash_scope(stash_id: Option<&str>, session: &str, stateless: bool) -> Option<String> {
    let named = |id: &str| format!("named:{id}");
    match stash_id {
        Some(id)
            if (1..=64).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
        {
            Some(named(id))
        }
        Some(_) => None,
        None if stateless => Some(named("default")),
        None => Some(session.to_string()),
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
fn list_tool(view: &ToolView, args: Option<JsonObject>) -> CallToolResult {
    let args: ListArgs = match parse_args(CodeTool::List.name(), args, "{path?: string}") {
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
                    format!(
                        "unknown server `{}`; {hint}",
                        quiver_view::suggest::echoed(name)
                    ),
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

/// `describe {names}`; the name `api` gives the script API declarations.
fn describe_tool(view: &ToolView, tenant: &str, args: Option<JsonObject>) -> CallToolResult {
    let args: DescribeArgs = match parse_args(CodeTool::Describe.name(), args, "{names: string[]}")
    {
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
            text.push_str(API_DECLARATION);
            text.push('\n');
            text.push_str(MORE_API_DECLARATION);
            text.push('\n');
            continue;
        }
        match view.resolve(name) {
            Some(t) => {
                view.record_describe(tenant, t);
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
            "// unknown tool `{}`{}",
            quiver_view::suggest::echoed(&name),
            if suggestions.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", suggestions.join(", "))
            }
        );
    }
    tool_ok(text, None)
}
