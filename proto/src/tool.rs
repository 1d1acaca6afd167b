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
}

/// The schema used when a tool declares none.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}
