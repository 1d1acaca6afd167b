//! The three ways an edge presents a tool view; a tenant names one.

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

/// A name that is not a mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`: expected passthrough, search or code")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "passthrough" => Ok(Mode::Passthrough),
            "search" => Ok(Mode::Search),
            "code" => Ok(Mode::Code),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}
