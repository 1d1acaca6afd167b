//! [`FindingsReport`]: what screening found in each upstream's tools, held
//! back or served (`quiver ctl upstream findings`).

use quiver_proto::finding::Finding;
use serde::{Deserialize, Serialize};

/// [`super::AdminAnswer::UpstreamFindings`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingsReport {
    /// Tools with findings: held ones first, then served, each by upstream
    /// and tool.
    pub tools: Vec<ToolFindings>,
}

/// One tool's findings and what was done about them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFindings {
    /// Upstream id.
    pub upstream: String,
    /// Tool name on the upstream.
    pub tool: String,
    /// Held back, served below the hold level, or served by approval.
    pub status: FindingStatus,
    /// When a held definition was first held (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_since_ms: Option<u64>,
    /// The findings, highest severity first.
    pub findings: Vec<Finding>,
}

/// What became of a tool with findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingStatus {
    /// Served to no tenant until approved (`quiver ctl upstream approve ID --tool T`).
    Held,
    /// An operator approved this definition; served.
    Approved,
    /// Below its upstream's hold level; served with the findings reported.
    Served,
}

impl FindingStatus {
    /// The spelling in tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingStatus::Held => "held",
            FindingStatus::Approved => "approved",
            FindingStatus::Served => "served",
        }
    }
}
