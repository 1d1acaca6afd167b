//! The records the replicated state keeps besides tenants: a registered
//! upstream, a quarantined schema change, an event of the bounded log, a
//! manifest version as remembered for history and diffs, and a tenant's
//! sealed secret. Their JSON is the
//! snapshot format: change it only with a new snapshot format version.

use quiver_proto::upstream_config::UpstreamConfig;
use quiver_proto::{finding::Finding, tool::ToolDef};
use serde::{Deserialize, Serialize};

use crate::cluster_key::SealedValue;

pub use quiver_admin::records::{Event, EventKind, ManifestRecord, PendingDrift};

/// One registered upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamRecord {
    /// Its settings, secrets by reference.
    pub config: UpstreamConfig,
    /// Whether schema changes wait for approval.
    #[serde(default)]
    pub quarantine: bool,
    /// When it was registered or last replaced.
    pub updated_ms: u64,
}

/// A tool that screening held back: not in the catalogue, not served,
/// until an operator approves this definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldTool {
    /// The definition as reported (invisible characters stripped).
    pub tool: ToolDef,
    /// What screening found, highest severity first.
    pub findings: Vec<Finding>,
    /// When this definition was first held.
    pub seen_ms: u64,
}

/// One tenant secret as replicated: ciphertext only (sealed by the leader
/// with the cluster key before it was proposed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedSecret {
    /// Nonce, ciphertext and the id of the key that sealed it.
    #[serde(flatten)]
    pub sealed: SealedValue,
    /// When it was last set (leader's clock).
    pub updated_ms: u64,
}
