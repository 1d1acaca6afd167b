//! Multi-round-trip tool calls for clients of MCP 2026-07-28 (`input_required`).
//!
//! A client of the stateless protocol cannot be sent a request in the middle
//! of a call. When what a call reaches needs the client (an upstream's
//! sampling or elicitation, from a 2025 upstream's server-to-client request or
//! a 2026 upstream's own `input_required`), the call is *parked* here: the
//! client gets an `input_required` result naming what is needed, plus a
//! `requestState` that names the parked call, and calls the tool again with
//! its answers (`inputResponses`) and that state. The call goes on from where
//! it waited; the client's retry gets its result, or the next question.
//!
//! The state is an unguessable name of a call parked on this edge, bound to
//! the tenant and tool that started it; anything else (altered, expired, of
//! another tenant) is refused with `-32602`. A parked call nobody resumes is
//! cancelled after [`PARKED_FOR`]. In a fleet, the state starts with this
//! edge's tag, so that another edge can hand the resume here (see `peers`).

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

use quiver_fleet::task_records::TaskTicket;
use rmcp::{
    ErrorData,
    model::{CallToolResult, InputRequests, InputRequiredResult, InputResponses},
};
use tokio::{
    sync::{mpsc, oneshot, watch},
    task::JoinHandle,
};
use tokio_util::sync::CancellationToken;

/// How long a parked call waits for the client to come back.
pub(crate) const PARKED_FOR: Duration = Duration::from_secs(300);

/// What a call that waits for the client asks it, and where the answers go.
pub(crate) struct Ask {
    /// The requests, by key.
    pub(crate) requests: InputRequests,
    /// The client's answers (or why there are none).
    pub(crate) answer: oneshot::Sender<Result<InputResponses, ErrorData>>,
}

/// Where a call of a stateless client sends what it needs from the client;
/// the relay of such a call finds it in the request's extensions.
#[derive(Clone)]
pub(crate) struct AskClient(pub(crate) mpsc::Sender<Ask>);

/// The answers a stateless client sent with the first request of a call
/// (`inputResponses` without `requestState`): passed to the upstream, which
/// may need nothing more.
#[derive(Clone)]
pub(crate) struct GivenInput(pub(crate) InputResponses);

/// Set by a call's relay when the upstream made a task of the call (see
/// `tasks`): the call becomes a task of this edge at once.
#[derive(Clone)]
pub(crate) struct UpstreamTaskSignal(pub(crate) watch::Sender<bool>);

/// The wall time a code-mode script of this call may have, as a call that
/// may become a task of a tenant that allows its scripts more (milliseconds).
#[derive(Clone, Copy)]
pub(crate) struct TaskWall(pub(crate) u64);

/// Set when the call became a task of this edge: the relay hands it to the
/// executor running the call, which then keeps it running past this edge.
#[derive(Clone)]
pub(crate) struct TaskTicketSlot(pub(crate) watch::Sender<Option<TaskTicket>>);

/// A call running on behalf of a stateless client, or of a client that takes
/// tasks (it may become one of this edge's tasks).
pub(crate) struct RunningCall {
    tenant: String,
    tool: String,
    task: JoinHandle<Result<CallToolResult, ErrorData>>,
    asks: mpsc::Receiver<Ask>,
    /// Ends the call (and its upstream request) when nobody comes back.
    cancel: CancellationToken,
    /// Turns true when the upstream made a task of the call.
    upstream_task: Option<watch::Receiver<bool>>,
    /// Where the call learns it became a task.
    ticket: Option<watch::Sender<Option<TaskTicket>>>,
}

/// What a running call did next.
pub(crate) enum CallEvent {
    /// It finished.
    Done(Result<CallToolResult, ErrorData>),
    /// It needs the client.
    Asked(Ask),
    /// The upstream made a task of it.
    UpstreamTask,
}

impl Drop for RunningCall {
    /// A call nobody drives any more (its client left, or it finished) is
    /// ended: an unfinished upstream request is cancelled.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A call waiting for the client's answers.
struct Parked {
    call: RunningCall,
    /// What it asked, and the answers given so far.
    ask: Ask,
    given: InputResponses,
    until: Instant,
}

/// How a call went on: its result, what it needs first, or that it is
/// still running and should become a task.
pub(crate) enum Progress {
    /// It finished.
    Done(Result<CallToolResult, ErrorData>),
    /// It needs the client: answer `input_required`.
    NeedsInput(InputRequiredResult),
    /// It ran past its window, or its upstream made a task of it, or (for a
    /// client in a session) it needs the client: make it a task, with what it
    /// asked if it asked.
    Running(RunningCall, Option<Ask>),
}

/// How [`ParkedCalls::drive_within`] treats a call.
#[derive(Clone, Copy)]
pub(crate) struct Drive {
    /// How long it may run before it becomes a task; `None`: it never does.
    pub(crate) window: Option<Duration>,
    /// Whether a question parks it for `input_required` (a stateless
    /// client), rather than making it a task.
    pub(crate) park_asks: bool,
}

#[cfg(test)]
impl Drive {
    /// A stateless client's call that never becomes a task.
    pub(crate) const PARK: Drive = Drive {
        window: None,
        park_asks: true,
    };
}

impl RunningCall {
    /// A call of `tool` for `tenant`, running as `task`, asking through the
    /// sender paired with `asks`; `cancel` ends it.
    pub(crate) fn new(
        tenant: &str,
        tool: &str,
        task: JoinHandle<Result<CallToolResult, ErrorData>>,
        asks: mpsc::Receiver<Ask>,
        cancel: CancellationToken,
    ) -> RunningCall {
        RunningCall {
            tenant: tenant.to_string(),
            tool: tool.to_string(),
            task,
            asks,
            cancel,
            upstream_task: None,
            ticket: None,
        }
    }

    /// The same call, told by `signal` when its upstream makes a task of it.
    pub(crate) fn watching(mut self, signal: watch::Receiver<bool>) -> RunningCall {
        self.upstream_task = Some(signal);
        self
    }

    /// The same call, told through `slot` when it becomes a task.
    pub(crate) fn ticketed(mut self, slot: watch::Sender<Option<TaskTicket>>) -> RunningCall {
        self.ticket = Some(slot);
        self
    }

    /// Where to tell the call it became a task, if it can hear it.
    pub(crate) fn ticket_slot(&self) -> Option<watch::Sender<Option<TaskTicket>>> {
        self.ticket.clone()
    }

    /// The tenant it runs for.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Waits for what the call does next. After [`CallEvent::Done`] it has
    /// nothing more to say.
    pub(crate) async fn next(&mut self) -> CallEvent {
        let upstream_task = async {
            match &mut self.upstream_task {
                Some(signal) => {
                    if signal.wait_for(|made| *made).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = &mut self.task => CallEvent::Done(finished(joined)),
            ask = self.asks.recv() => match ask {
                Some(ask) => CallEvent::Asked(ask),
                None => CallEvent::Done(finished((&mut self.task).await)),
            },
            () = upstream_task => {
                // Heard once: a call becomes a task only once.
                self.upstream_task = None;
                CallEvent::UpstreamTask
            }
        }
    }

    /// Stops the call (and its upstream request).
    pub(crate) fn stop(&self) {
        self.cancel.cancel();
    }
}

/// The calls of stateless clients waiting for them, on one edge.
pub(crate) struct ParkedCalls {
    calls: Mutex<HashMap<String, Parked>>,
    /// How long a call waits.
    wait: Duration,
    /// This edge's tag in the fleet, the prefix of the states it hands out.
    tag: OnceLock<String>,
}

impl Default for ParkedCalls {
    fn default() -> Self {
        ParkedCalls::waiting(PARKED_FOR)
    }
}

impl ParkedCalls {
    /// Calls that wait `wait` for their client.
    fn waiting(wait: Duration) -> ParkedCalls {
        ParkedCalls {
            calls: Mutex::default(),
            wait,
            tag: OnceLock::new(),
        }
    }

    /// Prefixes the states handed out from now on with `tag` (this edge's,
    /// see `peers`); set once.
    pub(crate) fn tag_states(&self, tag: &str) {
        let _ = self.tag.set(tag.to_string());
    }

    /// Runs `call` until it finishes or asks the client something; then it
    /// is parked and the answer is `input_required` with its state.
    #[cfg(test)]
    pub(crate) async fn drive(&self, call: RunningCall) -> Progress {
        self.drive_within(call, Drive::PARK).await
    }

    /// Runs `call` until it finishes, asks the client something (parked for
    /// `input_required`, or handed back to become a task, as `how` says),
    /// runs past `how.window`, or its upstream makes a task of it (both
    /// handed back to become a task when there is a window).
    pub(crate) async fn drive_within(&self, mut call: RunningCall, how: Drive) -> Progress {
        let deadline = how
            .window
            .map(|window| tokio::time::Instant::now() + window);
        loop {
            let event = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, call.next()).await {
                    Ok(event) => event,
                    Err(_) => return Progress::Running(call, None),
                },
                None => call.next().await,
            };
            return match event {
                CallEvent::Done(result) => Progress::Done(result),
                CallEvent::Asked(ask) if how.park_asks => {
                    self.park(call, ask, InputResponses::new())
                }
                CallEvent::Asked(ask) => Progress::Running(call, Some(ask)),
                CallEvent::UpstreamTask if how.window.is_some() => Progress::Running(call, None),
                CallEvent::UpstreamTask => continue,
            };
        }
    }

    /// Goes on with the call `state` names, given the client's `responses`:
    /// asks again for what is still missing, or runs it on.
    pub(crate) async fn resume(
        &self,
        state: &str,
        (tenant, tool): (&str, &str),
        responses: Option<InputResponses>,
        how: Drive,
    ) -> Progress {
        let parked = {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            self.expire(&mut calls);
            match calls.remove(state) {
                Some(parked) if parked.call.tenant == tenant && parked.call.tool == tool => parked,
                Some(other) => {
                    // Not this caller's: leave it for its own.
                    calls.insert(state.to_string(), other);
                    return Progress::Done(Err(unknown_state()));
                }
                None => return Progress::Done(Err(unknown_state())),
            }
        };
        let Parked {
            call,
            ask,
            mut given,
            ..
        } = parked;
        // Only answers to what was asked count; anything else is ignored.
        for (key, value) in responses.unwrap_or_default() {
            if ask.requests.contains_key(&key) {
                given.insert(key, value);
            }
        }
        if ask.requests.keys().all(|key| given.contains_key(key)) {
            let _ = ask.answer.send(Ok(given));
            return self.drive_within(call, how).await;
        }
        self.park(call, ask, given)
    }

    fn park(&self, call: RunningCall, ask: Ask, given: InputResponses) -> Progress {
        let missing: InputRequests = ask
            .requests
            .iter()
            .filter(|(key, _)| !given.contains_key(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        let id = uuid::Uuid::new_v4().simple();
        let state = match self.tag.get() {
            Some(tag) => format!("{tag}.{id}"),
            None => id.to_string(),
        };
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        self.expire(&mut calls);
        calls.insert(
            state.clone(),
            Parked {
                call,
                ask,
                given,
                until: Instant::now() + self.wait,
            },
        );
        Progress::NeedsInput(InputRequiredResult::new(Some(missing), Some(state)))
    }

    /// Cancels the calls nobody came back for.
    fn expire(&self, calls: &mut HashMap<String, Parked>) {
        let now = Instant::now();
        calls.retain(|_, parked| {
            let keep = parked.until > now;
            if !keep {
                parked.call.cancel.cancel();
            }
            keep
        });
    }
}

/// A parked call is gone for good, or never was.
fn unknown_state() -> ErrorData {
    ErrorData::invalid_params(
        "requestState names no call waiting for this client (it was altered, or expired, or \
         answered already, or the edge holding it left); call the tool again without \
         requestState",
        None,
    )
}

fn finished(
    joined: Result<Result<CallToolResult, ErrorData>, tokio::task::JoinError>,
) -> Result<CallToolResult, ErrorData> {
    joined.unwrap_or_else(|e| {
        Err(ErrorData::internal_error(
            format!("the call failed: {e}"),
            None,
        ))
    })
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ElicitRequest, ElicitRequestParams, InputRequest};
    use serde_json::json;

    use super::*;

    /// A call of `tool` for tenant `t` that asks one question, then answers
    /// with what it was told; and the token that says it was ended.
    fn asking_call(tool: &str) -> (RunningCall, CancellationToken) {
        let (asks, asked) = mpsc::channel(1);
        let cancel = CancellationToken::new();
        let ended = cancel.clone();
        let task = tokio::spawn(async move {
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "message": "name?", "requestedSchema": {"type": "object", "properties": {}}
            }))
            .unwrap();
            let requests = InputRequests::from([(
                "q".to_string(),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            )]);
            let (answer, answered) = oneshot::channel();
            asks.send(Ask { requests, answer }).await.unwrap();
            let told = answered.await.unwrap()?;
            Ok(CallToolResult::success(vec![
                rmcp::model::ContentBlock::text(told["q"].to_string()),
            ]))
        });
        (RunningCall::new("t", tool, task, asked, cancel), ended)
    }

    fn state(progress: &Progress) -> String {
        match progress {
            Progress::NeedsInput(asked) => asked.request_state.clone().unwrap(),
            Progress::Done(done) => panic!("expected input_required, got {done:?}"),
            Progress::Running(..) => panic!("expected input_required, got a running call"),
        }
    }

    #[tokio::test]
    async fn a_parked_call_resumes_only_for_its_tenant_and_tool_with_every_answer() {
        let parked = ParkedCalls::default();
        let (call, _) = asking_call("greet");
        let first = state(&parked.drive(call).await);

        for (tenant, tool) in [("other", "greet"), ("t", "other")] {
            let refused = parked
                .resume(&first, (tenant, tool), None, Drive::PARK)
                .await;
            assert!(matches!(refused, Progress::Done(Err(ref e)) if e.code.0 == -32602));
        }
        // Still there for its own caller; without the answer, asked again.
        let again = parked
            .resume(&first, ("t", "greet"), None, Drive::PARK)
            .await;
        let second = state(&again);
        assert_ne!(first, second, "each question gets a state of its own");
        assert!(matches!(
            parked
                .resume(&first, ("t", "greet"), None, Drive::PARK)
                .await,
            Progress::Done(Err(_))
        ));

        let answers = InputResponses::from([("q".to_string(), json!("Ada"))]);
        match parked
            .resume(&second, ("t", "greet"), Some(answers), Drive::PARK)
            .await
        {
            Progress::Done(Ok(result)) => {
                assert!(format!("{result:?}").contains("Ada"), "{result:?}")
            }
            other => panic!(
                "expected the result, got {}",
                matches!(other, Progress::NeedsInput(_))
            ),
        }
    }

    #[tokio::test]
    async fn a_call_nobody_comes_back_for_is_ended() {
        let parked = ParkedCalls::waiting(Duration::ZERO);
        let (call, ended) = asking_call("greet");
        let first = state(&parked.drive(call).await);
        // Any later use of the table sweeps it out.
        let (other, _) = asking_call("other");
        let _ = parked.drive(other).await;
        assert!(ended.is_cancelled());
        assert!(matches!(
            parked
                .resume(&first, ("t", "greet"), None, Drive::PARK)
                .await,
            Progress::Done(Err(_))
        ));
    }
}
