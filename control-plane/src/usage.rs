//! Budget leases and usage reports (`quiver-admin`).

pub use quiver_admin::usage::*;
