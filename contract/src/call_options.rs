//! What a caller can say about one call: its time limit, its cancellation and
//! where the upstream's messages about it go. The call itself is `Upstream`'s.

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::call_sink::CallSink;

/// Per-call options.
#[derive(Clone)]
pub struct CallOptions {
    /// Time limit (default: the upstream's configured `call_timeout_ms`).
    pub timeout: Option<Duration>,
    /// Cancelled by the caller (e.g. the MCP client sent `notifications/cancelled`).
    pub cancel: CancellationToken,
    /// Where progress, logs and server-to-client requests of this call go.
    pub sink: Option<Arc<dyn CallSink>>,
    /// Answers the caller gives with its first request (MCP 2026-07-28
    /// `inputResponses`), for an upstream that asks without keeping state.
    pub input_responses: Option<rmcp::model::InputResponses>,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            timeout: None,
            cancel: CancellationToken::new(),
            sink: None,
            input_responses: None,
        }
    }
}
