//! The answers about the cluster: its members and roles, membership changes,
//! and the fleet's readiness and stub-hash verification.

use serde::{Deserialize, Serialize};

use quiver_proto::node_role::NodeRole;

use crate::NodeId;

/// [`AdminAnswer::ClusterInit`](super::AdminAnswer::ClusterInit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterInitialized {
    /// Always true: a node that already belongs to a cluster is refused.
    pub initialized: bool,
    /// The node, now a one-node cluster.
    pub node: NodeId,
}

/// [`AdminAnswer::ClusterStatus`](super::AdminAnswer::ClusterStatus): the leader's view.
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

/// [`AdminAnswer::AddLearner`](super::AdminAnswer::AddLearner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnerAdded {
    /// The node added.
    pub added: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::Promote`](super::AdminAnswer::Promote).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoterPromoted {
    /// The node promoted.
    pub promoted: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::Remove`](super::AdminAnswer::Remove).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberRemoved {
    /// The node removed.
    pub removed: NodeId,
    /// The membership entry's log index.
    pub log_index: u64,
}

/// [`AdminAnswer::TransferLeader`](super::AdminAnswer::TransferLeader).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderTransfer {
    /// The leader now.
    pub leader: NodeId,
    /// Whether leadership moved (asking the leader to lead changes nothing).
    pub changed: bool,
}

/// [`AdminAnswer::SetElection`](super::AdminAnswer::SetElection).
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

/// [`AdminAnswer::Verify`](super::AdminAnswer::Verify): every reporting node against the canonical manifest.
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
