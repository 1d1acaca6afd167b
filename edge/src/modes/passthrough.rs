//! Passthrough: every tool of the view under its namespaced name.

use rmcp::model::Tool;
use serde_json::{Value, json};

use quiver_view::view::ToolView;

/// The view's tools as MCP tool definitions.
pub fn list(view: &ToolView) -> Vec<Tool> {
    view.iter()
        .filter_map(|t| {
            let mut value = serde_json::to_value(&*t.tool.def).ok()?;
            let obj = value.as_object_mut()?;
            obj.insert("name".into(), Value::String(t.tool.exposed_name.clone()));
            if obj.get("description").is_some_and(|d| d.as_str() == Some("")) {
                obj.remove("description");
            }
            if !obj.get("inputSchema").is_some_and(Value::is_object) {
                obj.insert("inputSchema".into(), json!({"type": "object"}));
            }
            match serde_json::from_value::<Tool>(value) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    tracing::warn!(tool = %t.tool.exposed_name, "tool definition not representable: {e}");
                    None
                }
            }
        })
        .collect()
}

/// Instructions sent at initialize.
pub fn instructions(view: &ToolView) -> String {
    format!(
        "Tools from {} servers, named <server>__<tool>.",
        view.servers().count()
    )
}
