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
}

impl ScriptRunner {
    /// A runner over `pool` with default per-execution `limits`.
    pub fn new(pool: Arc<WorkerPool>, limits: Limits) -> ScriptRunner {
        ScriptRunner { pool, limits }
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
        limits: Option<&Limits>,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, ExecuteError> {
        let limits = match limits {
            Some(asked) => self.limits.tightened_by(asked),
            None => self.limits,
        };
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
