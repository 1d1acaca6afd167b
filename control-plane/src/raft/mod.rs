//! Replication: openraft's type configuration, the redb-backed log and state
//! machine, and the gRPC transport between control-plane nodes.

pub mod log_store;
pub mod network;
pub mod state_machine;
pub mod store_error;

use std::io::Cursor;

use crate::{command::Envelope, outcome::Outcome};

/// A control-plane node id (operator-chosen, stable for the node's lifetime).
pub use quiver_admin::NodeId;

openraft::declare_raft_types!(
    /// openraft's types for the control plane.
    pub TypeConfig:
        D = Envelope,
        R = Outcome,
);

/// The Raft handle of a control-plane node.
pub type Raft = openraft::Raft<TypeConfig>;
/// A member's address as kept in the membership config (`host:port` of its gRPC).
pub type Node = openraft::BasicNode;

/// openraft's error types, specialised.
pub mod typ {
    use super::{Node, NodeId, TypeConfig};

    /// A Raft API error.
    pub type RaftError<E = openraft::error::Infallible> = openraft::error::RaftError<NodeId, E>;
    /// A Raft RPC error.
    pub type RpcError<E = openraft::error::Infallible> =
        openraft::error::RPCError<NodeId, Node, RaftError<E>>;
    /// Refusal of a write.
    pub type ClientWriteError = openraft::error::ClientWriteError<NodeId, Node>;
    /// Storage failure.
    pub type StorageError = openraft::StorageError<NodeId>;
    /// A log entry.
    pub type Entry = openraft::Entry<TypeConfig>;
}
