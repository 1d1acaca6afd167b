//! An executor's link to the control plane for what it reports: budget
//! leases (the replicated ledger) and audit records (the replicated audit
//! log), reached in-process (`quiver dev`) or over the admin API
//! (`quiver executor --control-plane`).

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_control_plane::{
    ControlPlaneNode,
    admin::{AdminAnswer, AdminRequest},
    client::AdminClient,
    raft::network::TlsMaterial,
    usage::LeaseRequest,
};
use quiver_executor::{
    audit::AuditShipper,
    metering::{BudgetReport, LeaseSource},
};
use quiver_proto::audit::AuditRecord;

/// Leases from a control-plane node in this process (which forwards to the
/// leader if it is not one).
pub(crate) struct NodeLeases {
    pub(crate) node: Arc<ControlPlaneNode>,
    pub(crate) name: String,
}

/// Leases over the admin API from whichever node leads.
pub(crate) struct ClientLeases {
    client: tokio::sync::Mutex<AdminClient>,
    name: String,
    /// No control plane given (a standalone executor): audit records are
    /// only logged, and budgets cannot be leased.
    standalone: bool,
}

impl ClientLeases {
    pub(crate) fn new(endpoints: Vec<String>, tls: Option<TlsMaterial>, name: String) -> Self {
        ClientLeases {
            standalone: endpoints.is_empty(),
            client: tokio::sync::Mutex::new(AdminClient::new(endpoints, tls)),
            name,
        }
    }
}

fn request(report: BudgetReport, node: &str) -> AdminRequest {
    AdminRequest::BudgetLease {
        lease: LeaseRequest {
            tenant: report.tenant,
            node: node.to_string(),
            want: report.want,
            spent: report.spent,
            calls: report.calls,
            give_back: report.give_back,
        },
    }
}

fn granted(answer: AdminAnswer) -> Result<f64, String> {
    match answer {
        AdminAnswer::BudgetLease(g) => Ok(g.granted),
        other => Err(format!(
            "unexpected answer to a budget lease: {:?}",
            other.to_json()
        )),
    }
}

impl LeaseSource for NodeLeases {
    fn lease(&self, report: BudgetReport) -> BoxFuture<'_, Result<f64, String>> {
        Box::pin(async move {
            let answer = self
                .node
                .admin(request(report, &self.name))
                .await
                .map_err(|e| e.to_string())?;
            granted(answer)
        })
    }
}

/// The answer to an audit append, as a result.
fn appended(answer: AdminAnswer) -> Result<(), String> {
    match answer {
        AdminAnswer::AuditAppend(_) => Ok(()),
        other => Err(format!(
            "unexpected answer to an audit append: {:?}",
            other.to_json()
        )),
    }
}

impl AuditShipper for NodeLeases {
    fn ship(&self, records: Vec<AuditRecord>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let answer = self
                .node
                .admin(AdminRequest::AuditAppend { records })
                .await
                .map_err(|e| e.to_string())?;
            appended(answer)
        })
    }
}

impl AuditShipper for ClientLeases {
    fn ship(&self, records: Vec<AuditRecord>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if self.standalone {
                return Ok(());
            }
            let answer = self
                .client
                .lock()
                .await
                .call(&AdminRequest::AuditAppend { records })
                .await
                .map_err(|e| e.to_string())?;
            appended(answer)
        })
    }
}

impl LeaseSource for ClientLeases {
    fn lease(&self, report: BudgetReport) -> BoxFuture<'_, Result<f64, String>> {
        Box::pin(async move {
            let answer = self
                .client
                .lock()
                .await
                .call(&request(report, &self.name))
                .await
                .map_err(|e| e.to_string())?;
            granted(answer)
        })
    }
}
