//! Passthrough: every tool of the view under its namespaced name, calls
//! forwarded as they come. (Resources, prompts and completion are forwarded
//! by the session through `forwarded`.)
#![allow(deprecated)] // logging is current in the protocol versions served here

use futures::future::BoxFuture;
use quiver_view::{
    ToolView,
    suggest::{closest, unknown_tool_message},
};
use rmcp::{
    ErrorData,
    model::{CallToolResult, ServerCapabilities, Tool},
};
use serde_json::{Value, json};

use super::{
    forward::forward_by_name,
    handler::{Backends, ModeHandler, ToolRequest},
};

/// Passthrough mode.
pub struct PassthroughMode {
    backends: Backends,
}

impl PassthroughMode {
    /// Passthrough over `backends`.
    pub fn new(backends: Backends) -> PassthroughMode {
        PassthroughMode { backends }
    }
}

/// The view's tools as MCP tool definitions: every tool of the manifest is
/// converted once per manifest version (shared by every view), and each
/// `tools/list` copies the visible ones (a `Tool` shares its schema). A tool
/// only an MCP App's view may call is not listed (the view lacks it too; a
/// view calls it by its server's name, see `forward::is_app_call`).
pub fn list(view: &ToolView) -> Vec<Tool> {
    let every = view.index().shared(|index| {
        PassthroughList(
            index
                .manifest()
                .tools
                .iter()
                .map(|tool| (!tool.def.app_only()).then(|| listed(tool)).flatten())
                .collect(),
        )
    });
    view.tools()
        .iter()
        .filter_map(|t| every.0.get(t).cloned().flatten())
        .collect()
}

/// Every manifest tool as passthrough lists it (`None`: not representable).
struct PassthroughList(Vec<Option<Tool>>);

/// The tool `name` as passthrough lists it, when the view has it.
pub fn listed_tool(view: &ToolView, name: &str) -> Option<Tool> {
    view.by_exposed(name).and_then(|t| listed(t.tool))
}

/// One tool as passthrough lists it: its definition under its exposed name.
fn listed(tool: &quiver_proto::ManifestTool) -> Option<Tool> {
    let mut value = serde_json::to_value(&*tool.def).ok()?;
    let obj = value.as_object_mut()?;
    obj.insert("name".into(), Value::String(tool.exposed_name.clone()));
    if obj
        .get("description")
        .is_some_and(|d| d.as_str() == Some(""))
    {
        obj.remove("description");
    }
    if !obj.get("inputSchema").is_some_and(Value::is_object) {
        obj.insert("inputSchema".into(), json!({"type": "object"}));
    }
    match serde_json::from_value::<Tool>(value) {
        Ok(tool) => Some(tool),
        Err(e) => {
            tracing::warn!(tool = %tool.exposed_name, "tool definition not representable: {e}");
            None
        }
    }
}

impl ModeHandler for PassthroughMode {
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_completions()
            .enable_tasks()
            .build()
    }

    fn instructions(&self, view: &ToolView) -> String {
        format!(
            "Tools from {} servers, named <server>__<tool>.",
            view.servers().count()
        )
    }

    fn tools(&self, view: &ToolView) -> Vec<Tool> {
        list(view)
    }

    fn offers(&self, view: &ToolView, name: &str) -> bool {
        view.by_exposed(name).is_some()
    }

    fn call<'a>(
        &'a self,
        request: ToolRequest<'a>,
    ) -> BoxFuture<'a, Result<CallToolResult, ErrorData>> {
        Box::pin(async move {
            let (view, name) = (request.view.clone(), request.name);
            match forward_by_name(self.backends.dispatch.as_ref(), request).await {
                Some(answer) => answer,
                None => {
                    let suggestions = closest(name, view.exposed_names(), 3);
                    Err(ErrorData::invalid_params(
                        unknown_tool_message(
                            name,
                            &suggestions,
                            "call tools/list for the available names",
                        ),
                        Some(json!({"suggestions": suggestions})),
                    ))
                }
            }
        })
    }
}
