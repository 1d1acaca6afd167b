//! Worker processes: the sandboxed side of the executor. A worker runs one
//! script at a time in a fresh JS runtime and talks to the host only through
//! length-prefixed frames on stdin/stdout (the worker protocol, [`crate::ipc`]).

pub mod forking;
mod host_link;
pub mod isolation;
mod worker_loop;

pub use worker_loop::{
    WorkerError, run_worker, run_worker_on, run_worker_probing, run_worker_with,
};
