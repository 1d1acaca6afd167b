//! Streaming across the edge → executor hop (`CallToolStream`,
//! `ExecuteStream`): what an upstream sends during a call — progress, log
//! messages, sampling and elicitation requests (and so MCP 2026-07-28's
//! `input_required`, which the sink answers through those) — travels back
//! to the edge's session while the call runs, and the client's answers go
//! up.
//!
//! On the executor, [`RelaySink`] is the [`CallSink`] of the call or script:
//! it sends each event down the stream, and each request as a `HopAsk`
//! that waits for the `HopReply` with its id. On the edge, [`drive`] sends
//! the first message, hands every event to the session's sink, answers
//! every ask through it, and returns the final message.
// Sampling and logging are deprecated by SEP-2577 in rmcp's types; they are
// current in the protocol revisions Quiver serves, so they are relayed.
#![allow(deprecated)]

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use futures::Stream;
use quiver_proto::pb::{self, hop_down, hop_up};
use quiver_upstream::{CallSink, SinkFuture};
use rmcp::{
    ErrorData,
    model::{
        ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, LoggingMessageNotificationParam,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

/// What an executor streams back on a hop.
pub type HopDownStream = Pin<Box<dyn Stream<Item = Result<pb::HopDown, Status>> + Send>>;

/// The executor's sink for one streamed call or script.
pub struct RelaySink {
    down: mpsc::Sender<Result<pb::HopDown, Status>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<pb::HopReply>>>,
    next: AtomicU64,
    /// Set when the caller made the call a task (`HopDetach`).
    detached: tokio::sync::watch::Sender<Option<quiver_upstream::TaskTicket>>,
    /// Fired when the caller stops the call (`HopCancel`).
    cancelled: tokio_util::sync::CancellationToken,
}

impl RelaySink {
    /// A sink that streams into `down`, taking the caller's answers from
    /// `up` (the rest of the incoming stream, after its first message).
    pub fn start(
        down: mpsc::Sender<Result<pb::HopDown, Status>>,
        mut up: tonic::Streaming<pb::HopUp>,
    ) -> Arc<RelaySink> {
        let sink = Arc::new(RelaySink {
            down,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            detached: tokio::sync::watch::channel(None).0,
            cancelled: tokio_util::sync::CancellationToken::new(),
        });
        let weak = Arc::downgrade(&sink);
        tokio::spawn(async move {
            while let Ok(Some(message)) = up.message().await {
                let Some(sink) = weak.upgrade() else { return };
                match message.message {
                    Some(hop_up::Message::Reply(reply)) => {
                        let waiting = sink.lock().remove(&reply.id);
                        if let Some(waiting) = waiting {
                            let _ = waiting.send(reply);
                        }
                    }
                    Some(hop_up::Message::Cancel(_)) => sink.cancelled.cancel(),
                    Some(hop_up::Message::Detach(detach)) => {
                        sink.detached
                            .send_replace(Some(quiver_upstream::TaskTicket {
                                id: detach.task_id,
                                tenant: detach.tenant,
                            }));
                    }
                    _ => {}
                }
            }
            // The caller is gone: what still waits for an answer fails.
            if let Some(sink) = weak.upgrade() {
                sink.lock().clear();
            }
        });
        sink
    }

    /// Fired when the caller stops the call.
    pub fn cancelled(&self) -> tokio_util::sync::CancellationToken {
        self.cancelled.clone()
    }

    /// Turns to the task's ticket when the caller makes the call a task.
    pub fn detached(&self) -> tokio::sync::watch::Receiver<Option<quiver_upstream::TaskTicket>> {
        self.detached.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<pb::HopReply>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn send(&self, message: hop_down::Message) {
        // A caller that went away is not an error of the call.
        let _ = self
            .down
            .send(Ok(pb::HopDown {
                message: Some(message),
            }))
            .await;
    }

    async fn ask<P: Serialize, R: DeserializeOwned>(
        &self,
        kind: &str,
        params: &P,
    ) -> Result<R, ErrorData> {
        let params_json = serde_json::to_string(params)
            .map_err(|e| ErrorData::internal_error(format!("encoding {kind}: {e}"), None))?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        self.send(hop_down::Message::Ask(pb::HopAsk {
            id,
            kind: kind.to_string(),
            params_json,
        }))
        .await;
        let reply = rx.await.map_err(|_| {
            ErrorData::internal_error(
                format!("the caller went away before answering the {kind} request"),
                None,
            )
        })?;
        if !reply.error_json.is_empty() {
            return Err(serde_json::from_str(&reply.error_json).unwrap_or_else(|_| {
                ErrorData::internal_error(format!("the client refused the {kind} request"), None)
            }));
        }
        serde_json::from_str(&reply.result_json).map_err(|e| {
            ErrorData::internal_error(
                format!("the client's {kind} answer does not parse: {e}"),
                None,
            )
        })
    }
}

impl CallSink for RelaySink {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> SinkFuture<'_, ()> {
        Box::pin(self.send(hop_down::Message::Progress(pb::HopProgress {
            progress,
            total,
            message,
        })))
    }

    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()> {
        Box::pin(async move {
            if let Ok(json) = serde_json::to_string(&params) {
                self.send(hop_down::Message::LogJson(json)).await;
            }
        })
    }

    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move { self.ask("sampling", &params).await })
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> SinkFuture<'_, Result<ElicitResult, ErrorData>> {
        Box::pin(async move { self.ask("elicitation", &params).await })
    }
}

/// Most log messages a unary hop carries back with its result.
const MOST_COLLECTED_LOGS: usize = 256;
/// Most bytes of them.
const MOST_COLLECTED_LOG_BYTES: usize = 256 * 1024;

/// The executor's sink for a unary hop, whose caller hears nothing while
/// the call runs: it keeps the log messages (at most 256, 256 KiB; later
/// ones are dropped) to return with the result, drops progress (nobody
/// asked for it), and refuses sampling and elicitation as requests the
/// client did not say it can answer (the edge streams when it can).
#[derive(Default)]
pub struct CollectedLogs {
    logs: Mutex<(Vec<String>, usize)>,
}

impl CollectedLogs {
    /// The log messages kept so far, as JSON, oldest first.
    pub fn take(&self) -> Vec<String> {
        let mut held = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        held.1 = 0;
        std::mem::take(&mut held.0)
    }
}

impl CallSink for CollectedLogs {
    fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) -> SinkFuture<'_, ()> {
        Box::pin(async {})
    }

    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()> {
        if let Ok(json) = serde_json::to_string(&params) {
            let mut held = self.logs.lock().unwrap_or_else(|p| p.into_inner());
            if held.0.len() < MOST_COLLECTED_LOGS && held.1 + json.len() <= MOST_COLLECTED_LOG_BYTES
            {
                held.1 += json.len();
                held.0.push(json);
            }
        }
        Box::pin(async {})
    }

    fn create_message(
        &self,
        _: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async {
            let mut missing = ClientCapabilities::default();
            missing.sampling = Some(Default::default());
            Err(ErrorData::missing_required_client_capability(missing))
        })
    }

    fn elicit(&self, _: ElicitRequestParams) -> SinkFuture<'_, Result<ElicitResult, ErrorData>> {
        Box::pin(async {
            let mut missing = ClientCapabilities::default();
            missing.elicitation = Some(Default::default());
            Err(ErrorData::missing_required_client_capability(missing))
        })
    }

    fn live(&self) -> bool {
        false
    }
}

/// Hands the log messages a unary hop brought back to `sink`, in order.
pub async fn replay_logs(sink: &dyn CallSink, logs: &[String]) {
    for log in logs {
        if let Ok(params) = serde_json::from_str(log) {
            sink.log(params).await;
        }
    }
}

/// The reply to `ask`, answered by the session's `sink`.
async fn answer(sink: &dyn CallSink, ask: pb::HopAsk) -> pb::HopReply {
    fn reply<T: Serialize>(id: u64, result: Result<T, ErrorData>) -> pb::HopReply {
        match result {
            Ok(result) => pb::HopReply {
                id,
                result_json: serde_json::to_string(&result).unwrap_or_default(),
                error_json: String::new(),
            },
            Err(error) => pb::HopReply {
                id,
                result_json: String::new(),
                error_json: serde_json::to_string(&error).unwrap_or_default(),
            },
        }
    }
    let id = ask.id;
    let unreadable = |e: serde_json::Error| {
        ErrorData::invalid_params(
            format!("the executor sent unreadable {}: {e}", ask.kind),
            None,
        )
    };
    match ask.kind.as_str() {
        "sampling" => match serde_json::from_str(&ask.params_json) {
            Ok(params) => reply(id, sink.create_message(params).await),
            Err(e) => reply::<CreateMessageResult>(id, Err(unreadable(e))),
        },
        "elicitation" => match serde_json::from_str(&ask.params_json) {
            Ok(params) => reply(id, sink.elicit(params).await),
            Err(e) => reply::<ElicitResult>(id, Err(unreadable(e))),
        },
        other => reply::<()>(
            id,
            Err(ErrorData::invalid_params(
                format!("unknown request kind `{other}` from the executor"),
                None,
            )),
        ),
    }
}

/// The ticket `watched` turns to, once it does; never when there is none.
async fn ticket_issued(
    watched: &mut Option<tokio::sync::watch::Receiver<Option<quiver_upstream::TaskTicket>>>,
) -> quiver_upstream::TaskTicket {
    if let Some(watched) = watched
        && let Ok(issued) = watched.wait_for(Option::is_some).await
        && let Some(ticket) = issued.clone()
    {
        return ticket;
    }
    std::future::pending().await
}

/// Sends `first` up a stream `open` opens, hands what comes down to `sink`
/// (answering asks through it, each on a task of its own so progress keeps
/// flowing) and returns the final message; the status when the stream could
/// not be opened or failed before it. When `sink` makes the call a task, the
/// executor is told (`HopDetach`); when `cancel` fires, it is told to stop
/// (`HopCancel`) and the answer is a `Cancelled` status.
pub async fn drive<F, Fut>(
    first: hop_up::Message,
    sink: Arc<dyn CallSink>,
    cancel: &tokio_util::sync::CancellationToken,
    open: F,
) -> Result<hop_down::Message, Status>
where
    F: FnOnce(tonic::Request<tokio_stream::wrappers::ReceiverStream<pb::HopUp>>) -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<tonic::Streaming<pb::HopDown>>, Status>>,
{
    let (up, up_rx) = mpsc::channel(8);
    let _ = up
        .send(pb::HopUp {
            message: Some(first),
        })
        .await;
    let opened = tokio::select! {
        opened = open(tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(up_rx))) => opened,
        () = cancel.cancelled() => return Err(Status::cancelled("cancelled by the caller")),
    };
    let mut down = match opened {
        Ok(response) => response.into_inner(),
        Err(status) => return Err(status),
    };
    // Told once, when the caller makes the call a task: the executor then
    // keeps it running past this stream.
    let mut ticket = sink.became_task();
    loop {
        let received = tokio::select! {
            received = down.message() => received,
            () = cancel.cancelled() => {
                // Said outright: a call that became a task keeps running
                // when its stream merely closes.
                let _ = up
                    .send(pb::HopUp {
                        message: Some(hop_up::Message::Cancel(pb::HopCancel {})),
                    })
                    .await;
                return Err(Status::cancelled("cancelled by the caller"));
            }
            issued = ticket_issued(&mut ticket) => {
                ticket = None;
                let detach = pb::HopDetach { task_id: issued.id, tenant: issued.tenant };
                let _ = up
                    .send(pb::HopUp {
                        message: Some(hop_up::Message::Detach(detach)),
                    })
                    .await;
                continue;
            }
        };
        let message = match received {
            Ok(Some(pb::HopDown {
                message: Some(message),
            })) => message,
            Ok(Some(_)) => continue,
            Ok(None) => {
                return Err(Status::unknown(
                    "the executor ended the stream without a result",
                ));
            }
            Err(status) => return Err(status),
        };
        match message {
            hop_down::Message::Progress(p) => sink.progress(p.progress, p.total, p.message).await,
            hop_down::Message::LogJson(json) => {
                if let Ok(params) = serde_json::from_str(&json) {
                    sink.log(params).await;
                }
            }
            hop_down::Message::Ask(ask) => {
                let (sink, up) = (sink.clone(), up.clone());
                tokio::spawn(async move {
                    let reply = answer(sink.as_ref(), ask).await;
                    let _ = up
                        .send(pb::HopUp {
                            message: Some(hop_up::Message::Reply(reply)),
                        })
                        .await;
                });
            }
            done => return Ok(done),
        }
    }
}
