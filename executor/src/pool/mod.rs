//! The pool of worker processes: spawned with a cleared environment and only
//! the IPC pipes, reused for a bounded number of executions, replaced when in
//! doubt, reaped when idle.

mod worker_pool;
mod worker_process;

pub use worker_pool::{PoolConfig, PoolError, PoolStats, WorkerPool};
pub use worker_process::{WorkerCommand, WorkerFault, WorkerProcess};
