//! The subcommands of `quiver`.

pub mod bench;
pub mod cluster_key;
pub mod completions;
mod console_link;
pub mod control_plane;
pub mod ctl;
pub mod dev;
pub mod edge;
pub mod executor;
pub mod logging;
pub mod mock_upstream;
pub mod probe;
pub mod readiness;
mod reports;
mod serving;
pub mod tokens;
