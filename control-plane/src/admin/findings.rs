//! [`FindingsReport`]: what screening found in each upstream's tools, held
//! back or served (`quiver ctl upstream findings`).

use quiver_proto::finding::Finding;
use serde::{Deserialize, Serialize};

use crate::state::{ControlState, definition_hash};

/// [`super::AdminAnswer::UpstreamFindings`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingsReport {
    /// Tools with findings: held ones first, then served, each by upstream
    /// and tool.
    pub tools: Vec<ToolFindings>,
}

impl FindingsReport {
    /// What screening found in the upstreams of `s` (only `id`'s when given):
    /// held tools first, then served ones, each by upstream and tool.
    pub(crate) fn of(s: &ControlState, id: Option<&str>) -> FindingsReport {
        let wanted = |u: &str| id.is_none_or(|i| i == u);
        let mut tools: Vec<ToolFindings> = s
            .held
            .iter()
            .filter(|(u, _)| wanted(u))
            .flat_map(|(u, held)| {
                held.iter().map(move |(name, h)| ToolFindings {
                    upstream: u.clone(),
                    tool: name.clone(),
                    status: FindingStatus::Held,
                    held_since_ms: Some(h.seen_ms),
                    findings: h.findings.clone(),
                })
            })
            .collect();
        for (u, entry) in s.catalogue.iter().filter(|(u, _)| wanted(u)) {
            for (name, findings) in &entry.findings {
                let approved = s.approved.get(u).and_then(|a| a.get(name));
                let current = entry.tools.iter().find(|t| &t.name == name);
                let status = match (approved, current) {
                    (Some(hash), Some(tool)) if *hash == definition_hash(tool) => {
                        FindingStatus::Approved
                    }
                    _ => FindingStatus::Served,
                };
                tools.push(ToolFindings {
                    upstream: u.clone(),
                    tool: name.clone(),
                    status,
                    held_since_ms: None,
                    findings: findings.clone(),
                });
            }
        }
        tools.sort_by(|a, b| {
            (a.status, &a.upstream, &a.tool).cmp(&(b.status, &b.upstream, &b.tool))
        });
        FindingsReport { tools }
    }
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
