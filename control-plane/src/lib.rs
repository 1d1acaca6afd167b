//! Quiver's source of truth: a Raft-replicated control plane holding the
//! upstream registry, the discovered tool catalogue and its manifest versions,
//! tenants and their policy, and a bounded drift/admin event log.
//!
//! - [`node::ControlPlaneNode`] wires one member together: redb-backed Raft
//!   log and snapshots ([`raft`]), writes and linearizable reads
//!   ([`replica`]), gRPC for Raft and for the `ControlPlane` service, discovery
//!   while it leads.
//! - [`admin`] is the operator API (versioned requests, one typed answer per
//!   operation); [`client::AdminClient`] is its client (`quiver ctl`).
//! - [`state`] applies [`command`]s purely; each gives an [`outcome`].
//! - [`watcher`] feeds an edge's or executor's [`ManifestStore`] from the
//!   `WatchManifest` stream.
//! - [`Discovery`] with a [`LocalCatalogue`] serves a node with no control plane.
//! - [`cluster_key`] seals tenants' upstream credentials on the leader;
//!   [`sealed_secrets`] opens them where a connection is made for a tenant.

// openraft's error types (`StorageError`, `RaftError`) are large and not ours
// to shrink; boxing them would only move the cost to every call site.
#![allow(clippy::result_large_err)]

pub mod admin;
pub mod audit_log;
pub mod backup;
mod backup_schedule;
pub mod client;
pub mod cluster_key;
pub mod command;
pub mod discovery;
mod error_chain;
pub mod fleet;
mod grants;
mod leader_discovery;
pub mod manifest_store;
pub mod node;
mod node_metrics;
/// The role of a node in the fleet (the type lives in `quiver-proto`: etcd
/// records carry it too).
pub mod node_role {
    pub use quiver_proto::node_role::NodeRole;
}
mod operator;
pub mod outcome;
mod periodic;
pub mod raft;
pub mod replica;
mod rescreen;
pub mod sealed_secrets;
mod service;
pub mod state;
pub mod tenant;
pub mod usage;
pub mod watcher;

pub use discovery::{Discovery, DiscoverySink};
pub use manifest_store::{LocalCatalogue, ManifestStore};
pub use node::{ControlPlaneNode, NodeConfig, RaftTuning, StartError};
