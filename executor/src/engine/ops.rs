//! The ops the bootstrap captures (user code never sees them): host requests,
//! a sleep for `setTimeout`, and log capture. Per-execution state lives in the
//! runtime's `OpState` as an [`ExecutionState`].

use std::{
    cell::{Cell, RefCell},
    rc::Rc,
    sync::Arc,
    time::{Duration, Instant},
};

use deno_core::{OpState, op2};
use tokio::sync::Semaphore;

use super::{HostBridge, log_buffer::LogBuffer};
use quiver_contract::Limits;

use crate::ipc::{CallLimitReached, HostError, HostRequest, ToolNames};

/// What the ops of one execution share.
pub(crate) struct ExecutionState {
    bridge: Arc<dyn HostBridge>,
    in_flight: Semaphore,
    tool_calls: Cell<u32>,
    tool_call_limit: u32,
    tool_limit_hit: Cell<bool>,
    host_calls: Cell<u32>,
    host_call_limit: u32,
    host_limit_hit: Cell<bool>,
    request_bytes: usize,
    logs: RefCell<LogBuffer>,
    /// What is known up front of the names under `tools`.
    names: ToolNames,
    /// When the execution's wall time ends: a name lookup waits no longer.
    deadline: Instant,
}

impl ExecutionState {
    pub(crate) fn new(bridge: Arc<dyn HostBridge>, limits: &Limits, names: ToolNames) -> Self {
        ExecutionState {
            bridge,
            in_flight: Semaphore::new(limits.parallel_calls.max(1) as usize),
            tool_calls: Cell::new(0),
            tool_call_limit: limits.tool_calls,
            tool_limit_hit: Cell::new(false),
            host_calls: Cell::new(0),
            host_call_limit: limits.host_calls,
            host_limit_hit: Cell::new(false),
            request_bytes: usize::try_from(limits.request_bytes).unwrap_or(usize::MAX),
            logs: RefCell::new(LogBuffer::new(
                usize::try_from(limits.log_bytes).unwrap_or(usize::MAX),
            )),
            names,
            deadline: Instant::now() + Duration::from_millis(limits.wall_ms),
        }
    }

    /// Asks the host a name lookup and waits for it (at most until the
    /// deadline), counted as a host call.
    fn look_up(&self, request: HostRequest) -> Result<serde_json::Value, HostError> {
        if !spend(&self.host_calls, self.host_call_limit, &self.host_limit_hit) {
            return Err(CallLimitReached::Host(self.host_call_limit).into());
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        self.bridge.request_blocking(request, left)
    }

    /// Whether the script tried more tool calls than allowed.
    pub(crate) fn tool_limit_hit(&self) -> bool {
        self.tool_limit_hit.get()
    }

    /// Whether the script tried more host calls of any kind than allowed.
    pub(crate) fn host_limit_hit(&self) -> bool {
        self.host_limit_hit.get()
    }

    /// The captured logs and whether they were cut.
    pub(crate) fn take_logs(&self) -> (Vec<String>, bool) {
        let mut logs = self.logs.borrow_mut();
        (logs.take(), logs.truncated())
    }
}

deno_core::extension!(
    quiver_script,
    ops = [
        op_quiver_request,
        op_quiver_sleep,
        op_quiver_log,
        op_quiver_has_name,
        op_quiver_names
    ]
);

/// Replies travel as one string: `o<json>` for a value, `e<message>` for an
/// error, so the bootstrap builds the `Error` the script sees (with the
/// script's own stack) and no engine-specific error type crosses the boundary.
fn error_reply(message: impl std::fmt::Display) -> String {
    format!("e{message}")
}

/// Counts one more against `limit`; false (and `hit` set) once it is over.
fn spend(count: &Cell<u32>, limit: u32, hit: &Cell<bool>) -> bool {
    let made = count.get().saturating_add(1);
    count.set(made);
    if made > limit {
        hit.set(true);
    }
    made <= limit
}

fn execution(state: &Rc<RefCell<OpState>>) -> Option<Rc<ExecutionState>> {
    state.borrow().try_borrow::<Rc<ExecutionState>>().cloned()
}

/// Sends one request (JSON of a [`HostRequest`]) to the host.
///
/// The bootstrap admits requests before it serialises them (at most
/// `parallel_calls` in flight); this op checks again, and checks the size,
/// before anything is parsed or queued, so a script cannot make the worker
/// hold more than `parallel_calls` requests of at most `request_bytes` each.
#[op2]
#[string]
async fn op_quiver_request(state: Rc<RefCell<OpState>>, #[string] request: String) -> String {
    let Some(execution) = execution(&state) else {
        return error_reply("no execution is running");
    };
    let Ok(_permit) = execution.in_flight.try_acquire() else {
        return error_reply("too many requests in flight at once");
    };
    if request.len() > execution.request_bytes {
        return error_reply(format_args!(
            "the request is {} bytes; a script may send at most {} bytes at once",
            request.len(),
            execution.request_bytes
        ));
    }
    if !spend(
        &execution.host_calls,
        execution.host_call_limit,
        &execution.host_limit_hit,
    ) {
        return error_reply(format_args!(
            "host call limit reached: at most {} calls (tools, search, describe, stash) per execution",
            execution.host_call_limit
        ));
    }
    let Ok(request) = serde_json::from_str::<HostRequest>(&request) else {
        // serde's own words would describe our protocol, not the script's mistake.
        return error_reply("the request could not be read");
    };
    drop(state);
    if matches!(request, HostRequest::CallTool { .. })
        && !spend(
            &execution.tool_calls,
            execution.tool_call_limit,
            &execution.tool_limit_hit,
        )
    {
        return error_reply(format_args!(
            "tool call limit reached: at most {} tool calls per execution",
            execution.tool_call_limit
        ));
    }
    match execution.bridge.request(request).await {
        Ok(value) => format!("o{value}"),
        Err(message) => error_reply(message),
    }
}

/// Resolves after `ms` milliseconds (the bootstrap has bounded `ms`).
#[op2]
async fn op_quiver_sleep(ms: f64) {
    let ms = if ms.is_finite() && ms > 0.0 {
        ms as u64
    } else {
        0
    };
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Captures one formatted console line; false once the log budget is spent.
#[op2(fast)]
fn op_quiver_log(state: &mut OpState, #[string] line: &str) -> bool {
    match state.try_borrow::<Rc<ExecutionState>>() {
        Some(execution) => execution.logs.borrow_mut().push(line),
        None => false,
    }
}

/// Whether `tools.<server>` (`tool` empty) or `tools.<server>.<tool>`
/// exists: `"1"` or `"0"`, or `e<message>` when it could not be found out.
/// Known names are answered here; others are asked of the host, which the
/// engine thread waits for (the script is reading a property).
#[op2]
#[string]
fn op_quiver_has_name(state: &mut OpState, #[string] server: &str, #[string] tool: &str) -> String {
    let Some(execution) = state.try_borrow::<Rc<ExecutionState>>().cloned() else {
        return error_reply("no execution is running");
    };
    let tool = (!tool.is_empty()).then_some(tool);
    let known = match execution.names.knows(server, tool) {
        Some(known) => Ok(known),
        None => execution
            .look_up(HostRequest::HasName {
                server: server.to_string(),
                tool: tool.map(str::to_string),
            })
            .map(|answer| answer == serde_json::Value::Bool(true)),
    };
    match known {
        Ok(true) => "1".into(),
        Ok(false) => "0".into(),
        Err(message) => error_reply(message),
    }
}

/// The names under `tools` (`server` empty) or `tools.<server>`: `o<json
/// array or null>`, or `e<message>`.
#[op2]
#[string]
fn op_quiver_names(state: &mut OpState, #[string] server: &str) -> String {
    let Some(execution) = state.try_borrow::<Rc<ExecutionState>>().cloned() else {
        return error_reply("no execution is running");
    };
    let server = (!server.is_empty()).then_some(server);
    let names = match execution.names.listing(server) {
        Some(listing) => Ok(serde_json::to_value(listing).unwrap_or_default()),
        None => execution.look_up(HostRequest::Names {
            server: server.map(str::to_string),
        }),
    };
    match names {
        Ok(names) => format!("o{names}"),
        Err(message) => error_reply(message),
    }
}
