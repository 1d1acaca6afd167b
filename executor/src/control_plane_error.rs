//! Why the control plane did not take what an executor reports (a budget
//! lease, an audit shipment): the error of [`crate::metering::LeaseSource`]
//! and [`crate::audit::AuditShipper`]. It names what failed; it does not
//! decide whether to retry.

/// Why the control plane did not take a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlPlaneError {
    /// The control plane could not be reached, or refused or failed the request.
    #[error(transparent)]
    Request(Box<dyn std::error::Error + Send + Sync>),
    /// The control plane answered, but not to what was asked.
    #[error("unexpected answer to {request}: {answer}")]
    UnexpectedAnswer {
        /// What was asked (`a budget lease`, `an audit append`).
        request: &'static str,
        /// The answer, as the control plane gave it.
        answer: String,
    },
}

impl ControlPlaneError {
    /// The request failed with `error`.
    pub fn request(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ControlPlaneError::Request(error.into())
    }
}
