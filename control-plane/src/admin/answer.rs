//! Answers to operator requests: one [`AdminAnswer`] variant per
//! [`super::AdminRequest`] variant, each carrying a type of its own, so
//! `quiver ctl` renders an answer by what it is, never by the keys it has.
//! [`AdminAnswer::to_json`] is the form `quiver ctl -o json` prints.

use std::collections::{BTreeMap, BTreeSet};

use quiver_proto::{Manifest, audit::AuditRecord};
use quiver_upstream::{UpstreamConfig, UpstreamState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    audit_log::AuditRetention,
    node_role::NodeRole,
    outcome::CommandResult,
    raft::NodeId,
    state::{Event, ManifestRecord, PendingDrift},
    tenant::Tenant,
    usage::LeaseGranted,
};

/// The answer to one operator request, named like the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
    /// [`super::AdminRequest::ManifestShow`].
    ManifestShow(ManifestShown),
    /// [`super::AdminRequest::ManifestDiff`].
    ManifestDiff(ManifestDiff),
    /// [`super::AdminRequest::ManifestHash`].
    ManifestHash(ManifestHash),
}

impl AdminAnswer {
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
            | AdminAnswer::AuditAppend(c) => return c.to_json(),
        };
        value.unwrap_or_default()
    }
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

/// [`AdminAnswer::ClusterInit`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterInitialized {
    /// Always true: a node that already belongs to a cluster is refused.
    pub initialized: bool,
    /// The node, now a one-node cluster.
    pub node: NodeId,
}

/// [`AdminAnswer::ClusterStatus`]: the leader's view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterStatus {
    /// The leader (the node that answered).
    pub leader: NodeId,
    /// Raft term.
    pub term: u64,
    /// Last log index on the leader.
    pub last_log_index: Option<u64>,
    /// Last index applied on the leader.
    pub last_applied: Option<u64>,
    /// Last index covered by the leader's snapshot.
    pub snapshot: Option<u64>,
    /// Last index purged from the leader's log.
    pub purged: Option<u64>,
    /// Every member.
    pub members: Vec<MemberStatus>,
    /// Current manifest version.
    pub manifest_version: u64,
    /// Its stub hash.
    pub stub_hash: String,
    /// The edges and executors reporting to the answering node, with their
    /// manifests and readiness, judged as `cluster verify` judges them
    /// (which also asks every other member).
    #[serde(default)]
    pub fleet: Vec<NodeVerdict>,
}

/// One member in [`ClusterStatus`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberStatus {
    /// Node id.
    pub id: NodeId,
    /// Its gRPC address.
    pub addr: String,
    /// Its role.
    pub role: MemberRole,
    /// The last log index known to be replicated to it.
    pub matched_index: Option<u64>,
    /// Whether it answered the leader just now (`up`) or not (`down`).
    #[serde(default)]
    pub state: MemberReach,
}

/// Whether a member answered the node that made the status; `up` or `down`
/// in JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberReach {
    /// It answered.
    #[default]
    Up,
    /// It did not answer within the status's time limit.
    Down,
}

impl MemberReach {
    /// `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberReach::Up => "up",
            MemberReach::Down => "down",
        }
    }
}

/// A member's role in Raft; `leader`, `follower` or `learner` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    /// Leads.
    Leader,
    /// Votes.
    Follower,
    /// Receives the log without voting.
    Learner,
}

impl MemberRole {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Leader => "leader",
            MemberRole::Follower => "follower",
            MemberRole::Learner => "learner",
        }
    }
}

/// [`AdminAnswer::AddLearner`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnerAdded {
    /// The node added.
    pub added: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::Promote`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoterPromoted {
    /// The node promoted.
    pub promoted: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::Remove`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberRemoved {
    /// The node removed.
    pub removed: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::TransferLeader`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderTransfer {
    /// The leader now.
    pub leader: NodeId,
    /// Whether leadership moved (asking the leader to lead changes nothing).
    pub changed: bool,
}

/// [`AdminAnswer::SetElection`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElectionSwitch {
    /// The node asked.
    pub node: NodeId,
    /// Whether it may now stand for election.
    pub elect: bool,
}

/// What an edge or executor last reported about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetMember {
    /// The node's name (`host:port` or an operator-given name).
    pub node: String,
    /// What kind of node it is.
    pub role: NodeRole,
    /// The manifest version it holds.
    pub manifest_version: u64,
    /// The stub hash it computed for that version.
    pub stub_hash: String,
    /// Milliseconds since its last report.
    pub age_ms: u64,
    /// The control-plane node it reports to.
    pub reported_to: NodeId,
    /// What it said about its readiness.
    #[serde(flatten)]
    pub readiness: ReportedReadiness,
}

/// What a node said about its readiness in its last report (absent fields:
/// a node that predates readiness reports).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportedReadiness {
    /// Its own `/readyz` verdict, when it reported one.
    #[serde(default)]
    pub ready: Option<bool>,
    /// The readiness checks it failed, `name: reason; …`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_ready: String,
    /// Its admin listener (`/healthz`, `/readyz`, `/metrics`), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub admin: String,
    /// Where an executor serves `quiver.v1.Executor`, for edges to route to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub grpc: String,
    /// Where an edge serves MCP, for the other edges to reach it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mcp: String,
}

/// [`AdminAnswer::Verify`]: every reporting node against the canonical manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetVerification {
    /// The canonical version.
    pub manifest_version: u64,
    /// Its stub hash.
    pub stub_hash: String,
    /// Whether every reporting node holds exactly the canonical manifest.
    pub ok: bool,
    /// The nodes that do not.
    pub disagree: Vec<String>,
    /// One line per reporting node.
    pub nodes: Vec<NodeVerdict>,
}

/// One node in [`FleetVerification`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVerdict {
    /// The node's name.
    pub node: String,
    /// What kind of node it is.
    pub role: NodeRole,
    /// The version it holds.
    pub manifest_version: u64,
    /// The stub hash it computed.
    pub stub_hash: String,
    /// How that compares.
    pub verdict: Verdict,
    /// Milliseconds since its last report.
    pub age_ms: u64,
    /// The control-plane node it reports to.
    pub reported_to: NodeId,
    /// What it said about its readiness.
    #[serde(flatten)]
    pub readiness: ReportedReadiness,
}

/// How a node's manifest compares with the canonical one; `ok`, `behind` or
/// `mismatch` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The canonical version and hash.
    Ok,
    /// An older version, with that version's hash: it will catch up.
    Behind,
    /// A hash the control plane never published for that version.
    Mismatch,
}

impl Verdict {
    /// How a node holding `version` with `stub_hash` compares with the
    /// `canonical` version and hash, given the hash the control plane
    /// published for each past version (`published`).
    pub fn judge<'a>(
        version: u64,
        stub_hash: &str,
        canonical: (u64, &str),
        published: impl FnOnce(u64) -> Option<&'a str>,
    ) -> Verdict {
        if version == canonical.0 && stub_hash == canonical.1 {
            Verdict::Ok
        } else if published(version).is_some_and(|h| h == stub_hash) {
            Verdict::Behind
        } else {
            Verdict::Mismatch
        }
    }

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Behind => "behind",
            Verdict::Mismatch => "mismatch",
        }
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

/// [`AdminAnswer::UpstreamDrift`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    /// Drift events, oldest first.
    pub events: Vec<Event>,
    /// Quarantined tools by upstream.
    pub pending: BTreeMap<String, Vec<String>>,
}

impl DriftReport {
    /// The drift events and quarantined changes of `s` (only `id`'s when given).
    pub(crate) fn of(s: &crate::state::ControlState, id: Option<&str>) -> DriftReport {
        DriftReport {
            events: s
                .events
                .iter()
                .filter(|e| e.kind == crate::state::EventKind::Drift)
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
    /// See [`Tenant::validation`].
    #[serde(default)]
    pub validation: Option<String>,
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
            validation: t.validation.map(|v| v.as_str().to_string()),
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

mod state_or_unknown;
