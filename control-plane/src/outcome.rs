//! What applied commands did: the replicated log's outcomes (`quiver-admin`).

pub use quiver_admin::outcome::*;
