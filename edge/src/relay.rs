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
        ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
        InputResponses, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
        ProgressToken,
    },
    service::{Peer, RequestContext},
};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use crate::{
    input_required::{Ask, AskClient, TaskTicketSlot, UpstreamTaskSignal},
    revision::is_stateless,
};

/// The calling client of one tool call.
pub struct SessionRelay {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    /// The least severe log message relayed; `None` relays none.
    log_level: Option<LoggingLevel>,
    /// For a stateless client, or a call that may become a task: where to
    /// ask the client things (the call is parked and the client answers
    /// `input_required`, or the task asks and the client answers
    /// `tasks/update`).
    ask: Option<AskClient>,
    /// Told when the upstream makes a task of the call.
    upstream_task: Option<UpstreamTaskSignal>,
    /// Told when the call becomes a task of this edge.
    ticket: Option<TaskTicketSlot>,
    /// What the client said it can do (for a stateless one, in `_meta`).
    capabilities: Option<ClientCapabilities>,
}

impl SessionRelay {
    /// Relays to the client that sent the request of `context`: progress
    /// only if it asked for it with a token; log messages as its protocol
    /// says (every one in a session, those at the `_meta` `logLevel` or
    /// above in a stateless request); questions as server-to-client requests
    /// in a session, as `input_required` to a stateless client or as a
    /// task's `inputRequests` (whoever put an [`AskClient`] in the request).
    pub fn for_request(context: &RequestContext<RoleServer>) -> SessionRelay {
        let stateless = is_stateless(context);
        let log_level = if stateless {
            context.meta.log_level()
        } else {
            Some(LoggingLevel::Debug)
        };
        SessionRelay {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            log_level,
            ask: context.extensions.get::<AskClient>().cloned(),
            upstream_task: context.extensions.get::<UpstreamTaskSignal>().cloned(),
            ticket: context.extensions.get::<TaskTicketSlot>().cloned(),
            capabilities: context.client_capabilities(),
        }
    }

    /// Asks a stateless client `requests` (checked against what it said it
    /// can do) and waits for its answers.
    async fn ask(
        &self,
        ask: &AskClient,
        requests: InputRequests,
    ) -> Result<InputResponses, ErrorData> {
        for request in requests.values() {
            if let Some(missing) = self.missing_capability(request) {
                return Err(ErrorData::missing_required_client_capability(missing));
            }
        }
        let (answer, answered) = oneshot::channel();
        ask.0
            .send(Ask { requests, answer })
            .await
            .map_err(|_| relay_error("input_required", "the call is no longer waiting"))?;
        answered
            .await
            .map_err(|_| relay_error("input_required", "the client did not come back in time"))?
    }

    /// What a stateless client must have declared for `request`, when it did not.
    fn missing_capability(&self, request: &InputRequest) -> Option<ClientCapabilities> {
        let caps = self.capabilities.clone().unwrap_or_default();
        let mut missing = ClientCapabilities::default();
        match request {
            InputRequest::CreateMessage(_) if caps.sampling.is_none() => {
                missing.sampling = Some(Default::default());
            }
            InputRequest::Elicitation(_) if caps.elicitation.is_none() => {
                missing.elicitation = Some(Default::default());
            }
            InputRequest::ListRoots(_) if caps.roots.is_none() => {
                missing.roots = Some(Default::default());
            }
            _ => return None,
        }
        Some(missing)
    }

    /// One question to a stateless client, its answer as `T`.
    async fn ask_one<T: DeserializeOwned>(
        &self,
        ask: &AskClient,
        request: InputRequest,
    ) -> Result<T, ErrorData> {
        let key = "quiver".to_string();
        let mut answers = self
            .ask(ask, InputRequests::from([(key.clone(), request)]))
            .await?;
        let answer = answers
            .remove(&key)
            .ok_or_else(|| relay_error("input_required", "no answer"))?;
        serde_json::from_value(answer).map_err(|e| relay_error("input_required", e))
    }

    /// Questions to a client in a session: one server-to-client request each.
    async fn ask_session(&self, requests: InputRequests) -> Result<InputResponses, ErrorData> {
        let mut answers = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::CreateMessage(r) => {
                    serde_json::to_value(self.create_message(r.params).await?)
                }
                InputRequest::Elicitation(r) => serde_json::to_value(self.elicit(r.params).await?),
                InputRequest::ListRoots(_) => serde_json::to_value(
                    self.peer
                        .list_roots()
                        .await
                        .map_err(|e| relay_error("roots/list", e))?,
                ),
                _ => return Err(relay_error("input", "a request this edge does not know")),
            };
            answers.insert(key, answer.map_err(|e| relay_error("input", e))?);
        }
        Ok(answers)
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
            if let Some(ask) = &self.ask {
                let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                return self.ask_one(ask, request).await;
            }
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
            if let Some(ask) = &self.ask {
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                return self.ask_one(ask, request).await;
            }
            self.peer
                .create_elicitation(params)
                .await
                .map_err(|e| relay_error("elicitation", e))
        })
    }

    fn input(&self, requests: InputRequests) -> SinkFuture<'_, Result<InputResponses, ErrorData>> {
        Box::pin(async move {
            match &self.ask {
                Some(ask) => self.ask(ask, requests).await,
                None => self.ask_session(requests).await,
            }
        })
    }

    fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities.clone()
    }

    fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level
    }

    fn task_started(&self) {
        if let Some(signal) = &self.upstream_task {
            signal.0.send_replace(true);
        }
    }

    fn became_task(
        &self,
    ) -> Option<tokio::sync::watch::Receiver<Option<quiver_fleet::task_records::TaskTicket>>> {
        self.ticket.as_ref().map(|slot| slot.0.subscribe())
    }

    fn live(&self) -> bool {
        let caps = self.capabilities.as_ref();
        // A call that may become a task streams, so that its executor can
        // be told it did.
        self.ticket.is_some()
            || self.progress_token.is_some()
            || caps.is_some_and(|c| c.sampling.is_some() || c.elicitation.is_some())
    }
}
