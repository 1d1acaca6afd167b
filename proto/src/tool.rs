//! A tool definition as an upstream MCP server published it, and its identity.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Identity of a tool: the upstream server's id and the tool's name on that server.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ToolId {
    /// Upstream server id (as configured, e.g. `github`).
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
}

/// One tool definition: the parts of an MCP `Tool` that reach a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDef {
    /// The tool's name on its server.
    pub name: String,
    /// Human-readable title, if the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description (may be empty).
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (an object schema; `{"type":"object"}` if absent).
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, …), passed through untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// The tool's `_meta`, for hosts rather than models (an MCP App's
    /// `ui.resourceUri`, whose `ui://` resource passes through unchanged),
    /// passed through untouched. Screening does not read it: no host puts it
    /// in a model's context.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ToolDef {
    /// Who may call it, from its `_meta.ui.visibility` (MCP Apps).
    pub fn visibility(&self) -> crate::apps::Visibility {
        crate::apps::Visibility::of(self.meta.as_ref())
    }

    /// Whether only an MCP App's view may see it (its `_meta.ui.visibility`
    /// names `app` and not `model`): no model-facing surface shows it, and
    /// only a view's call reaches it.
    pub fn app_only(&self) -> bool {
        let visibility = self.visibility();
        visibility.app && !visibility.model
    }

    /// The `ui://` resource of the MCP App view that renders its results.
    pub fn app_resource(&self) -> Option<&str> {
        crate::apps::resource_uri(self.meta.as_ref())
    }
}

/// The schema used when a tool declares none.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_meta(meta: Option<Value>) -> ToolDef {
        ToolDef {
            name: "t".into(),
            title: None,
            description: String::new(),
            input_schema: empty_object_schema(),
            output_schema: None,
            annotations: None,
            meta,
        }
    }

    #[test]
    fn only_a_visibility_of_app_alone_hides_a_tool_from_the_model() {
        let visible = |v: Value| with_meta(Some(serde_json::json!({"ui": {"visibility": v}})));
        assert!(visible(serde_json::json!(["app"])).app_only());
        assert!(!visible(serde_json::json!(["model", "app"])).app_only());
        assert!(!visible(serde_json::json!(["model"])).app_only());
        assert!(!visible(serde_json::json!([])).app_only());
        assert!(!visible(serde_json::json!("app")).app_only());
        assert!(!with_meta(Some(serde_json::json!({"ui": {"resourceUri": "ui://x"}}))).app_only());
        assert!(!with_meta(None).app_only());
    }

    #[test]
    fn meta_travels_as_underscore_meta_and_only_when_present() {
        let json = serde_json::json!({"name": "t", "inputSchema": {"type": "object"}, "_meta": {"ui": {"resourceUri": "ui://a/b"}}});
        let def: ToolDef = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(def.meta.as_ref().unwrap()["ui"]["resourceUri"], "ui://a/b");
        assert_eq!(serde_json::to_value(&def).unwrap()["_meta"], json["_meta"]);
        let plain = serde_json::to_value(with_meta(None)).unwrap();
        assert!(plain.get("_meta").is_none(), "{plain}");
    }
}
