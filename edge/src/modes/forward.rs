//! Forwarding one call of a visible tool to the executor: the arguments are
//! checked and the call prepared by the view ([`ToolView::prepare_call`]),
//! dispatched at most once, and an upstream's failure comes back redacted.
//! [`call_checked`] is that one path; MCP modes and the gRPC API both take it.

use std::sync::Arc;

use quiver_contract::UpstreamError;
use quiver_contract::{CallOptions, CallOrigin, Dispatch};
use quiver_view::{
    AppCallRefusal, ToolView, ViewTool, argument_check::ArgumentErrors, redact::redact_for_caller,
};
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResult, ContentBlock, ErrorCode, JsonObject},
    service::RequestContext,
};
use serde_json::{Value, json};

use super::tool_result::tool_error;
use crate::{input_required::GivenInput, relay::SessionRelay};

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
/// redacted tool errors, except that the client lacks a capability the tool
/// needs (`-32021`, MCP 2026-07-28), which is the client's to hear as such.
/// The call is dispatched at most once.
pub(crate) async fn forward(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    tenant: &str,
    origin: &CallOrigin,
    tool: ViewTool<'_>,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let relay = SessionRelay::for_request(context);
    let options = CallOptions {
        timeout: None,
        cancel: context.ct.clone(),
        sink: Some(Arc::new(relay)),
        input_responses: context.extensions.get::<GivenInput>().map(|g| g.0.clone()),
    };
    let sent = arguments.map_or(Value::Null, Value::Object);
    match call_checked(dispatch, view, tenant, origin, tool, sent, options).await {
        Ok(result) => result,
        Err(errors) => Ok(tool_error(
            "invalid_arguments",
            errors.message(&tool.tool.exposed_name),
            errors.to_json().get("error").cloned().unwrap_or_default(),
        )),
    }
}

/// [`forward`] of the tool of `request`'s view that `request.name` names,
/// when there is one.
pub(crate) async fn forward_by_name(
    dispatch: &dyn Dispatch,
    request: super::ToolRequest<'_>,
) -> Option<Result<CallToolResult, ErrorData>> {
    let view = request.view.clone();
    let tool = view.by_exposed(request.name)?;
    let (tenant, origin, context) = (request.tenant, request.origin, request.context);
    Some(
        forward(
            dispatch,
            &view,
            tenant,
            origin,
            tool,
            request.arguments,
            context,
        )
        .await,
    )
}

/// Whether `request` is the call of an MCP App's view: a name the mode
/// does not offer, that names a tool an app may call on an app server of
/// the view (see `quiver_view::app_tools`), or on several of them (then
/// [`forward_app_call`] says so).
pub(crate) fn is_app_call(
    mode: &dyn super::handler::ModeHandler,
    request: &super::ToolRequest<'_>,
) -> bool {
    !mode.offers(&request.view, request.name)
        && !matches!(
            request.view.app_call(request.name),
            Err(AppCallRefusal::Unknown { .. })
        )
}

/// Forwards the call of an MCP App's view ([`is_app_call`]) as any call
/// (the same checks, limits and audit), marked as the view's so that an
/// executor checks it against the tools apps may call.
pub(crate) async fn forward_app_call(
    dispatch: &dyn Dispatch,
    request: super::ToolRequest<'_>,
) -> Result<CallToolResult, ErrorData> {
    let view = request.view.clone();
    let tool = view
        .app_call(request.name)
        .map_err(|refusal| ErrorData::invalid_params(refusal.to_string(), None))?;
    let origin = CallOrigin {
        from_app: true,
        ..request.origin.clone()
    };
    forward(
        dispatch,
        &view,
        request.tenant,
        &origin,
        tool,
        request.arguments,
        request.context,
    )
    .await
}

/// One call of a visible tool, whoever asks (an MCP mode or the gRPC API):
/// `sent` (`null` when the caller sent no arguments) is checked against the
/// tool's schema — a failure comes back untouched and nothing is sent —,
/// the call is dispatched at most once and its outcome recorded in the
/// tenant's search signals. An upstream's error result comes back redacted
/// for the caller, a failure to reach the tool as a redacted tool error, the
/// client's missing capability (`-32021`) and an upstream task's failure as
/// protocol errors.
pub(crate) async fn call_checked(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    tenant: &str,
    origin: &CallOrigin,
    tool: ViewTool<'_>,
    sent: Value,
    options: CallOptions,
) -> Result<Result<CallToolResult, ErrorData>, ArgumentErrors> {
    let mut call = view.prepare_call(tenant, tool, &sent)?;
    call.origin = origin.clone();
    let outcome = dispatch.call_tool(call, options).await;
    // Redaction keeps what the caller sent (an absent object is `{}`).
    let args_value = if sent.is_null() { json!({}) } else { sent };
    let succeeded = matches!(&outcome, Ok(r) if r.is_error != Some(true));
    view.record_call(tenant, tool, succeeded);
    Ok(Ok(match outcome {
        Ok(result) if result.is_error == Some(true) => redact_error_result(result, &args_value),
        Ok(result) => result,
        Err(UpstreamError::Remote {
            code,
            message,
            data,
            ..
        }) if code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.0 => {
            return Ok(Err(ErrorData::new(
                ErrorCode(code),
                redact_for_caller(&message, &args_value),
                data.map(|d| *d),
            )));
        }
        // The upstream ran the call as a task that failed: a protocol-level
        // failure, which a task of this edge reports as `failed` too.
        Err(UpstreamError::TaskFailed { code, message, .. }) => {
            return Ok(Err(ErrorData::new(
                ErrorCode(code),
                redact_for_caller(&message, &args_value),
                None,
            )));
        }
        Err(e) => {
            tracing::warn!(tool = %tool.tool.exposed_name, "call failed: {e}");
            tool_error(
                "upstream_error",
                redact_for_caller(&e.to_string(), &args_value),
                json!({"tool": tool.tool.exposed_name}),
            )
        }
    }))
}
