//! Worker processes: the sandboxed side of the executor. A worker runs one
//! script at a time in a fresh JS runtime and talks to the host only through
//! length-prefixed frames on stdin/stdout ([`ipc`], [`protocol`]).

mod host_link;
pub mod ipc;
pub mod isolation;
pub mod protocol;
mod runner;

pub use runner::{run_worker, run_worker_on, run_worker_probing, run_worker_with};
