//! How every mode words its answers: meta-tool definitions, successful
//! results (text for the model, structured content for programs) and tool
//! errors a model can act on (a code, a message, what to try next).

use quiver_view::{
    ToolView,
    suggest::{closest, unknown_tool_message},
};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ServerCapabilities, Tool};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// What a mode that lists a fixed set of meta-tools declares: tools (whose
/// list never changes), logging, the upstreams' prompts, resources and
/// completions, which every mode serves as passthrough does, and tasks.
#[allow(deprecated)] // logging is current in the protocol versions served here
pub(crate) fn meta_tool_capabilities() -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_logging()
        .enable_prompts()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_completions()
        .enable_tasks()
        .build();
    capabilities.tools.get_or_insert_default().list_changed = None;
    capabilities
}

/// A meta-tool definition from its JSON parts.
pub(crate) fn meta_tool(name: &str, description: &str, input_schema: Value) -> Tool {
    let value = json!({"name": name, "description": description, "inputSchema": input_schema});
    serde_json::from_value(value).unwrap_or_else(|_| Tool::default())
}

/// A tool error a model can act on: text, plus the same as structured content.
pub(crate) fn tool_error(code: &str, message: String, extra: Value) -> CallToolResult {
    let mut error = json!({"code": code, "message": message});
    if let (Some(obj), Value::Object(more)) = (error.as_object_mut(), extra) {
        obj.extend(more);
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    result.structured_content = Some(json!({"error": error}));
    result
}

/// A successful result: `text` for the model, `structured` for programs.
pub(crate) fn tool_ok(text: String, structured: Option<Value>) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = structured;
    result
}

/// Parses a meta-tool's arguments, or explains what was expected.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &str,
    args: Option<JsonObject>,
    usage: &str,
) -> Result<T, Box<CallToolResult>> {
    serde_json::from_value(Value::Object(args.unwrap_or_default())).map_err(|e| {
        Box::new(tool_error(
            "invalid_arguments",
            format!("invalid arguments for `{tool}`: {e}. Expected {usage}."),
            json!({}),
        ))
    })
}

/// "unknown tool" with the closest visible names.
pub(crate) fn unknown_tool(view: &ToolView, name: &str, hint: &str) -> CallToolResult {
    let suggestions = closest(name, view.exposed_names(), 3);
    let message = unknown_tool_message(name, &suggestions, hint);
    tool_error("unknown_tool", message, json!({"suggestions": suggestions}))
}

/// `result` of a call of `tool`, carrying the tool's MCP App link in
/// `_meta.ui.resourceUri` when it has one: search mode's `call_tool` is
/// the tool a host sees called, so the link travels with its result for a
/// host that renders the view (the `ui://` resource is served as any).
pub(crate) fn with_app_link(
    mut result: rmcp::model::CallToolResult,
    tool: quiver_view::ViewTool<'_>,
) -> rmcp::model::CallToolResult {
    if let Some(uri) = tool.tool.def.app_resource() {
        let meta = result.meta.get_or_insert_with(Default::default);
        let ui = meta.0.entry("ui").or_insert_with(|| serde_json::json!({}));
        if let Some(ui) = ui.as_object_mut() {
            ui.insert("resourceUri".into(), uri.into());
        }
    }
    result
}
