//! The three ways the edge presents a tool view.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// What `tools/list` shows a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every tool of the view, namespaced, calls forwarded.
    Passthrough,
    /// `search_tools` + `call_tool`.
    Search,
    /// `list`, `search`, `describe` (and `execute` once the executor runs scripts).
    #[default]
    Code,
}

impl Mode {
    /// All modes, in path order.
    pub const ALL: [Mode; 3] = [Mode::Passthrough, Mode::Search, Mode::Code];

    /// The lowercase name used in paths and config.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Passthrough => "passthrough",
            Mode::Search => "search",
            Mode::Code => "code",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "passthrough" => Ok(Mode::Passthrough),
            "search" => Ok(Mode::Search),
            "code" => Ok(Mode::Code),
            other => Err(format!(
                "unknown mode `{other}`: expected passthrough, search or code"
            )),
        }
    }
}
