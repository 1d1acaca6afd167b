//! Relays what an upstream sends during a call back to the MCP session that
//! made the call: progress (under the client's own token), log messages,
//! sampling and elicitation requests. A request of the stateless protocol
//! (2026-07-28) hears log messages only at or above the `logLevel` its
//! `_meta` names, and none when it names none.
#![allow(deprecated)] // sampling and logging are current in 2025-06-18 and 2025-11-25

use quiver_contract::{CallSink, SinkFuture};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    },
    service::{Peer, RequestContext},
};

use crate::session::is_stateless;

/// The calling session of one tool call.
pub struct SessionRelay {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    /// The least severe log message relayed; `None` relays none.
    log_level: Option<LoggingLevel>,
}

impl SessionRelay {
    /// Relays to the client that sent the request of `context`: progress
    /// only if it asked for it with a token; log messages as its protocol
    /// says (every one in a session, those at the `_meta` `logLevel` or
    /// above in a stateless request).
    pub fn for_request(context: &RequestContext<RoleServer>) -> SessionRelay {
        let log_level = if is_stateless(context) {
            context.meta.log_level()
        } else {
            Some(LoggingLevel::Debug)
        };
        SessionRelay {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            log_level,
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
            if self
                .log_level
                .is_some_and(|least| params.level as u8 >= least as u8)
            {
                let _ = self.peer.notify_logging_message(params).await;
            }
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
