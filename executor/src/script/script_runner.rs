//! Validates a script, runs it on a pooled worker, and answers the worker's
//! requests through the caller's [`ScriptContext`].

use std::{sync::Arc, time::Instant};

use quiver_contract::{ExecuteError, Limits, ScriptOutcome, ValidationErrors};
use tokio_util::sync::CancellationToken;

use crate::{
    pool::ScriptContext,
    pool::{Owner, PoolError, WorkerPool},
    sandbox::validate::{ValidationLimits, validate},
    script::ExecutionEnd,
};

/// Runs scripts for callers.
pub struct ScriptRunner {
    pool: Arc<WorkerPool>,
    limits: Limits,
    /// The longest wall time a script that may run as a task is granted.
    task_wall_max: u64,
}

/// The longest wall time a script that may run as a task is granted unless
/// the operator says otherwise: five minutes.
pub const DEFAULT_TASK_WALL_MAX_MS: u64 = 300_000;

impl ScriptRunner {
    /// A runner over `pool` with default per-execution `limits`.
    pub fn new(pool: Arc<WorkerPool>, limits: Limits) -> ScriptRunner {
        ScriptRunner {
            pool,
            limits,
            task_wall_max: DEFAULT_TASK_WALL_MAX_MS,
        }
    }

    /// The same runner, granting a script that may run as a task at most
    /// `ms` of wall time (never less than the usual wall time).
    pub fn with_task_wall_max(mut self, ms: u64) -> ScriptRunner {
        self.task_wall_max = ms;
        self
    }

    /// The limits of a script that asked for `task_wall_ms` as a possible
    /// task: the usual ones, with the wall time raised to what it asked, up
    /// to the maximum for tasks.
    pub fn limits_for(&self, task_wall_ms: Option<u64>) -> Limits {
        let mut limits = self.limits;
        if let Some(asked) = task_wall_ms {
            limits.wall_ms = limits.wall_ms.max(asked.min(self.task_wall_max));
        }
        limits
    }

    /// The limits every execution gets.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The worker pool.
    pub fn pool(&self) -> &Arc<WorkerPool> {
        &self.pool
    }

    /// Validates and runs `code` for `owner` against `context`; cancelling
    /// `cancel` stops it and frees its worker.
    pub async fn execute(
        &self,
        owner: &Owner,
        code: &str,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        self.execute_within(owner, code, None, context, cancel)
            .await
    }

    /// Like [`ScriptRunner::execute_within`], for a script that may run as
    /// a task with `task_wall_ms` of wall time (see [`ScriptRunner::limits_for`]).
    pub async fn execute_as_task(
        &self,
        owner: &Owner,
        code: &str,
        (limits, task_wall_ms): (Option<&Limits>, Option<u64>),
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        let base = self.limits_for(task_wall_ms);
        let limits = limits.map_or(base, |asked| base.tightened_by(asked));
        self.run_counted(owner, code, limits, context, cancel).await
    }

    /// Like [`ScriptRunner::execute`], under `limits` where they are tighter
    /// than the runner's own. Every execution is counted by how it ended
    /// (see [`ExecutionEnd`]).
    pub async fn execute_within(
        &self,
        owner: &Owner,
        code: &str,
        limits: Option<&Limits>,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        let limits = match limits {
            Some(asked) => self.limits.tightened_by(asked),
            None => self.limits,
        };
        self.run_counted(owner, code, limits, context, cancel).await
    }

    /// Runs under `limits`, counting how the execution ended.
    async fn run_counted(
        &self,
        owner: &Owner,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        let started = Instant::now();
        let result = self
            .validate_and_run(owner, code, limits, context, cancel)
            .await;
        ExecutionEnd::of(&result).record(&owner.tenant, started.elapsed());
        result
    }

    async fn validate_and_run(
        &self,
        owner: &Owner,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        let validation = ValidationLimits {
            max_code_bytes: usize::try_from(limits.code_bytes).unwrap_or(usize::MAX),
            ..ValidationLimits::default()
        };
        // Parsing may take milliseconds on hostile input: keep it off the async threads.
        let source = code.to_string();
        let checked = tokio::task::spawn_blocking(move || validate(&source, &validation))
            .await
            .unwrap_or_else(|_| {
                Err(ValidationErrors::internal(
                    "the validator stopped unexpectedly",
                ))
            });
        checked.map_err(ExecuteError::Rejected)?;
        self.pool
            .run_for(owner, code, limits, context, cancel)
            .await
            .map_err(execute_error)
    }
}

/// A pool failure as the caller is told it.
fn execute_error(error: PoolError) -> ExecuteError {
    match error {
        PoolError::Busy(refusal) => ExecuteError::Busy {
            reason: refusal.to_string(),
        },
        PoolError::Worker(fault) => ExecuteError::Failed {
            reason: fault.to_string(),
        },
    }
}
