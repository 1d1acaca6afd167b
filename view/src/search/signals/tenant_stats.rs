//! What operators are shown about a tenant's searches (`quiver ctl search
//! stats`), and the per-tool counts behind it.

use serde::{Deserialize, Serialize};

/// What happened to one tool for a tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCounts {
    /// Times shown in search results.
    pub shown: u32,
    /// Times described.
    pub described: u32,
    /// Calls that succeeded.
    pub succeeded: u32,
    /// Calls that failed.
    pub failed: u32,
    /// Last event, seconds since the epoch.
    pub at: u64,
}

/// What `quiver ctl search stats` shows for a tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantStats {
    /// The tenant.
    pub tenant: String,
    /// Queries that found nothing, most frequent first.
    pub zero_hit_queries: Vec<ZeroHitQuery>,
    /// Tools shown by searches but never called, most shown first.
    pub found_never_called: Vec<UncalledTool>,
    /// Query → tool associations held.
    pub associations: usize,
}

/// A query that found nothing, and how often it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroHitQuery {
    /// The query as sent (trimmed).
    pub query: String,
    /// Times asked.
    pub count: u32,
}

/// A tool searches showed that was never called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncalledTool {
    /// `server/tool`.
    pub tool: String,
    /// Times shown in search results.
    pub shown: u32,
}
