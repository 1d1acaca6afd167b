//! The operator API (`quiver-admin`), served here: the control plane builds
//! the answers that read its replicated state.

pub use quiver_admin::*;

use crate::state::{ControlState, EventKind, definition_hash};

/// The drift events and quarantined changes of `s` (only `id`'s when given).
pub(crate) fn drift_report(s: &ControlState, id: Option<&str>) -> DriftReport {
    DriftReport {
        events: s
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Drift)
            .filter(|e| id.is_none() || e.upstream.as_deref() == id)
            .cloned()
            .collect(),
        pending: s
            .pending
            .iter()
            .filter(|(u, _)| id.is_none_or(|i| i == u.as_str()))
            .map(|(u, p)| (u.clone(), p.keys().cloned().collect()))
            .collect(),
    }
}

/// What screening found in the upstreams of `s` (only `id`'s when given):
/// held tools first, then served ones, each by upstream and tool.
pub(crate) fn findings_report(s: &ControlState, id: Option<&str>) -> FindingsReport {
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
    tools.sort_by(|a, b| (a.status, &a.upstream, &a.tool).cmp(&(b.status, &b.upstream, &b.tool)));
    FindingsReport { tools }
}
