//! The replicated commands: what goes into the Raft log. Every entry is an
//! [`Envelope`] carrying a format version and the leader's clock, so applying
//! it is a pure function of the entry and the state before it.

use serde::{Deserialize, Serialize};

use quiver_proto::upstream_config::UpstreamConfig;
use quiver_proto::{audit::AuditRecord, manifest::ServerEntry};

use crate::{
    audit_log::AuditRetention, cluster_key::SealedValue, tenant::TenantPatch, usage::LeaseRequest,
};

/// The format version written by this build. Entries of a newer version are
/// refused at apply time rather than misread.
///
/// - 1: the first.
/// - 2: `IssueKey` carries the tenant's key limit; the event log keeps
///   each kind of event (drift, screening, admin) to its own limit, so
///   drift history survives any amount of administrative activity.
pub const COMMAND_FORMAT: u32 = 2;

/// One Raft log entry's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Format version ([`COMMAND_FORMAT`] when written by this build).
    pub format: u32,
    /// Leader's wall clock when the command was proposed (ms since the epoch);
    /// the only time the state machine ever sees.
    pub at_ms: u64,
    /// Who asked (an operator CLI, `discovery`, `dev`): recorded in the event log.
    #[serde(default)]
    pub actor: String,
    /// What to do.
    pub command: Command,
}

pub use quiver_proto::clock::now_ms;

impl Envelope {
    /// Wraps `command` with this build's format version and the current time.
    pub fn now(actor: &str, command: Command) -> Envelope {
        let at_ms = now_ms();
        Envelope {
            format: COMMAND_FORMAT,
            at_ms,
            actor: actor.to_string(),
            command,
        }
    }
}

/// A change to the replicated state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Command {
    /// Registers an upstream, or replaces its settings when `replace` is set.
    PutUpstream {
        /// Its settings; header and env values may be `${SECRET}` references,
        /// resolved by the node that connects, never stored resolved.
        upstream: UpstreamConfig,
        /// Keep the previous schema of a changed tool until an operator approves.
        #[serde(default)]
        quarantine: bool,
        /// Replace an existing upstream of the same id instead of refusing.
        #[serde(default)]
        replace: bool,
    },
    /// Removes an upstream and its tools.
    RemoveUpstream {
        /// Upstream id.
        id: String,
    },
    /// Discovery's results for one or more upstreams (proposed by the leader;
    /// a burst of results is one entry and at most one manifest version).
    RecordDiscovery {
        /// What `tools/list` returned, with each server's metadata.
        entries: Vec<ServerEntry>,
    },
    /// Accepts quarantined schema changes of one upstream (all, or one tool).
    ApproveDrift {
        /// Upstream id.
        upstream: String,
        /// One tool, or every pending change of the upstream.
        #[serde(default)]
        tool: Option<String>,
    },
    /// Serves a tool that screening held back, as it is (its findings are
    /// shown with it).
    ApproveFindings {
        /// Upstream id.
        upstream: String,
        /// The held tool.
        tool: String,
    },
    /// Creates a tenant.
    CreateTenant {
        /// Tenant id.
        id: String,
        /// Initial settings.
        #[serde(default)]
        patch: TenantPatch,
    },
    /// Changes a tenant's settings.
    UpdateTenant {
        /// Tenant id.
        id: String,
        /// Fields to change.
        patch: TenantPatch,
    },
    /// Deletes a tenant and its keys.
    DeleteTenant {
        /// Tenant id.
        id: String,
    },
    /// Adds an API key (its hash) to a tenant.
    IssueKey {
        /// Tenant id.
        tenant: String,
        /// Key id (the part of the key before the secret).
        key_id: String,
        /// Hex SHA-256 of the key.
        sha256: String,
        /// The most keys a tenant may hold, as the leader's configuration
        /// said when it proposed the key (in the entry, so that every node
        /// applies the same limit); none in entries of format 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Removes an API key.
    RevokeKey {
        /// Tenant id.
        tenant: String,
        /// Key id.
        key_id: String,
    },
    /// An executor reports a tenant's spending and leases budget allowance.
    LeaseBudget {
        /// The report and the request.
        lease: LeaseRequest,
    },
    /// Appends records an executor shipped to the audit log.
    AppendAudit {
        /// The records (ids are assigned when applied).
        records: Vec<AuditRecord>,
    },
    /// Changes how long the audit log keeps records.
    SetAuditRetention {
        /// The new setting.
        retention: AuditRetention,
    },
    /// Sets (or replaces) a tenant's secret. Only its sealed form is ever
    /// proposed: the leader seals the operator's value with the cluster key
    /// first, so the log and snapshots hold ciphertext.
    SetSecret {
        /// Tenant id.
        tenant: String,
        /// Secret name (what `${tenant_secret:NAME}` references).
        name: String,
        /// Nonce, ciphertext and key id.
        #[serde(flatten)]
        sealed: SealedValue,
    },
    /// Deletes a tenant's secret.
    DeleteSecret {
        /// Tenant id.
        tenant: String,
        /// Secret name.
        name: String,
    },
    /// Sets (or renews) a tenant's OAuth grant for an upstream, and its
    /// access token as the tenant secret `oauth-<upstream>`; both sealed by
    /// the leader.
    PutOAuthGrant {
        /// The grant.
        grant: Box<OAuthGrantPut>,
    },
    /// Drops a tenant's OAuth grant for an upstream, and its access token.
    DropOAuthGrant {
        /// Tenant id.
        tenant: String,
        /// Upstream id.
        upstream: String,
        /// Only if the grant is still the one last renewed at this time (a
        /// renewal that failed drops nothing granted since).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        if_updated_ms: Option<u64>,
    },
}

/// [`Command::PutOAuthGrant`]'s payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthGrantPut {
    /// Tenant id.
    pub tenant: String,
    /// Upstream id.
    pub upstream: String,
    /// The sealed grant and what may be shown of it.
    pub record: OAuthGrantRecord,
    /// The sealed access token.
    pub access: SealedValue,
    /// For a renewal: when the grant it renews was last renewed; the
    /// renewal is refused if the grant changed since (granted again,
    /// dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<u64>,
}

impl Command {
    /// A short name for logs and the event log.
    pub fn name(&self) -> &'static str {
        match self {
            Command::PutUpstream { .. } => "put_upstream",
            Command::RemoveUpstream { .. } => "remove_upstream",
            Command::RecordDiscovery { .. } => "record_discovery",
            Command::ApproveDrift { .. } => "approve_drift",
            Command::ApproveFindings { .. } => "approve_findings",
            Command::CreateTenant { .. } => "create_tenant",
            Command::UpdateTenant { .. } => "update_tenant",
            Command::DeleteTenant { .. } => "delete_tenant",
            Command::IssueKey { .. } => "issue_key",
            Command::RevokeKey { .. } => "revoke_key",
            Command::LeaseBudget { .. } => "lease_budget",
            Command::AppendAudit { .. } => "append_audit",
            Command::SetAuditRetention { .. } => "set_audit_retention",
            Command::SetSecret { .. } => "set_secret",
            Command::DeleteSecret { .. } => "delete_secret",
            Command::PutOAuthGrant { .. } => "put_oauth_grant",
            Command::DropOAuthGrant { .. } => "drop_oauth_grant",
        }
    }
}

/// A tenant's OAuth grant for an upstream, as replicated: the sealed grant
/// (refresh token, client, scopes, issuer: what renewing the access token
/// takes; only the leader opens it, and it never leaves the control plane)
/// and what may be shown of it. The access token itself is the tenant
/// secret `oauth-<upstream>`, which executors receive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrantRecord {
    /// The sealed grant.
    #[serde(flatten)]
    pub sealed: SealedValue,
    /// When the access token expires (ms since the epoch), if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Whether it can be renewed without the person (it has a refresh token).
    #[serde(default)]
    pub renewable: bool,
    /// When it was granted (leader's clock).
    pub granted_ms: u64,
    /// When its access token was last renewed (leader's clock).
    pub updated_ms: u64,
}
