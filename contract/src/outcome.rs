//! How one script execution ended: its value or a typed [`ScriptError`], with
//! its console output. Worker, host, gRPC and edge all carry this one type.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The end of one execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptOutcome {
    /// The script's return value (JSON), when it succeeded.
    pub result: Option<Value>,
    /// Why it failed, when it did.
    pub error: Option<ScriptError>,
    /// Captured console output, in order.
    pub logs: Vec<String>,
    /// True when the result or the logs were cut to their limits.
    pub truncated: bool,
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

/// The kinds of script failure. Serialized (and shown to models as
/// `script_<kind>`) in snake case: `timeout`, `memory`, `tool_calls`, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ScriptErrorKind {
    /// Over its wall-time limit.
    Timeout,
    /// Over its heap limit.
    Memory,
    /// Its result was over the output limit.
    Output,
    /// Over its tool-call budget.
    ToolCalls,
    /// Over its budget of host calls of any kind.
    HostCalls,
    /// It threw (an uncaught exception).
    Runtime,
    /// Static validation refused it; nothing ran.
    Rejected,
    /// The sandbox failed, not the script.
    Internal,
}

impl ScriptErrorKind {
    /// Every kind.
    pub const ALL: [ScriptErrorKind; 8] = [
        ScriptErrorKind::Timeout,
        ScriptErrorKind::Memory,
        ScriptErrorKind::Output,
        ScriptErrorKind::ToolCalls,
        ScriptErrorKind::HostCalls,
        ScriptErrorKind::Runtime,
        ScriptErrorKind::Rejected,
        ScriptErrorKind::Internal,
    ];

    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptErrorKind::Timeout => "timeout",
            ScriptErrorKind::Memory => "memory",
            ScriptErrorKind::Output => "output",
            ScriptErrorKind::ToolCalls => "tool_calls",
            ScriptErrorKind::HostCalls => "host_calls",
            ScriptErrorKind::Runtime => "runtime",
            ScriptErrorKind::Rejected => "rejected",
            ScriptErrorKind::Internal => "internal",
        }
    }

    /// Whether the worker that ran it may be in doubt (it ran out of time or
    /// memory, or the sandbox itself failed), so it must not be reused.
    pub fn leaves_worker_in_doubt(self) -> bool {
        matches!(
            self,
            ScriptErrorKind::Timeout | ScriptErrorKind::Memory | ScriptErrorKind::Internal
        )
    }
}

impl fmt::Display for ScriptErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ScriptErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ScriptErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

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
