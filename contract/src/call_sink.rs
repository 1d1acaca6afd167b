//! Where an upstream's messages about one call go ([`CallSink`]), usually
//! the MCP session of the client that made the call; the edge implements it
//! and the MCP client calls it.
#![allow(deprecated)] // sampling and logging are current in the protocol versions served

use futures::future::BoxFuture;
use rmcp::{
    ErrorData,
    model::{
        ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ErrorCode, InputRequest, InputRequests, InputResponses, LoggingLevel,
        LoggingMessageNotificationParam,
    },
};

/// A boxed future returned by [`CallSink`] methods.
pub type SinkFuture<'a, T> = BoxFuture<'a, T>;

/// Where an upstream's messages about one call go: usually the MCP session of the
/// client that made the call. Implemented by the edge.
pub trait CallSink: Send + Sync {
    /// Progress of the call (`progress`, `total`, `message` as the upstream sent them).
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> SinkFuture<'_, ()>;
    /// A log message the upstream emitted while the call ran.
    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()>;
    /// A sampling request (`sampling/createMessage`) the upstream made while the call ran.
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>>;
    /// An elicitation request the upstream made while the call ran.
    fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> SinkFuture<'_, Result<ElicitResult, ErrorData>>;

    /// Answers what an upstream asked for before it could go on (the
    /// requests of an MCP 2026-07-28 `input_required` result), each answer
    /// under its request's key. The default asks the client one request at
    /// a time through [`CallSink::create_message`] and [`CallSink::elicit`];
    /// it offers no roots.
    fn input(&self, requests: InputRequests) -> SinkFuture<'_, Result<InputResponses, ErrorData>> {
        Box::pin(async move {
            let mut responses = InputResponses::new();
            for (key, request) in requests {
                let answer = match request {
                    InputRequest::CreateMessage(request) => {
                        serde_json::to_value(self.create_message(request.params).await?)
                    }
                    InputRequest::Elicitation(request) => {
                        serde_json::to_value(self.elicit(request.params).await?)
                    }
                    _ => {
                        return Err(ErrorData::new(
                            ErrorCode::METHOD_NOT_FOUND,
                            "the client of this call offers no roots",
                            None,
                        ));
                    }
                };
                let answer = answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                responses.insert(key, answer);
            }
            Ok(responses)
        })
    }

    /// Whether what the upstream sends during the call must reach the
    /// client while the call runs: progress it asked for, or requests
    /// (sampling, elicitation) it can answer. When it need not, a remote
    /// executor takes the cheaper unary hop and returns the call's log
    /// messages with its result.
    fn live(&self) -> bool {
        true
    }

    /// The capabilities of the client the call is made for, when known:
    /// an upstream of MCP 2026-07-28 gets them in the request's `_meta`, so
    /// it asks only for what that client can give.
    fn client_capabilities(&self) -> Option<ClientCapabilities> {
        None
    }

    /// The least severe log message the client of the call wants (sent to an
    /// upstream of MCP 2026-07-28 as the request's `_meta.logLevel`); `None`:
    /// none.
    fn log_level(&self) -> Option<LoggingLevel> {
        Some(LoggingLevel::Info)
    }

    /// The upstream made a task of the call (SEP-2663); it is followed to
    /// its end all the same. A caller that keeps tasks of its own may make
    /// the call one now. The default ignores it.
    fn task_started(&self) {}

    /// Turns to `Some` when the caller made the call a task of its own
    /// (SEP-2663): whoever runs the call for it then keeps it running when
    /// the caller goes, and records its end. `None` (the default): the call
    /// never becomes one.
    fn became_task(&self) -> Option<tokio::sync::watch::Receiver<Option<TaskTicket>>> {
        None
    }
}

/// What the caller of a call that became a task hands whoever runs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskTicket {
    /// The task's id.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
}
