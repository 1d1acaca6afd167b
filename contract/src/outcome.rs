//! How one script execution ended: its value or a typed [`ScriptError`], with
//! its console output. Worker, host, gRPC and edge all carry this one type.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The end of one execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptOutcome {
    /// The script's return value (JSON), when it succeeded.
    pub result: Option<Value>,
    /// Why it failed, when it did.
    pub error: Option<ScriptError>,
    /// Captured console output, in order.
    pub logs: Vec<String>,
    /// True when the result or the logs were cut to their limits.
    pub truncated: bool,
    /// The calls of tools that link an MCP App's view, with their results,
    /// when the request asked for them ([`crate::ExecuteRequest::keeping_app_views`]):
    /// what a host needs to render each view. At most [`MAX_APP_VIEWS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_views: Vec<AppView>,
}

/// The most app views one execution keeps.
pub const MAX_APP_VIEWS: usize = 8;

/// The most bytes of one kept call's result (JSON); a larger one is not kept.
pub const MAX_APP_VIEW_RESULT_BYTES: usize = 256 * 1024;

/// One call a script made of a tool that links an MCP App's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppView {
    /// The tool's upstream.
    pub server: String,
    /// The tool's exposed name.
    pub tool: String,
    /// The view's `ui://` resource.
    pub uri: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The call's `CallToolResult`, as JSON.
    pub result: Value,
}

/// Why a script failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptError {
    /// What kind of failure.
    pub kind: ScriptErrorKind,
    /// Message (already free of host paths).
    pub message: String,
    /// Line in the script, when known.
    pub line: Option<u32>,
}

impl ScriptError {
    /// A failure of `kind` with `message`, at `line` when known.
    pub fn new(
        kind: ScriptErrorKind,
        message: impl Into<String>,
        line: Option<u32>,
    ) -> ScriptError {
        ScriptError {
            kind,
            message: message.into(),
            line,
        }
    }
}

pub use quiver_proto::script_error_kind::ScriptErrorKind;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_serialize_to_their_names() {
        for kind in ScriptErrorKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, Value::String(kind.as_str().into()));
            let back: ScriptErrorKind = serde_json::from_value(json).unwrap();
            assert_eq!(back, kind);
        }
    }
}
