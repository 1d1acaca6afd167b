//! Why a script did not run to an outcome (as opposed to running and
//! failing, which is a [`crate::ScriptError`] inside the outcome).

use crate::ValidationErrors;

/// Why a script did not run to an outcome.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// Static validation refused it; nothing ran.
    #[error("the script was rejected before running:\n{0}")]
    Rejected(ValidationErrors),
    /// No worker came free within the caller's share; nothing ran. Worth retrying.
    #[error("the executor is busy: {reason}")]
    Busy {
        /// What was refused, in the caller's own terms.
        reason: String,
    },
    /// The worker running it failed or was stopped (it has been replaced).
    #[error("{reason}")]
    Failed {
        /// What happened.
        reason: String,
    },
    /// A remote executor could not be reached, or answered something unreadable.
    #[error("executor: {reason}")]
    Unreachable {
        /// What went wrong.
        reason: String,
    },
}
