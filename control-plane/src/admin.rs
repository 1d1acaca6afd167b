//! The operator API carried by `ControlPlane.Admin`: one versioned, serde-encoded
//! request enum, so `quiver ctl` and the nodes agree on every operation by type.
//! Answers are JSON values the CLI renders as tables or prints with `-o json`.

use serde::{Deserialize, Serialize};

use quiver_upstream::UpstreamConfig;

use crate::{raft::NodeId, tenant::TenantPatch};

/// An operator request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
#[non_exhaustive]
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
    /// Drift events and quarantined changes.
    UpstreamDrift {
        /// Only this upstream.
        id: Option<String>,
    },
    /// Accepts quarantined changes.
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
    },
    /// Revokes an API key.
    KeyRevoke {
        /// Tenant id.
        tenant: String,
        /// Key id.
        key_id: String,
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
}

impl AdminRequest {
    /// Whether the request changes replicated state or needs the leader's view
    /// (everything but [`AdminRequest::Fleet`] and [`AdminRequest::ClusterInit`]).
    pub fn needs_leader(&self) -> bool {
        !matches!(
            self,
            AdminRequest::Fleet | AdminRequest::ClusterInit | AdminRequest::SetElection { .. }
        )
    }
}

/// What an edge or executor last reported about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetMember {
    /// The node's name (`host:port` or an operator-given name).
    pub node: String,
    /// `edge`, `executor` or `dev`.
    pub role: String,
    /// The manifest version it holds.
    pub manifest_version: u64,
    /// The stub hash it computed for that version.
    pub stub_hash: String,
    /// Milliseconds since its last report.
    pub age_ms: u64,
    /// The control-plane node it reports to.
    pub reported_to: NodeId,
}
