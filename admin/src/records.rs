//! Records of the replicated state that operators read back whole: a
//! quarantined schema change, an event of the bounded log and a manifest
//! version as remembered for history and diffs. Their JSON is part of the
//! control plane's snapshot format: change it only with a new snapshot
//! format version.

use std::collections::BTreeMap;

use quiver_proto::tool::ToolDef;
use serde::{Deserialize, Serialize};

/// A schema change held back by quarantine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingDrift {
    /// The definition the upstream now reports.
    pub proposed: ToolDef,
    /// When it was first seen.
    pub seen_ms: u64,
}

/// One entry of the bounded event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Monotonic id.
    pub id: u64,
    /// Leader's clock when the command was proposed.
    pub at_ms: u64,
    /// What kind of event.
    pub kind: EventKind,
    /// Who caused it.
    pub actor: String,
    /// Upstream concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Tool concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What happened.
    pub message: String,
}

/// What an [`Event`] records; `drift` or `admin` on the wire and in snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A tool appeared, disappeared or changed schema.
    Drift,
    /// An operator (or `quiver dev`) changed the registry, a tenant or a key.
    Admin,
    /// Screening held a tool back.
    Screening,
}

/// A manifest version as remembered for history and diffs: the definition hash
/// of every tool, by server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestRecord {
    /// Version number.
    pub version: u64,
    /// Hex stub hash of the version.
    pub stub_hash: String,
    /// When it was committed.
    pub at_ms: u64,
    /// `server → tool → hex SHA-256 of the canonical definition`.
    pub tools: BTreeMap<String, BTreeMap<String, String>>,
}
