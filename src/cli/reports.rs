//! What an executor (and an edge, for task records) reports to the control
//! plane besides budget leases: the stash usage of its tenants, and the
//! audit records of tasks. Both go through the one transport the role holds
//! (`quiver_admin::AdminTransport`: the node in process for `quiver dev`,
//! the admin API otherwise).

use std::sync::Arc;

use quiver_control_plane::admin::AdminTransport;
use quiver_executor::{
    metering::{BudgetReport, Leases, REPORT_EVERY},
    stash::StashStore,
};

/// How long a tenant's unchanged stash usage goes unreported, at most.
const STASH_REPORT_AGAIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Reports what this executor holds of each tenant's stash when it changes
/// (and every [`STASH_REPORT_AGAIN`]), with a lease of nothing, while
/// `stash` lives.
pub(crate) fn report_stash(stash: Arc<StashStore>, leases: Leases) {
    let weak = Arc::downgrade(&stash);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REPORT_EVERY);
        loop {
            tick.tick().await;
            let Some(stash) = weak.upgrade() else { return };
            for (tenant, usage) in stash.usage_changes(STASH_REPORT_AGAIN) {
                let report = BudgetReport {
                    tenant: tenant.clone(),
                    want: 0.0,
                    spent: 0.0,
                    calls: 0,
                    give_back: 0.0,
                    stash: Some(usage),
                };
                if let Err(e) = leases.lease(report).await {
                    tracing::debug!(%tenant, "reporting stash usage failed: {e}");
                }
            }
        }
    });
}

/// The edge's task audit: records of tasks starting and ending, shipped to
/// `control_plane`'s audit log as node `name`.
pub(crate) fn task_audit(
    name: &str,
    control_plane: Arc<dyn AdminTransport>,
) -> quiver_edge::tasks::TaskAudit {
    let auditor = quiver_executor::audit::Auditor::new(name, Some(control_plane));
    Arc::new(move |record| auditor.record(record))
}
