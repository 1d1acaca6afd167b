//! The in-memory fleet registry: which edges and executors report to this
//! control-plane node, and the manifest version and stub hash each holds.
//! Reports expire, so a node that stopped reporting drops out on its own.

use std::{
    collections::BTreeMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{
    admin::{FleetMember, ReportedReadiness},
    node_role::NodeRole,
    raft::NodeId,
};

/// Reports older than this are forgotten: a node that stopped reporting
/// (dead, or cut off) leaves the fleet, and edges stop routing to it, this
/// long after its last report ([`crate::watcher::REPORT_EVERY`] apart).
pub const REPORT_TTL: Duration = Duration::from_secs(4);

struct Report {
    role: NodeRole,
    manifest_version: u64,
    stub_hash: String,
    readiness: ReportedReadiness,
    at: Instant,
}

/// Reports received by this node.
pub struct FleetRegistry {
    this_node: NodeId,
    reports: Mutex<BTreeMap<String, Report>>,
}

impl FleetRegistry {
    /// An empty registry of control-plane node `this_node`.
    pub fn new(this_node: NodeId) -> FleetRegistry {
        FleetRegistry {
            this_node,
            reports: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records a report.
    pub fn report(
        &self,
        node: &str,
        role: NodeRole,
        manifest_version: u64,
        stub_hash: &str,
        readiness: ReportedReadiness,
    ) {
        let mut reports = self.reports.lock().unwrap_or_else(|p| p.into_inner());
        reports.insert(
            node.to_string(),
            Report {
                role,
                manifest_version,
                stub_hash: stub_hash.to_string(),
                readiness,
                at: Instant::now(),
            },
        );
    }

    /// Current, unexpired reports in node order.
    pub fn members(&self) -> Vec<FleetMember> {
        let mut reports = self.reports.lock().unwrap_or_else(|p| p.into_inner());
        reports.retain(|_, r| r.at.elapsed() < REPORT_TTL);
        reports
            .iter()
            .map(|(node, r)| FleetMember {
                node: node.clone(),
                role: r.role,
                manifest_version: r.manifest_version,
                stub_hash: r.stub_hash.clone(),
                age_ms: u64::try_from(r.at.elapsed().as_millis()).unwrap_or(u64::MAX),
                reported_to: self.this_node,
                readiness: r.readiness.clone(),
            })
            .collect()
    }
}
