//! Quiver's source of truth: the versioned manifest and the discovery that feeds it.
//!
//! This crate owns what every edge and executor must agree on. Today it runs in
//! one process ([`ManifestStore`] + [`Discovery`]); the Raft-replicated service
//! grows here. It never serves clients or runs tools itself.

mod discovery;
mod manifest_store;

pub use discovery::Discovery;
pub use manifest_store::ManifestStore;
