//! An executor's link to the control plane for what it reports and asks:
//! budget leases (the replicated ledger), audit records (the replicated
//! audit log) and renewals of tenants' OAuth tokens, reached in-process
//! (`quiver dev`) or over the admin API (`quiver executor --control-plane`).

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_control_plane::{
    ControlPlaneNode,
    admin::{AdminAnswer, AdminRequest},
    client::AdminClient,
    raft::network::TlsMaterial,
    usage::LeaseRequest,
};
use quiver_edge::RelayError;
use quiver_executor::{
    audit::AuditShipper,
    control_plane_error::ControlPlaneError,
    metering::{BudgetReport, LeaseSource, REPORT_EVERY},
    stash::StashStore,
};
use quiver_proto::{audit::AuditRecord, tenant::GrantKey};

use super::relay;

/// Leases from a control-plane node in this process (which forwards to the
/// leader if it is not one).
pub(crate) struct NodeLeases {
    pub(crate) node: Arc<ControlPlaneNode>,
    pub(crate) name: String,
}

/// Leases over the admin API from whichever node leads.
pub(crate) struct ClientLeases {
    client: tokio::sync::Mutex<AdminClient>,
    /// For OAuth grants (renewals, relayed callbacks), which wait on an
    /// authorization server: leases and audit records never wait behind them.
    grants: tokio::sync::Mutex<AdminClient>,
    name: String,
    /// No control plane given (a standalone executor): audit records are
    /// only logged, and budgets cannot be leased.
    standalone: bool,
}

impl ClientLeases {
    pub(crate) fn new(endpoints: Vec<String>, tls: Option<TlsMaterial>, name: String) -> Self {
        ClientLeases {
            standalone: endpoints.is_empty(),
            grants: tokio::sync::Mutex::new(AdminClient::new(endpoints.clone(), tls.clone())),
            client: tokio::sync::Mutex::new(AdminClient::new(endpoints, tls)),
            name,
        }
    }
}

/// How often a tenant's unchanged stash holding is reported again, so the
/// control plane can tell a live executor's figures from a gone one's.
const STASH_REPORT_AGAIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Reports each tenant's stash holding on this executor to the control
/// plane through `link` when it changes (checked every [`REPORT_EVERY`]),
/// while `stash` lives; `quiver ctl tenant usage` shows it.
pub(crate) fn report_stash(stash: Arc<StashStore>, link: Arc<dyn LeaseSource>) {
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
                if let Err(e) = link.lease(report).await {
                    tracing::debug!(%tenant, "reporting stash usage failed: {e}");
                }
            }
        }
    });
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
            stash: report.stash,
        },
    }
}

fn granted(answer: AdminAnswer) -> Result<f64, ControlPlaneError> {
    match answer {
        AdminAnswer::BudgetLease(g) => Ok(g.granted),
        other => Err(ControlPlaneError::UnexpectedAnswer {
            request: "a budget lease",
            answer: format!("{:?}", other.to_json()),
        }),
    }
}

impl LeaseSource for NodeLeases {
    fn lease(&self, report: BudgetReport) -> BoxFuture<'_, Result<f64, ControlPlaneError>> {
        Box::pin(async move {
            let answer = self
                .node
                .admin(request(report, &self.name))
                .await
                .map_err(ControlPlaneError::request)?;
            granted(answer)
        })
    }
}

/// The answer to an audit append, as a result.
fn appended(answer: AdminAnswer) -> Result<(), ControlPlaneError> {
    match answer {
        AdminAnswer::AuditAppend(_) => Ok(()),
        other => Err(ControlPlaneError::UnexpectedAnswer {
            request: "an audit append",
            answer: format!("{:?}", other.to_json()),
        }),
    }
}

impl AuditShipper for NodeLeases {
    fn ship(&self, records: Vec<AuditRecord>) -> BoxFuture<'_, Result<(), ControlPlaneError>> {
        Box::pin(async move {
            let answer = self
                .node
                .admin(AdminRequest::AuditAppend { records })
                .await
                .map_err(ControlPlaneError::request)?;
            appended(answer)
        })
    }
}

impl AuditShipper for ClientLeases {
    fn ship(&self, records: Vec<AuditRecord>) -> BoxFuture<'_, Result<(), ControlPlaneError>> {
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
                .map_err(ControlPlaneError::request)?;
            appended(answer)
        })
    }
}

/// The answer to a relayed OAuth callback: the grant it made.
fn grant_kept(answer: AdminAnswer) -> Result<GrantKey, RelayError> {
    match answer {
        AdminAnswer::UpstreamAuthorized(kept) => Ok(GrantKey {
            tenant: kept.tenant,
            upstream: kept.upstream,
        }),
        other => Err(relay::unexpected("OAuth callback", &other)),
    }
}

impl quiver_edge::oauth_callback::GrantCallback for NodeLeases {
    fn complete(&self, url: String) -> BoxFuture<'_, Result<GrantKey, RelayError>> {
        Box::pin(async move {
            let url = quiver_upstream::SecretValue::new(url);
            let answer = self
                .node
                .admin(AdminRequest::UpstreamAuthorized { url })
                .await
                .map_err(relay::from_admin)?;
            grant_kept(answer)
        })
    }
}

impl quiver_edge::oauth_callback::GrantCallback for ClientLeases {
    fn complete(&self, url: String) -> BoxFuture<'_, Result<GrantKey, RelayError>> {
        Box::pin(async move {
            let url = quiver_upstream::SecretValue::new(url);
            let request = AdminRequest::UpstreamAuthorized { url };
            let answer = self.grants.lock().await.call(&request).await;
            grant_kept(answer.map_err(relay::from_client)?)
        })
    }
}

impl quiver_upstream::GrantRefresher for ClientLeases {
    fn refresh<'a>(
        &'a self,
        tenant: &'a str,
        upstream: &'a str,
    ) -> BoxFuture<'a, Result<(), quiver_upstream::RenewalError>> {
        Box::pin(async move {
            let request = AdminRequest::GrantRenew {
                upstream: upstream.to_string(),
                tenant: tenant.to_string(),
            };
            let failed = quiver_upstream::RenewalError::ControlPlane;
            match self.grants.lock().await.call(&request).await {
                Ok(AdminAnswer::GrantRenew(_)) => Ok(()),
                Ok(other) => Err(failed(
                    format!("unexpected answer to a renewal: {:?}", other.to_json()).into(),
                )),
                Err(e) => Err(failed(Box::new(e))),
            }
        })
    }
}

impl LeaseSource for ClientLeases {
    fn lease(&self, report: BudgetReport) -> BoxFuture<'_, Result<f64, ControlPlaneError>> {
        Box::pin(async move {
            let answer = self
                .client
                .lock()
                .await
                .call(&request(report, &self.name))
                .await
                .map_err(ControlPlaneError::request)?;
            granted(answer)
        })
    }
}

/// Gives `gateway`'s task records (a call made a task, a task ended) to an
/// auditor of node `name` that ships them through `shipper` to the cluster's
/// audit log, as executors ship theirs.
pub(crate) fn task_audit(
    name: &str,
    shipper: Arc<dyn AuditShipper>,
) -> quiver_edge::tasks::TaskAudit {
    let auditor = quiver_executor::audit::Auditor::new(name, Some(shipper));
    Arc::new(move |record| auditor.record(record))
}
