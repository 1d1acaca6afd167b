//! [`AdminTransport`]: how any part of Quiver reaches the control plane.
//! A control-plane node answers in process; `RemoteAdmin` (the admin
//! client's transport) carries the same request over gRPC to the leader. The operations other parts ask for
//! are methods on `dyn AdminTransport`, each sending its request and
//! checking that the answer is the one asked for, here and nowhere else.

use std::{future::Future, pin::Pin};

use quiver_proto::{audit::AuditRecord, secret_value::SecretValue, tenant::GrantKey};

use crate::{
    AdminAnswer, AdminError, AdminRequest, AuthorizationLink, ClusterStatus, Committed,
    DriftReport, FindingsReport, GrantSummary, IssuedKey, KeyRequester, PublicTenant,
    UpstreamSummary, UsageReport,
    audit::AuditQuery,
    outcome::OAuthGrantChanged,
    usage::{LeaseGranted, LeaseRequest},
};

/// The answer to one request, on its way.
pub type AdminFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AdminAnswer, AdminError>> + Send + 'a>>;

/// Sends operator requests to the control plane and returns their typed
/// answers. Implemented by the control-plane node (in process), its
/// operator as the node's own upstreams hold it, and `RemoteAdmin` (over
/// gRPC, following the leader).
pub trait AdminTransport: Send + Sync {
    /// Sends `request`; its answer or why there is none.
    fn call(&self, request: AdminRequest) -> AdminFuture<'_>;
}

/// One method per operation: `$name(args) -> Variant(Type) = request`.
macro_rules! operations {
    ($( $(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) -> $variant:ident ( $out:ty ) = $request:expr ; )*) => {
        impl dyn AdminTransport + '_ {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, AdminError> {
                    match self.call($request).await? {
                        AdminAnswer::$variant(answer) => Ok(answer),
                        other => Err(AdminError::unexpected(stringify!($variant), &other)),
                    }
                }
            )*
        }
    };
}

operations! {
    /// Reports an executor's spending for a tenant and leases allowance.
    lease(lease: LeaseRequest) -> BudgetLease(LeaseGranted) = AdminRequest::BudgetLease { lease };
    /// Appends audit records to the cluster's log.
    append_audit(records: Vec<AuditRecord>) -> AuditAppend(Committed) = AdminRequest::AuditAppend { records };
    /// Renews a tenant's access token for an upstream (its token was refused).
    renew_grant(key: GrantKey) -> GrantRenew(Committed) = AdminRequest::GrantRenew { upstream: key.upstream, tenant: key.tenant };
    /// Completes an OAuth grant from the callback URL the person was sent back to.
    complete_authorization(url: SecretValue) -> UpstreamAuthorized(OAuthGrantChanged) = AdminRequest::UpstreamAuthorized { url };
    /// Starts a person's OAuth grant of `upstream` for `tenant`: the link they open.
    authorize(upstream: String, tenant: String, scopes: Vec<String>) -> UpstreamAuthorize(AuthorizationLink) = AdminRequest::UpstreamAuthorize { upstream, tenant, scopes };
    /// Issues an API key for `tenant`.
    issue_key(tenant: String, requester: KeyRequester) -> KeyIssue(IssuedKey) = AdminRequest::KeyIssue { tenant, requester };
    /// Revokes one of `tenant`'s API keys.
    revoke_key(tenant: String, key_id: String, requester: KeyRequester) -> KeyRevoke(Committed) = AdminRequest::KeyRevoke { tenant, key_id, requester };
    /// A tenant's budget and what its executors leased and spent.
    tenant_usage(id: String) -> TenantUsage(UsageReport) = AdminRequest::TenantUsage { id };
    /// Audit records matching `query`.
    audit(query: AuditQuery) -> Audit(Vec<AuditRecord>) = AdminRequest::Audit { query };
    /// What screening found (one upstream's tools, or all).
    findings(id: Option<String>) -> UpstreamFindings(FindingsReport) = AdminRequest::UpstreamFindings { id };
    /// Every tenant, without key hashes.
    tenants() -> TenantList(Vec<PublicTenant>) = AdminRequest::TenantList;
    /// Every upstream.
    upstreams() -> UpstreamList(Vec<UpstreamSummary>) = AdminRequest::UpstreamList;
    /// Drift events and quarantined changes (one upstream's, or all).
    drift(id: Option<String>) -> UpstreamDrift(DriftReport) = AdminRequest::UpstreamDrift { id };
    /// Accepts quarantined changes or a held tool.
    approve(id: String, tool: Option<String>) -> UpstreamApprove(Committed) = AdminRequest::UpstreamApprove { id, tool };
    /// Leader, term and members.
    cluster_status() -> ClusterStatus(ClusterStatus) = AdminRequest::ClusterStatus;
    /// The OAuth grants kept (one tenant's, or all).
    grants(tenant: Option<String>) -> GrantList(Vec<GrantSummary>) = AdminRequest::GrantList { tenant };
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::outcome::{CommandResult, OAuthGrantChanged};

    /// Answers every request with one fixed answer and keeps what it was asked
    /// (a stand-in for the node: what is tested is the checking here).
    struct Fixed(AdminAnswer, Mutex<Vec<AdminRequest>>);

    impl AdminTransport for Fixed {
        fn call(&self, request: AdminRequest) -> AdminFuture<'_> {
            self.1.lock().unwrap().push(request);
            let answer = self.0.clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
                return output;
            }
        }
    }

    #[test]
    fn an_operation_sends_its_request_and_returns_its_answer() {
        let kept = OAuthGrantChanged {
            tenant: "acme".into(),
            upstream: "github".into(),
        };
        let fixed = Fixed(
            AdminAnswer::UpstreamAuthorized(kept.clone()),
            Mutex::default(),
        );
        let transport: &dyn AdminTransport = &fixed;
        let url = SecretValue::new("http://x/oauth/callback?code=c".into());
        assert_eq!(
            block_on(transport.complete_authorization(url.clone())).unwrap(),
            kept
        );
        assert_eq!(
            *fixed.1.lock().unwrap(),
            [AdminRequest::UpstreamAuthorized { url }]
        );
    }

    #[test]
    fn an_answer_of_another_kind_is_an_error_naming_both() {
        let committed = Committed {
            result: CommandResult::Nothing,
            manifest_version: 1,
            log_index: 2,
        };
        let fixed = Fixed(AdminAnswer::AuditAppend(committed), Mutex::default());
        let transport: &dyn AdminTransport = &fixed;
        let error = block_on(transport.tenants()).unwrap_err();
        assert!(
            matches!(&error, AdminError::Unexpected { asked: "TenantList", got } if got == "AuditAppend"),
            "{error:?}"
        );
    }
}
