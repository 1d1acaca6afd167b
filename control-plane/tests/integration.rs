//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

#[path = "../../tests/support/wait.rs"]
#[expect(dead_code, reason = "this crate waits only with the metrics shown")]
mod wait;

mod node_metrics;
mod periodic_backups;
mod simulated_network;
