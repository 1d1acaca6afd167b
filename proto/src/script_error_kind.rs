//! The kinds of script failure: what a script execution's error says
//! (`quiver_contract::ScriptError`) and what its audit record's outcome
//! names ([`crate::audit::AuditOutcome::Script`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kinds of script failure. Serialized (and shown to models as
/// `script_<kind>`) in snake case: `timeout`, `memory`, `tool_calls`, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
