//! What an operator asks of the cluster's audit log: which records
//! ([`AuditQuery`]) and how long they are kept ([`AuditRetention`]).

use serde::{Deserialize, Serialize};

/// How long and how many records are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRetention {
    /// Records older than this many days are dropped.
    pub max_age_days: u32,
    /// At most this many records are kept (the oldest go first).
    pub max_records: u32,
}

impl Default for AuditRetention {
    fn default() -> Self {
        AuditRetention {
            max_age_days: 30,
            max_records: 100_000,
        }
    }
}

/// Which records a query wants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditQuery {
    /// Only this tenant's.
    #[serde(default)]
    pub tenant: Option<String>,
    /// Only those at or after this time (ms since the epoch).
    #[serde(default)]
    pub since_ms: Option<u64>,
    /// At most this many, the newest (default 1,000).
    #[serde(default)]
    pub limit: Option<u32>,
}
