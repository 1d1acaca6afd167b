//! `Execute` over gRPC: one script run for the caller's tenant on the edge's
//! [`Scripts`], told to the client as a stream of events. What the script's
//! tool calls report arrives while it runs; console output and the outcome
//! when it ends. It never decides what the script may call: the view does.
#![allow(deprecated)] // logging and sampling are current in the protocol versions relayed here

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::Stream;
use quiver_contract::{
    CallOrigin, CallSink, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts, SinkFuture, wire,
};
use quiver_proto::pb::{
    self, ExecuteEvent, ExecuteLog, ExecuteProgress, ExecuteResult, GatewayExecuteRequest,
    LogLevel, LogSource, execute_event::Event,
};
use quiver_view::redact::redact_for_caller;
use rmcp::{
    ErrorData,
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        LoggingLevel, LoggingMessageNotificationParam,
    },
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use tonic::Status;
use tracing::Instrument as _;

/// Events buffered for a client that reads slower than the script's tools
/// report; beyond it, relaying waits for the client.
const BUFFERED_EVENTS: usize = 64;

/// Longest `stash_id`, bytes.
const MAX_STASH_ID: usize = 64;

/// The events of one run, as the client reads them: ends after the result
/// (or the status that replaces it). Dropping it — the client cancelled or
/// went away — stops the script.
pub struct ExecuteEvents {
    events: mpsc::Receiver<Result<ExecuteEvent, Status>>,
    ended: bool,
    _stop: DropGuard,
}

impl Stream for ExecuteEvents {
    type Item = Result<ExecuteEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let next = self.events.poll_recv(cx);
        if let Poll::Ready(Some(item)) = &next {
            // Nothing follows the result: a tool's late progress (relayed
            // for a while after its call ended) must not trail it.
            let last = match item {
                Ok(event) => matches!(event.event, Some(Event::Result(_))),
                Err(_) => true,
            };
            self.ended = last;
        }
        next
    }
}

/// Starts `request` for `tenant` (its calls made by `origin`) on `scripts`, or refuses it (INVALID_ARGUMENT) before anything runs.
pub(crate) fn start(
    scripts: Arc<dyn Scripts>,
    tenant: &str,
    origin: CallOrigin,
    request: GatewayExecuteRequest,
) -> Result<ExecuteEvents, Status> {
    let session = stash_session(&request.stash_id)?;
    let code = request.code;
    let mut script = ExecuteRequest::new(tenant, session, code.as_str()).from_origin(origin);
    if let Some(limits) = &request.limits {
        script = script.with_limits(wire::limits_from_pb(limits));
    }
    let (sender, events) = mpsc::channel(BUFFERED_EVENTS);
    let cancel = CancellationToken::new();
    let stop = cancel.clone().drop_guard();
    let relay = Arc::new(StreamRelay {
        events: sender.clone(),
    });
    tokio::spawn(
        async move {
            let outcome = scripts.execute(script, cancel.clone(), Some(relay)).await;
            if cancel.is_cancelled() {
                return;
            }
            let console = outcome.as_ref().map(|o| o.logs.clone()).unwrap_or_default();
            for line in console {
                let log = ExecuteLog {
                    source: LogSource::Console.into(),
                    level: LogLevel::Info.into(),
                    logger: String::new(),
                    message: line,
                };
                if sender.send(Ok(event(Event::Log(log)))).await.is_err() {
                    return;
                }
            }
            let _ = sender.send(result_event(outcome, &code)).await;
        }
        .instrument(tracing::Span::current()),
    );
    Ok(ExecuteEvents {
        events,
        ended: false,
        _stop: stop,
    })
}

/// The stash session of a run: `grpc-<stash_id>` when the caller names one
/// (shared by the tenant's runs naming it; the executor keys stashes by
/// tenant too, so another tenant's id reaches another stash), else
/// `grpc-<random>`, a stash of this run alone.
fn stash_session(stash_id: &str) -> Result<String, Status> {
    if stash_id.is_empty() {
        return Ok(format!("grpc-{}", uuid::Uuid::new_v4().simple()));
    }
    let valid = stash_id.len() <= MAX_STASH_ID
        && stash_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !valid {
        return Err(Status::invalid_argument(format!(
            "stash_id must be 1 to {MAX_STASH_ID} characters of A-Z a-z 0-9 _ . -; leave it empty for a stash of this run alone"
        )));
    }
    Ok(format!("grpc-{stash_id}"))
}

fn event(event: Event) -> ExecuteEvent {
    ExecuteEvent { event: Some(event) }
}

/// The last event of a run: its outcome (a rejection included), or the
/// status of a run that did not get that far (busy, failed, unreachable),
/// redacted as the executor's wire redacts it. A script's own error message
/// keeps what the script itself wrote.
fn result_event(
    outcome: Result<ScriptOutcome, ExecuteError>,
    code: &str,
) -> Result<ExecuteEvent, Status> {
    let answer = wire::result_to_pb(outcome)?;
    let succeeded = answer.error_kind() == pb::ScriptErrorKind::Unspecified;
    let value_json = match (succeeded, answer.result_json.is_empty()) {
        (true, true) => "null".to_string(),
        (true, false) => answer.result_json,
        (false, _) => String::new(),
    };
    Ok(event(Event::Result(ExecuteResult {
        value_json,
        logs: answer.logs,
        truncated: answer.truncated,
        error_kind: answer.error_kind,
        error: redact_for_caller(&answer.error, &Value::String(code.to_string())),
        error_line: answer.error_line,
        violations: answer.violations,
    })))
}

/// What the script's tool calls report, into the client's stream.
struct StreamRelay {
    events: mpsc::Sender<Result<ExecuteEvent, Status>>,
}

impl StreamRelay {
    async fn send(&self, event: Event) {
        // The client may be gone; the run is being stopped then.
        let _ = self.events.send(Ok(self::event(event))).await;
    }
}

/// Sampling and elicitation need a client that can answer; a gRPC stream
/// only listens.
fn cannot_ask(what: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "{what} is not available: this script runs through the gRPC API, whose client cannot be asked"
        ),
        None,
    )
}

impl CallSink for StreamRelay {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> SinkFuture<'_, ()> {
        Box::pin(self.send(Event::Progress(ExecuteProgress {
            progress,
            total,
            message: message.unwrap_or_default(),
        })))
    }

    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()> {
        let message = match params.data {
            Value::String(text) => text,
            other => other.to_string(),
        };
        Box::pin(self.send(Event::Log(ExecuteLog {
            source: LogSource::Tool.into(),
            level: log_level(params.level).into(),
            logger: params.logger.unwrap_or_default(),
            message,
        })))
    }

    fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async { Err(cannot_ask("sampling")) })
    }

    fn elicit(
        &self,
        _params: ElicitRequestParams,
    ) -> SinkFuture<'_, Result<ElicitResult, ErrorData>> {
        Box::pin(async { Err(cannot_ask("elicitation")) })
    }
}

fn log_level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_stash_is_kept_apart_from_mcp_sessions_and_checked() {
        assert_eq!(
            stash_session("nightly-report").unwrap(),
            "grpc-nightly-report"
        );
        let fresh = stash_session("").unwrap();
        assert!(fresh.starts_with("grpc-") && fresh.len() > 20, "{fresh}");
        assert_ne!(fresh, stash_session("").unwrap());
        for bad in ["a/b", "x y", &"z".repeat(MAX_STASH_ID + 1)] {
            let refused = stash_session(bad).unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{bad}");
        }
    }
}
