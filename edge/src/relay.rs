//! Relays what an upstream sends during a call back to the MCP session that
//! made the call: progress (under the client's own token), log messages,
//! sampling and elicitation requests.
#![allow(deprecated)] // sampling and logging are current in 2025-06-18 and 2025-11-25

use quiver_contract::{CallSink, SinkFuture};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    },
    service::Peer,
};

/// The calling session of one tool call.
pub struct SessionRelay {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
}

impl SessionRelay {
    /// Relays to `peer`; progress only if the client asked for it with a token.
    pub fn new(peer: Peer<RoleServer>, progress_token: Option<ProgressToken>) -> SessionRelay {
        SessionRelay {
            peer,
            progress_token,
        }
    }
}

fn relay_error(kind: &str, e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the client did not complete {kind}: {}",
            quiver_view::redact::redact(&e.to_string())
        ),
        None,
    )
}

impl CallSink for SessionRelay {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> SinkFuture<'_, ()> {
        Box::pin(async move {
            if let Some(token) = &self.progress_token {
                let mut params = ProgressNotificationParam::new(token.clone(), progress);
                params.total = total;
                params.message = message;
                let _ = self.peer.notify_progress(params).await;
            }
        })
    }

    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.peer.notify_logging_message(params).await;
        })
    }

    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move {
            self.peer
                .create_message(params)
                .await
                .map_err(|e| relay_error("sampling", e))
        })
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> SinkFuture<'_, Result<ElicitResult, ErrorData>> {
        Box::pin(async move {
            self.peer
                .create_elicitation(params)
                .await
                .map_err(|e| relay_error("elicitation", e))
        })
    }
}
