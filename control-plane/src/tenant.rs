//! Tenants and the changes operators make to them (`quiver-admin`).

pub use quiver_admin::tenant::*;
