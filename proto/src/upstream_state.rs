//! Where an upstream's connection stands, as the executors report it and
//! operators read it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where an upstream's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamState {
    /// Never tried: upstreams connect on first use.
    Idle,
    /// A connection attempt is under way.
    Connecting,
    /// Connected and initialised.
    Connected,
    /// The last attempt failed, or the connection ended.
    Down,
}

impl UpstreamState {
    /// `idle`, `connecting`, `connected` or `down`, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamState::Idle => "idle",
            UpstreamState::Connecting => "connecting",
            UpstreamState::Connected => "connected",
            UpstreamState::Down => "down",
        }
    }
}

impl fmt::Display for UpstreamState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
