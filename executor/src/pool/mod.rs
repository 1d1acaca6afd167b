//! The pool of worker processes: spawned with a cleared environment and only
//! the IPC pipes, reused for a bounded number of executions, replaced when in
//! doubt, reaped when idle.

mod fair_admission;
pub mod script_context;
mod worker_pool;
mod worker_process;

pub use fair_admission::{Owner, Refusal};
pub use script_context::{ResourceOp, ScriptContext, StashOp, names_in};
pub use worker_pool::{PoolConfig, PoolError, PoolStats, Retirement, WorkerPool};
pub use worker_process::{
    DEADLINE_GRACE, SNAPSHOT_FROM_HOST_FLAG, WorkerCommand, WorkerFault, WorkerProcess,
};
