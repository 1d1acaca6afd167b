//! Validates a script, runs it on a pooled worker, and answers the worker's
//! requests through the caller's [`ScriptContext`].

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{
    pool::{Owner, PoolError, WorkerPool},
    sandbox::validate::{ValidationErrors, ValidationLimits, validate},
    script::context::ScriptContext,
    worker::protocol::{Limits, Outcome},
};

/// Why a script did not run to an outcome.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// Static validation refused it; nothing ran.
    #[error("the script was rejected before running:\n{0}")]
    Rejected(ValidationErrors),
    /// Every worker is busy and the queue is full, the wait ran out, or a worker failed.
    #[error("{0}")]
    Pool(#[from] PoolError),
    /// A remote executor could not be reached or refused the request.
    #[error("executor: {0}")]
    Remote(String),
}

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
    ) -> Result<Outcome, ExecuteError> {
        let validation = ValidationLimits {
            max_code_bytes: self.limits.code_bytes as usize,
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
        Ok(self
            .pool
            .run_for(owner, code, self.limits, context, cancel)
            .await?)
    }
}
