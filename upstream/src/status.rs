//! What an upstream's health looks like from outside: its connection state,
//! last error, failure count and breaker state, as `quiver dev` and the
//! control plane show them. Only [`crate::Upstream`] changes it.

use std::time::SystemTime;

use serde::Serialize;

use crate::breaker::BreakerState;
pub use quiver_proto::upstream_state::UpstreamState;

/// Health of an upstream as last observed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UpstreamStatus {
    /// Upstream id.
    pub id: String,
    /// Where its connection stands.
    pub state: UpstreamState,
    /// The last error, if the last attempt failed.
    pub last_error: Option<String>,
    /// Consecutive failed connection attempts.
    pub failures: u32,
    /// When the state last changed (seconds since the Unix epoch).
    pub since: u64,
    /// Tools listed at the last successful refresh.
    pub tools: usize,
    /// Whether calls get through its circuit breaker.
    pub breaker: BreakerState,
    /// The MCP revision the current (or last) connection speaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// Seconds since the Unix epoch (status changes are stamped with it).
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) use quiver_proto::clock::now_ms;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_serialises_to_the_strings_operators_know() {
        let status = UpstreamStatus {
            id: "github".into(),
            state: UpstreamState::Connected,
            last_error: None,
            failures: 0,
            since: 7,
            tools: 3,
            breaker: BreakerState::HalfOpen,
            protocol: Some("2026-07-28".into()),
        };
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["state"], "connected");
        assert_eq!(json["breaker"], "half-open");
        for state in [
            UpstreamState::Idle,
            UpstreamState::Connecting,
            UpstreamState::Connected,
            UpstreamState::Down,
        ] {
            assert_eq!(serde_json::to_value(state).unwrap(), state.to_string());
        }
    }
}
