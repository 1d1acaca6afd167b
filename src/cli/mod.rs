//! The subcommands of `quiver`.

pub mod bench;
mod bench_catalog;
pub mod bench_control_plane;
pub mod bench_execute_vs_call;
pub mod bench_executor;
pub mod bench_fleet;
pub mod bench_lexicon;
pub mod bench_manifest;
pub mod bench_revisions;
pub mod bench_revocation;
pub mod bench_screening;
pub mod bench_sessions;
pub mod bench_telemetry;
pub mod bench_tenants;
pub mod cluster_key;
pub mod completions;
pub mod control_plane;
pub mod ctl;
pub mod dev;
pub mod edge;
pub mod executor;
mod leases;
pub mod logging;
pub mod mock_upstream;
pub mod probe;
pub mod readiness;
pub mod tokens;
