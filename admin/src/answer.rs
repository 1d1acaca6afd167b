//! Answers to operator requests: one [`AdminAnswer`] variant per
//! [`super::AdminRequest`] variant, each carrying a type of its own, so
//! `quiver ctl` renders an answer by what it is, never by the keys it has.
//! [`AdminAnswer::to_json`] is the form `quiver ctl -o json` prints.

use std::collections::{BTreeMap, BTreeSet};

use quiver_proto::{Manifest, audit::AuditRecord, manifest::ValidationMode};
use quiver_proto::{upstream_config::UpstreamConfig, upstream_state::UpstreamState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    audit::AuditRetention,
    outcome::CommandResult,
    records::{Event, ManifestRecord, PendingDrift},
    tenant::Tenant,
    usage::LeaseGranted,
};

/// The answer to one operator request, named like the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdminAnswer {
    /// [`super::AdminRequest::ClusterInit`].
    ClusterInit(ClusterInitialized),
    /// [`super::AdminRequest::ClusterStatus`].
    ClusterStatus(ClusterStatus),
    /// [`super::AdminRequest::AddLearner`].
    AddLearner(LearnerAdded),
    /// [`super::AdminRequest::Promote`].
    Promote(VoterPromoted),
    /// [`super::AdminRequest::Remove`].
    Remove(MemberRemoved),
    /// [`super::AdminRequest::TransferLeader`].
    TransferLeader(LeaderTransfer),
    /// [`super::AdminRequest::Verify`].
    Verify(FleetVerification),
    /// [`super::AdminRequest::SetElection`].
    SetElection(ElectionSwitch),
    /// [`super::AdminRequest::Fleet`].
    Fleet(Vec<FleetMember>),
    /// [`super::AdminRequest::UpstreamAdd`].
    UpstreamAdd(Committed),
    /// [`super::AdminRequest::UpstreamList`].
    UpstreamList(Vec<UpstreamSummary>),
    /// [`super::AdminRequest::UpstreamShow`].
    UpstreamShow(Box<UpstreamDetail>),
    /// [`super::AdminRequest::UpstreamRemove`].
    UpstreamRemove(Committed),
    /// [`super::AdminRequest::UpstreamRefresh`].
    UpstreamRefresh(RefreshStarted),
    /// [`super::AdminRequest::UpstreamRescreen`].
    UpstreamRescreen(Rescreened),
    /// [`super::AdminRequest::UpstreamDrift`].
    UpstreamDrift(DriftReport),
    /// [`super::AdminRequest::UpstreamFindings`].
    UpstreamFindings(super::FindingsReport),
    /// [`super::AdminRequest::UpstreamApprove`].
    UpstreamApprove(Committed),
    /// [`super::AdminRequest::TenantCreate`].
    TenantCreate(Committed),
    /// [`super::AdminRequest::TenantList`].
    TenantList(Vec<PublicTenant>),
    /// [`super::AdminRequest::TenantShow`].
    TenantShow(PublicTenant),
    /// [`super::AdminRequest::TenantUpdate`].
    TenantUpdate(Committed),
    /// [`super::AdminRequest::TenantDelete`].
    TenantDelete(Committed),
    /// [`super::AdminRequest::KeyIssue`].
    KeyIssue(IssuedKey),
    /// [`super::AdminRequest::KeyRevoke`].
    KeyRevoke(Committed),
    /// [`super::AdminRequest::TenantUsage`].
    TenantUsage(UsageReport),
    /// [`super::AdminRequest::BudgetLease`].
    BudgetLease(LeaseGranted),
    /// [`super::AdminRequest::AuditAppend`].
    AuditAppend(Committed),
    /// [`super::AdminRequest::Audit`].
    Audit(Vec<AuditRecord>),
    /// [`super::AdminRequest::AuditRetention`].
    AuditRetention(AuditRetention),
    /// [`super::AdminRequest::SecretSet`].
    SecretSet(Committed),
    /// [`super::AdminRequest::SecretList`].
    SecretList(SecretList),
    /// [`super::AdminRequest::SecretDelete`].
    SecretDelete(Committed),
    /// [`super::AdminRequest::UpstreamAuthorize`].
    UpstreamAuthorize(AuthorizationLink),
    /// [`super::AdminRequest::UpstreamAuthorized`].
    UpstreamAuthorized(crate::outcome::OAuthGrantChanged),
    /// [`super::AdminRequest::UpstreamDeauthorize`].
    UpstreamDeauthorize(Committed),
    /// [`super::AdminRequest::GrantRenew`].
    GrantRenew(Committed),
    /// [`super::AdminRequest::GrantList`].
    GrantList(Vec<GrantSummary>),
    /// [`super::AdminRequest::ManifestShow`].
    ManifestShow(ManifestShown),
    /// [`super::AdminRequest::ManifestDiff`].
    ManifestDiff(ManifestDiff),
    /// [`super::AdminRequest::ManifestHash`].
    ManifestHash(ManifestHash),
}

impl AdminAnswer {
    /// The operation this answers, named like its variant (`TenantList`).
    pub fn kind(&self) -> &'static str {
        match self {
            AdminAnswer::ClusterInit(_) => "ClusterInit",
            AdminAnswer::ClusterStatus(_) => "ClusterStatus",
            AdminAnswer::AddLearner(_) => "AddLearner",
            AdminAnswer::Promote(_) => "Promote",
            AdminAnswer::Remove(_) => "Remove",
            AdminAnswer::TransferLeader(_) => "TransferLeader",
            AdminAnswer::Verify(_) => "Verify",
            AdminAnswer::SetElection(_) => "SetElection",
            AdminAnswer::Fleet(_) => "Fleet",
            AdminAnswer::UpstreamAdd(_) => "UpstreamAdd",
            AdminAnswer::UpstreamList(_) => "UpstreamList",
            AdminAnswer::UpstreamShow(_) => "UpstreamShow",
            AdminAnswer::UpstreamRemove(_) => "UpstreamRemove",
            AdminAnswer::UpstreamRefresh(_) => "UpstreamRefresh",
            AdminAnswer::UpstreamRescreen(_) => "UpstreamRescreen",
            AdminAnswer::UpstreamDrift(_) => "UpstreamDrift",
            AdminAnswer::UpstreamFindings(_) => "UpstreamFindings",
            AdminAnswer::UpstreamApprove(_) => "UpstreamApprove",
            AdminAnswer::TenantCreate(_) => "TenantCreate",
            AdminAnswer::TenantList(_) => "TenantList",
            AdminAnswer::TenantShow(_) => "TenantShow",
            AdminAnswer::TenantUpdate(_) => "TenantUpdate",
            AdminAnswer::TenantDelete(_) => "TenantDelete",
            AdminAnswer::KeyIssue(_) => "KeyIssue",
            AdminAnswer::KeyRevoke(_) => "KeyRevoke",
            AdminAnswer::TenantUsage(_) => "TenantUsage",
            AdminAnswer::BudgetLease(_) => "BudgetLease",
            AdminAnswer::AuditAppend(_) => "AuditAppend",
            AdminAnswer::Audit(_) => "Audit",
            AdminAnswer::AuditRetention(_) => "AuditRetention",
            AdminAnswer::SecretSet(_) => "SecretSet",
            AdminAnswer::SecretList(_) => "SecretList",
            AdminAnswer::SecretDelete(_) => "SecretDelete",
            AdminAnswer::UpstreamAuthorize(_) => "UpstreamAuthorize",
            AdminAnswer::UpstreamAuthorized(_) => "UpstreamAuthorized",
            AdminAnswer::UpstreamDeauthorize(_) => "UpstreamDeauthorize",
            AdminAnswer::GrantRenew(_) => "GrantRenew",
            AdminAnswer::GrantList(_) => "GrantList",
            AdminAnswer::ManifestShow(_) => "ManifestShow",
            AdminAnswer::ManifestDiff(_) => "ManifestDiff",
            AdminAnswer::ManifestHash(_) => "ManifestHash",
        }
    }

    /// The answer's own fields as JSON, without the variant name: what
    /// `quiver ctl -o json` prints.
    pub fn to_json(&self) -> Value {
        let value = match self {
            AdminAnswer::ClusterInit(a) => serde_json::to_value(a),
            AdminAnswer::ClusterStatus(a) => serde_json::to_value(a),
            AdminAnswer::AddLearner(a) => serde_json::to_value(a),
            AdminAnswer::Promote(a) => serde_json::to_value(a),
            AdminAnswer::Remove(a) => serde_json::to_value(a),
            AdminAnswer::TransferLeader(a) => serde_json::to_value(a),
            AdminAnswer::Verify(a) => serde_json::to_value(a),
            AdminAnswer::SetElection(a) => serde_json::to_value(a),
            AdminAnswer::Fleet(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamList(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamShow(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamRefresh(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamRescreen(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamDrift(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamFindings(a) => serde_json::to_value(a),
            AdminAnswer::TenantList(a) => serde_json::to_value(a),
            AdminAnswer::TenantShow(a) => serde_json::to_value(a),
            AdminAnswer::KeyIssue(a) => serde_json::to_value(a),
            AdminAnswer::TenantUsage(a) => serde_json::to_value(a),
            AdminAnswer::BudgetLease(a) => serde_json::to_value(a),
            AdminAnswer::Audit(a) => serde_json::to_value(a),
            AdminAnswer::AuditRetention(a) => serde_json::to_value(a),
            AdminAnswer::SecretList(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamAuthorize(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamAuthorized(a) => serde_json::to_value(a),
            AdminAnswer::GrantList(a) => serde_json::to_value(a),
            AdminAnswer::ManifestShow(ManifestShown::Current(a)) => serde_json::to_value(a),
            AdminAnswer::ManifestShow(ManifestShown::Kept(a)) => serde_json::to_value(a),
            AdminAnswer::ManifestDiff(a) => serde_json::to_value(a),
            AdminAnswer::ManifestHash(a) => serde_json::to_value(a),
            AdminAnswer::UpstreamAdd(c)
            | AdminAnswer::UpstreamRemove(c)
            | AdminAnswer::UpstreamApprove(c)
            | AdminAnswer::TenantCreate(c)
            | AdminAnswer::TenantUpdate(c)
            | AdminAnswer::TenantDelete(c)
            | AdminAnswer::KeyRevoke(c)
            | AdminAnswer::SecretSet(c)
            | AdminAnswer::SecretDelete(c)
            | AdminAnswer::UpstreamDeauthorize(c)
            | AdminAnswer::GrantRenew(c)
            | AdminAnswer::AuditAppend(c) => return c.to_json(),
        };
        value.unwrap_or_default()
    }
}

/// [`AdminAnswer::UpstreamAuthorize`]: where the person grants access.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationLink {
    /// Upstream id.
    pub upstream: String,
    /// Tenant id.
    pub tenant: String,
    /// The authorization server's page to open.
    pub link: String,
    /// How long the link can be completed, in seconds.
    pub expires_in_s: u64,
}

/// One kept grant in [`AdminAnswer::GrantList`]: never a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantSummary {
    /// Tenant id.
    pub tenant: String,
    /// Upstream id.
    pub upstream: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the access token expires (ms since the epoch), if it said.
    pub expires_at_ms: Option<u64>,
    /// Whether it renews without the person (it has a refresh token).
    pub renewable: bool,
    /// When the person granted it.
    pub granted_ms: u64,
    /// When its access token was last renewed.
    pub updated_ms: u64,
}

/// [`AdminAnswer::TenantUsage`]: a tenant's budget and usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// Tenant id.
    pub tenant: String,
    /// Its budget (`None`: unlimited).
    pub budget: Option<f64>,
    /// What executors leased (never more than the budget).
    pub leased: f64,
    /// What executors reported spending.
    pub spent: f64,
    /// Calls executors reported.
    pub calls: u64,
    /// What may still be leased (`None`: unlimited).
    pub remaining: Option<f64>,
    /// When an executor last reported (ms since the epoch).
    pub updated_ms: u64,
    /// Bytes of stashed values its executors hold (fleet-wide with etcd).
    #[serde(default)]
    pub stash_bytes: u64,
    /// Stashed keys, likewise.
    #[serde(default)]
    pub stash_keys: u64,
    /// Its stash quota of bytes: its own, else the executors' default as
    /// they report it (`None`: not set, and no executor reported yet).
    #[serde(default)]
    pub stash_quota_bytes: Option<u64>,
    /// Its stash quota of keys, likewise.
    #[serde(default)]
    pub stash_quota_keys: Option<u64>,
    /// Executors that reported its stash in the last five minutes.
    #[serde(default)]
    pub stash_executors: usize,
}

/// A committed write: what the command did and where it landed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Committed {
    /// What applying the command did.
    pub result: CommandResult,
    /// The manifest version after it.
    pub manifest_version: u64,
    /// Its index in the Raft log.
    pub log_index: u64,
}

impl Committed {
    /// `{result, manifest_version, log_index}` with the result's own fields.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "result": self.result.to_json(),
            "manifest_version": self.manifest_version,
            "log_index": self.log_index,
        })
    }
}

/// One row of [`AdminAnswer::UpstreamList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamSummary {
    /// Upstream id.
    pub id: String,
    /// `stdio: <command>` or `http: <url>`.
    pub transport: String,
    /// Tools in the catalogue.
    pub tools: usize,
    /// Quarantined changes waiting for approval.
    pub pending: usize,
    /// Whether schema changes wait for approval.
    pub quarantine: bool,
    /// Operator tags.
    pub tags: Vec<String>,
    /// Operator group.
    pub group: String,
    /// Connection state on the answering node (`unknown` on the wire when it has none).
    #[serde(with = "state_or_unknown")]
    pub state: Option<UpstreamState>,
}

/// [`AdminAnswer::UpstreamShow`]: one upstream with its tools and pending changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamDetail {
    /// Upstream id.
    pub id: String,
    /// `stdio: <command>` or `http: <url>`.
    pub transport: String,
    /// Its tools in the catalogue.
    pub tools: Vec<ToolSummary>,
    /// Quarantined changes by tool, if any.
    pub pending: Option<BTreeMap<String, PendingDrift>>,
    /// Whether schema changes wait for approval.
    pub quarantine: bool,
    /// Operator tags.
    pub tags: Vec<String>,
    /// Operator group.
    pub group: String,
    /// Connection state on the answering node (`unknown` on the wire when it has none).
    #[serde(with = "state_or_unknown")]
    pub state: Option<UpstreamState>,
    /// Its settings, secrets by reference.
    pub config: UpstreamConfig,
}

/// A tool in [`UpstreamDetail`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// Its name on the upstream.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// [`AdminAnswer::UpstreamRefresh`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefreshStarted {
    /// The upstream id, or `all`.
    pub refreshing: String,
}

/// [`AdminAnswer::UpstreamRescreen`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rescreened {
    /// Upstreams screened again.
    pub upstreams: u32,
    /// Those whose findings changed (recorded as a discovery).
    pub changed: Vec<String>,
}

/// [`AdminAnswer::UpstreamDrift`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    /// Drift events, oldest first.
    pub events: Vec<Event>,
    /// Quarantined tools by upstream.
    pub pending: BTreeMap<String, Vec<String>>,
}

/// A tenant as operators see it: key ids and dates, never key hashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublicTenant {
    /// See [`Tenant::id`].
    pub id: String,
    /// See [`Tenant::display_name`].
    pub display_name: String,
    /// See [`Tenant::mode`].
    pub mode: Option<quiver_proto::mode::Mode>,
    /// See [`Tenant::servers`].
    pub servers: Vec<String>,
    /// See [`Tenant::tools`].
    pub tools: Vec<String>,
    /// See [`Tenant::tags`].
    pub tags: Vec<String>,
    /// See [`Tenant::rate_limit_per_minute`].
    pub rate_limit_per_minute: Option<u32>,
    /// See [`Tenant::tool_rate_limits`].
    #[serde(default)]
    pub tool_rate_limits: BTreeMap<String, u32>,
    /// See [`Tenant::audit_arguments`].
    #[serde(default)]
    pub audit_arguments: bool,
    /// See [`Tenant::self_service_keys`].
    #[serde(default)]
    pub self_service_keys: bool,
    /// See [`Tenant::validation`].
    #[serde(default)]
    pub validation: Option<ValidationMode>,
    /// See [`Tenant::stash_bytes`].
    #[serde(default)]
    pub stash_bytes: Option<u64>,
    /// See [`Tenant::hold_findings`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_findings: Option<quiver_proto::finding::HoldAt>,
    /// See [`Tenant::stash_keys`].
    #[serde(default)]
    pub stash_keys: Option<u64>,
    /// See [`Tenant::task_wall_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_wall_ms: Option<u64>,
    /// See [`Tenant::budget`].
    pub budget: Option<f64>,
    /// See [`Tenant::prices`].
    pub prices: BTreeMap<String, f64>,
    /// Its keys.
    pub keys: Vec<KeySummary>,
    /// See [`Tenant::created_ms`].
    pub created_ms: u64,
    /// See [`Tenant::updated_ms`].
    pub updated_ms: u64,
}

impl From<&Tenant> for PublicTenant {
    fn from(t: &Tenant) -> PublicTenant {
        PublicTenant {
            id: t.id.clone(),
            display_name: t.display_name.clone(),
            mode: t.mode,
            servers: t.servers.clone(),
            tools: t.tools.clone(),
            tags: t.tags.clone(),
            rate_limit_per_minute: t.rate_limit_per_minute,
            tool_rate_limits: t.tool_rate_limits.clone(),
            audit_arguments: t.audit_arguments,
            self_service_keys: t.self_service_keys,
            validation: t.validation,
            stash_bytes: t.stash_bytes,
            stash_keys: t.stash_keys,
            task_wall_ms: t.task_wall_ms,
            hold_findings: t.hold_findings,
            budget: t.budget,
            prices: t.prices.clone(),
            keys: t
                .keys
                .iter()
                .map(|(id, k)| KeySummary {
                    key_id: id.clone(),
                    created_ms: k.created_ms,
                })
                .collect(),
            created_ms: t.created_ms,
            updated_ms: t.updated_ms,
        }
    }
}

/// A key in [`PublicTenant`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeySummary {
    /// Key id.
    pub key_id: String,
    /// When it was issued.
    pub created_ms: u64,
}

/// [`AdminAnswer::SecretList`]: a tenant's secrets by name; values are never
/// readable back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretList {
    /// Tenant id.
    pub tenant: String,
    /// Its secrets, by name.
    pub secrets: Vec<SecretSummary>,
}

/// One secret in [`SecretList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretSummary {
    /// Secret name.
    pub name: String,
    /// When it was last set (ms since the epoch).
    pub updated_ms: u64,
}

/// [`AdminAnswer::KeyIssue`]: the key itself, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssuedKey {
    /// Tenant id.
    pub tenant: String,
    /// Key id.
    pub key_id: String,
    /// The whole key.
    pub key: String,
}

/// [`AdminAnswer::ManifestShow`]: the current version in full, or a kept
/// version's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestShown {
    /// The current version.
    Current(ManifestSummary),
    /// An older version from the history.
    Kept(ManifestRecord),
}

/// The current manifest, by server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestSummary {
    /// Version.
    pub version: u64,
    /// Stub hash.
    pub stub_hash: String,
    /// Its servers.
    pub servers: Vec<ServerSummary>,
    /// Number of tools.
    pub tools: usize,
}

impl ManifestSummary {
    /// The summary of `m`.
    pub fn of(m: &Manifest) -> ManifestSummary {
        ManifestSummary {
            version: m.version,
            stub_hash: m.stub_hash.to_hex(),
            servers: m
                .servers
                .iter()
                .map(|s| ServerSummary {
                    id: s.id.clone(),
                    tools: m.tools.iter().filter(|t| t.id.server == s.id).count(),
                    stub_hash: s.stub_hash.to_hex(),
                })
                .collect(),
            tools: m.tools.len(),
        }
    }
}

/// A server in [`ManifestSummary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    /// Upstream id.
    pub id: String,
    /// Number of its tools.
    pub tools: usize,
    /// Its stub hash.
    pub stub_hash: String,
}

/// [`AdminAnswer::ManifestDiff`]: tools added, removed and changed, as
/// `<server>/<tool>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestDiff {
    /// Older version.
    pub from: u64,
    /// Newer version.
    pub to: u64,
    /// Older version's stub hash.
    pub from_hash: String,
    /// Newer version's stub hash.
    pub to_hash: String,
    /// Tools only in the newer version.
    pub added: Vec<String>,
    /// Tools only in the older version.
    pub removed: Vec<String>,
    /// Tools whose definition differs.
    pub changed: Vec<String>,
}

impl ManifestDiff {
    /// What changed from `a` to `b`.
    pub fn between(a: &ManifestRecord, b: &ManifestRecord) -> ManifestDiff {
        let mut added = Vec::new();
        let mut removed = Vec::new();
        let mut changed = Vec::new();
        let servers: BTreeSet<&String> = a.tools.keys().chain(b.tools.keys()).collect();
        let empty = BTreeMap::new();
        for server in servers {
            let old = a.tools.get(server).unwrap_or(&empty);
            let new = b.tools.get(server).unwrap_or(&empty);
            for (tool, hash) in new {
                match old.get(tool) {
                    None => added.push(format!("{server}/{tool}")),
                    Some(h) if h != hash => changed.push(format!("{server}/{tool}")),
                    Some(_) => {}
                }
            }
            for tool in old.keys().filter(|t| !new.contains_key(*t)) {
                removed.push(format!("{server}/{tool}"));
            }
        }
        ManifestDiff {
            from: a.version,
            to: b.version,
            from_hash: a.stub_hash.clone(),
            to_hash: b.stub_hash.clone(),
            added,
            removed,
            changed,
        }
    }
}

/// [`AdminAnswer::ManifestHash`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestHash {
    /// Current version.
    pub version: u64,
    /// Its stub hash.
    pub stub_hash: String,
    /// Number of tools.
    pub tools: usize,
}

#[cfg(test)]
mod tests;

mod cluster;
mod state_or_unknown;

pub use cluster::{
    ClusterInitialized, ClusterStatus, ElectionSwitch, FleetMember, FleetVerification,
    LeaderTransfer, LearnerAdded, MemberReach, MemberRemoved, MemberRole, MemberStatus,
    NodeVerdict, ReportedReadiness, Verdict, VoterPromoted,
};
