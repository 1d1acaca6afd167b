//! What can go wrong talking to an upstream.

use std::time::Duration;

/// An upstream failure, worded for the operator; the edge redacts before a client sees it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// No upstream has this id.
    #[error("unknown upstream `{0}`")]
    Unknown(String),
    /// The upstream could not be reached; nothing was sent.
    #[error("upstream `{id}` is unavailable: {reason}")]
    Unavailable {
        /// Upstream id.
        id: String,
        /// Why (last connection error).
        reason: String,
    },
    /// A per-tenant upstream, and the calling tenant holds no secret of a
    /// name it references; nothing was sent.
    #[error(
        "upstream `{id}` needs tenant `{tenant}`'s secret `{name}`, which is not set; nothing was sent (an operator sets it with `quiver ctl secret set --tenant {tenant} {name}`)"
    )]
    MissingTenantSecret {
        /// Upstream id.
        id: String,
        /// The calling tenant.
        tenant: String,
        /// The secret's name.
        name: String,
    },
    /// An upstream behind OAuth where a person grants access, and nobody
    /// granted it for the calling tenant yet (or the grant was withdrawn);
    /// nothing was sent.
    #[error(
        "upstream `{id}` needs an OAuth authorization for tenant `{tenant}`, which nobody granted yet; nothing was sent (an operator gets the link with `quiver ctl upstream authorize {id} --tenant {tenant}`)"
    )]
    NotAuthorized {
        /// Upstream id.
        id: String,
        /// The calling tenant.
        tenant: String,
    },
    /// A per-tenant upstream whose credentials cannot be had here (no
    /// cluster key, no tenant named); nothing was sent.
    #[error("upstream `{id}` takes per-tenant credentials: {reason}; nothing was sent")]
    CredentialsUnavailable {
        /// Upstream id.
        id: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The connection broke after the call was sent: it may or may not have run.
    #[error(
        "upstream `{id}` connection lost during the call; it may or may not have run and was not retried"
    )]
    LostDuringCall {
        /// Upstream id.
        id: String,
    },
    /// The call did not finish in time (a cancellation was sent upstream).
    #[error(
        "upstream `{id}` did not answer within {timeout:?}; the call was cancelled and not retried"
    )]
    Timeout {
        /// Upstream id.
        id: String,
        /// The limit.
        timeout: Duration,
    },
    /// The circuit breaker is open after repeated failures; nothing was sent.
    #[error(
        "upstream `{id}` is failing; calls are paused for {retry_in:?} (circuit breaker open), nothing was sent"
    )]
    CircuitOpen {
        /// Upstream id.
        id: String,
        /// Time until the next probe call is allowed.
        retry_in: std::time::Duration,
    },
    /// The caller cancelled the call.
    #[error("call to upstream `{id}` was cancelled by the caller")]
    Cancelled {
        /// Upstream id.
        id: String,
    },
    /// The gateway's policy refused the call (a rate limit or the budget);
    /// nothing was sent.
    #[error("call to upstream `{id}` refused: {reason}; nothing was sent")]
    Refused {
        /// Upstream id.
        id: String,
        /// Which limit, and when to retry if waiting helps.
        reason: String,
    },
    /// The upstream answered with a JSON-RPC error.
    #[error("upstream `{id}` returned an error: {message}")]
    Remote {
        /// Upstream id.
        id: String,
        /// JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
        /// Its `data`, kept only where the protocol gives it a meaning the
        /// client needs: the capabilities a `-32021` requires, the URI of a
        /// resource that was not found.
        data: Option<Box<serde_json::Value>>,
    },
    /// A task the upstream made of the call (SEP-2663) ended as failed: a
    /// protocol-level failure, not a tool's error result.
    #[error("upstream `{id}`'s task failed: {message}")]
    TaskFailed {
        /// Upstream id.
        id: String,
        /// The JSON-RPC code of the task's error.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The upstream (behind OAuth) refused the call for want of
    /// authorization or scope, and a new grant did not help; the call did
    /// not run.
    #[error(
        "upstream `{id}` refused the call for want of authorization ({reason}); it did not run"
    )]
    Unauthorized {
        /// Upstream id.
        id: String,
        /// What it asked for (its `WWW-Authenticate` challenge), or why no
        /// grant could be had.
        reason: String,
    },
    /// The upstream answered with something that is not a valid response.
    #[error("upstream `{id}` sent an unexpected response: {detail}")]
    Protocol {
        /// Upstream id.
        id: String,
        /// What was wrong.
        detail: String,
    },
}

impl UpstreamError {
    /// A short, fixed name of the failure (`error.type` in telemetry): the
    /// JSON-RPC code of a remote error, else the variant's name.
    pub fn kind(&self) -> String {
        let kind = match self {
            UpstreamError::Unknown(_) => "unknown_upstream",
            UpstreamError::Unavailable { .. } => "unavailable",
            UpstreamError::MissingTenantSecret { .. } => "missing_tenant_secret",
            UpstreamError::NotAuthorized { .. } => "not_authorized",
            UpstreamError::CredentialsUnavailable { .. } => "credentials_unavailable",
            UpstreamError::LostDuringCall { .. } => "lost_during_call",
            UpstreamError::Timeout { .. } => "timeout",
            UpstreamError::CircuitOpen { .. } => "circuit_open",
            UpstreamError::Cancelled { .. } => "cancelled",
            UpstreamError::Refused { .. } => "refused",
            UpstreamError::Remote { code, .. } => return code.to_string(),
            UpstreamError::TaskFailed { .. } => "task_failed",
            UpstreamError::Unauthorized { .. } => "unauthorized",
            UpstreamError::Protocol { .. } => "protocol",
        };
        kind.to_string()
    }
}
