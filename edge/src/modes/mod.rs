//! What each mode lists and how it answers calls. Every answer is built from the
//! session's [`ToolView`], so nothing outside the view can appear in it.

pub mod code;
pub mod forwarded;
pub mod passthrough;
pub mod search;

use std::sync::Arc;

use quiver_executor::{CallOptions, ToolCall};
use rmcp::{
    RoleServer,
    model::{CallToolResult, ContentBlock, JsonObject, Tool},
    service::RequestContext,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{
    gateway::Gateway,
    redact::redact_for_caller,
    relay::SessionRelay,
    suggest::{closest, unknown_tool_message},
    view::{ToolView, ViewTool},
};

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

/// An upstream's error result with its text redacted for the caller who sent
/// `arguments` (see `quiver_view::redact`); other blocks pass unchanged.
fn redact_error_result(mut result: CallToolResult, arguments: &Value) -> CallToolResult {
    for block in &mut result.content {
        if let Some(text) = block.as_text() {
            let clean = redact_for_caller(&text.text, arguments);
            if clean != text.text {
                *block = ContentBlock::text(clean);
            }
        }
    }
    result
}

/// Validates and forwards one call to a visible tool; upstream failures become
/// redacted tool errors. The call is dispatched at most once.
pub(crate) async fn forward(
    gateway: &Arc<Gateway>,
    tool: ViewTool<'_>,
    view: &ToolView,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
) -> CallToolResult {
    let args_value = Value::Object(arguments.clone().unwrap_or_default());
    if let Err(errors) = view
        .check(tool.index)
        .check(&args_value, tool.server.validation)
    {
        return tool_error(
            "invalid_arguments",
            errors.message(&tool.tool.exposed_name),
            errors.to_json().get("error").cloned().unwrap_or_default(),
        );
    }
    let call = ToolCall {
        tenant: "default".into(),
        server: tool.tool.id.server.clone(),
        tool: tool.tool.id.tool.clone(),
        arguments,
    };
    let relay = SessionRelay::new(context.peer.clone(), context.meta.get_progress_token());
    let options = CallOptions {
        timeout: None,
        cancel: context.ct.clone(),
        sink: Some(Arc::new(relay)),
    };
    let outcome = gateway.dispatch().call_tool(call, options).await;
    let succeeded = matches!(&outcome, Ok(r) if r.is_error != Some(true));
    view.record_call("default", tool, succeeded);
    match outcome {
        Ok(result) if result.is_error == Some(true) => redact_error_result(result, &args_value),
        Ok(result) => result,
        Err(e) => {
            tracing::warn!(tool = %tool.tool.exposed_name, "call failed: {e}");
            tool_error(
                "upstream_error",
                redact_for_caller(&e.to_string(), &args_value),
                json!({"tool": tool.tool.exposed_name}),
            )
        }
    }
}
