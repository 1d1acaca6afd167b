//! What kind of node a fleet member is: carried as an enum in `NodeReport`
//! and in etcd's member records, shown by `quiver ctl cluster verify`.

use crate::pb;
use serde::{Deserialize, Serialize};

/// The role of a reporting node; `edge`, `executor` or `dev` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    /// An edge (MCP front door).
    Edge,
    /// An executor (upstream connections and scripts).
    Executor,
    /// `quiver dev`: edge and executor in one process.
    Dev,
}

impl NodeRole {
    /// The JSON and display spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeRole::Edge => "edge",
            NodeRole::Executor => "executor",
            NodeRole::Dev => "dev",
        }
    }

    /// The protobuf value.
    pub fn to_pb(self) -> pb::NodeRole {
        match self {
            NodeRole::Edge => pb::NodeRole::Edge,
            NodeRole::Executor => pb::NodeRole::Executor,
            NodeRole::Dev => pb::NodeRole::Dev,
        }
    }

    /// From the protobuf value; `None` when unspecified (or unknown to this build).
    pub fn from_pb(role: pb::NodeRole) -> Option<NodeRole> {
        match role {
            pb::NodeRole::Edge => Some(NodeRole::Edge),
            pb::NodeRole::Executor => Some(NodeRole::Executor),
            pb::NodeRole::Dev => Some(NodeRole::Dev),
            pb::NodeRole::Unspecified => None,
        }
    }
}

impl std::fmt::Display for NodeRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_survives_the_wire_and_keeps_its_json_spelling() {
        for role in [NodeRole::Edge, NodeRole::Executor, NodeRole::Dev] {
            assert_eq!(NodeRole::from_pb(role.to_pb()), Some(role));
            assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
        }
        assert_eq!(NodeRole::from_pb(pb::NodeRole::Unspecified), None);
    }
}
