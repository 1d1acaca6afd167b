//! Operator requests: what `quiver ctl` (and an executor, for budget leases
//! and audit records) asks the control plane. They travel as the typed
//! `quiver.v1.AdminRequest` (see [`super::wire`]).

use quiver_proto::audit::AuditRecord;
use quiver_proto::upstream_config::UpstreamConfig;

use quiver_proto::secret_value::SecretValue;

use crate::{
    NodeId,
    audit::{AuditQuery, AuditRetention},
    tenant::TenantPatch,
    usage::LeaseRequest,
};

/// An operator request.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminRequest {
    /// Makes the receiving node a one-node cluster (a fresh node only).
    ClusterInit,
    /// Leader, term and members with their roles.
    ClusterStatus,
    /// Adds a node as a learner (it receives the log but does not vote).
    AddLearner {
        /// Its id.
        node_id: NodeId,
        /// Its gRPC address, `host:port`.
        addr: String,
    },
    /// Makes a learner a voter.
    Promote {
        /// Its id.
        node_id: NodeId,
    },
    /// Removes a node from the cluster.
    Remove {
        /// Its id.
        node_id: NodeId,
    },
    /// Asks `node_id` to take over leadership.
    TransferLeader {
        /// The voter to lead.
        node_id: NodeId,
    },
    /// Compares every reporting edge's and executor's stub hash with the canonical one.
    Verify,
    /// Internal (leader transfer): lets this node start elections, or not.
    SetElection {
        /// Whether it may stand for election.
        enabled: bool,
    },
    /// What edges and executors reported to this node (no forwarding).
    Fleet,
    /// Registers an upstream.
    UpstreamAdd {
        /// Its settings.
        upstream: UpstreamConfig,
        /// Hold back schema changes until approved.
        quarantine: bool,
        /// Replace an upstream of the same id.
        replace: bool,
    },
    /// Lists upstreams.
    UpstreamList,
    /// One upstream with its tools and pending changes.
    UpstreamShow {
        /// Upstream id.
        id: String,
    },
    /// Removes an upstream.
    UpstreamRemove {
        /// Upstream id.
        id: String,
    },
    /// Re-lists tools now (one upstream, or all).
    UpstreamRefresh {
        /// Upstream id; all when absent.
        id: Option<String>,
    },
    /// Screens what the upstreams last reported again, with this build's
    /// rules, without listing them (one upstream, or all).
    UpstreamRescreen {
        /// Upstream id; all when absent.
        id: Option<String>,
    },
    /// Drift events and quarantined changes.
    UpstreamDrift {
        /// Only this upstream.
        id: Option<String>,
    },
    /// What screening found in the upstreams' tools (held back or served).
    UpstreamFindings {
        /// Only this upstream.
        id: Option<String>,
    },
    /// Accepts quarantined changes; with a tool that screening held back,
    /// serves it with its findings.
    UpstreamApprove {
        /// Upstream id.
        id: String,
        /// Only this tool.
        tool: Option<String>,
    },
    /// Creates a tenant.
    TenantCreate {
        /// Tenant id.
        id: String,
        /// Initial settings.
        patch: TenantPatch,
    },
    /// Lists tenants (without key hashes).
    TenantList,
    /// One tenant (key ids, never hashes).
    TenantShow {
        /// Tenant id.
        id: String,
    },
    /// Changes a tenant.
    TenantUpdate {
        /// Tenant id.
        id: String,
        /// What to change.
        patch: TenantPatch,
    },
    /// Deletes a tenant.
    TenantDelete {
        /// Tenant id.
        id: String,
    },
    /// Issues an API key; the answer carries the key, shown once.
    KeyIssue {
        /// Tenant id.
        tenant: String,
        /// Who asks (recorded as the event's actor).
        requester: KeyRequester,
    },
    /// Revokes an API key.
    KeyRevoke {
        /// Tenant id.
        tenant: String,
        /// Key id.
        key_id: String,
        /// Who asks (recorded as the event's actor).
        requester: KeyRequester,
    },
    /// A tenant's budget and what its executors leased and spent.
    TenantUsage {
        /// Tenant id.
        id: String,
    },
    /// From an executor: reports a tenant's spending and leases allowance.
    BudgetLease {
        /// The report and the request.
        lease: LeaseRequest,
    },
    /// From an executor: appends audit records.
    AuditAppend {
        /// The records.
        records: Vec<AuditRecord>,
    },
    /// Audit records matching a query.
    Audit {
        /// Which.
        query: AuditQuery,
    },
    /// Shows, or with a value sets, how long audit records are kept.
    AuditRetention {
        /// The new setting.
        set: Option<AuditRetention>,
    },
    /// Sets a tenant's secret. The value travels only to the leader (over
    /// mTLS when the cluster uses it), which seals it before proposing;
    /// `Debug` shows `<redacted>` for it.
    SecretSet {
        /// Tenant id.
        tenant: String,
        /// Secret name.
        name: String,
        /// The plaintext.
        value: SecretValue,
    },
    /// A tenant's secrets: names and times, never values.
    SecretList {
        /// Tenant id.
        tenant: String,
    },
    /// Deletes a tenant's secret.
    SecretDelete {
        /// Tenant id.
        tenant: String,
        /// Secret name.
        name: String,
    },
    /// A manifest version (the current one when absent).
    ManifestShow {
        /// Version.
        version: Option<u64>,
    },
    /// What changed between two versions.
    ManifestDiff {
        /// Older version.
        from: u64,
        /// Newer version.
        to: u64,
    },
    /// The current version and its stub hash.
    ManifestHash,
    /// Starts a person's OAuth grant of `upstream` for `tenant`: the link
    /// they open.
    UpstreamAuthorize {
        /// Upstream id.
        upstream: String,
        /// Tenant id.
        tenant: String,
        /// Scopes to ask for besides the configured ones and those the
        /// tenant's grant holds (a step-up, when the upstream asked for more).
        scopes: Vec<String>,
    },
    /// The authorization server sent the person back to Quiver's callback
    /// with this URL (from an edge): the code is exchanged and kept.
    UpstreamAuthorized {
        /// The redirect URL, query included (it carries the one-time code:
        /// `Debug` shows `<redacted>`).
        url: SecretValue,
    },
    /// Drops `tenant`'s grant of `upstream`.
    UpstreamDeauthorize {
        /// Upstream id.
        upstream: String,
        /// Tenant id.
        tenant: String,
    },
    /// Renews `tenant`'s access token for `upstream` (from an executor
    /// whose token was refused).
    GrantRenew {
        /// Upstream id.
        upstream: String,
        /// Tenant id.
        tenant: String,
    },
    /// The grants kept, of one tenant or all.
    GrantList {
        /// Tenant id.
        tenant: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_set_request_never_shows_its_value() {
        let request = AdminRequest::SecretSet {
            tenant: "acme".into(),
            name: "API_TOKEN".into(),
            value: SecretValue::new("tok-plain".into()),
        };
        let shown = format!("{request:?}");
        assert!(
            !shown.contains("tok-plain") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}

/// Who asks for a key to be issued or revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyRequester {
    /// An operator, through `quiver ctl` or the admin API.
    #[default]
    Operator,
    /// The tenant itself, through the web console's self-service keys.
    Tenant,
}

impl KeyRequester {
    /// The actor the event log records for a change of `tenant`'s keys.
    pub fn actor(self, tenant: &str) -> String {
        match self {
            KeyRequester::Operator => "ctl".to_string(),
            KeyRequester::Tenant => format!("console:{tenant}"),
        }
    }
}
