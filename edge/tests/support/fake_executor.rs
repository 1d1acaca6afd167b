//! A stand-in for the executor behind the edge's `Dispatch`: it reaches no
//! upstream. It records every call the edge dispatches and answers each
//! `server/tool` from a table the test fills.

use std::{collections::HashMap, sync::Mutex};

use futures::future::BoxFuture;
use quiver_contract::{CallOptions, Dispatch, ToolCall, UpstreamError};
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};

type Answer = Box<dyn Fn() -> Result<CallToolResult, UpstreamError> + Send + Sync>;

/// A fake executor: the calls it received, and a table of answers.
#[derive(Default)]
pub struct FakeExecutor {
    answers: HashMap<(String, String), Answer>,
    calls: Mutex<Vec<ToolCall>>,
}

impl FakeExecutor {
    /// An executor that answers nothing (every call is an unknown upstream).
    pub fn new() -> FakeExecutor {
        FakeExecutor::default()
    }

    /// Answers calls of `tool` on `server` with what `answer` returns.
    pub fn answering(
        mut self,
        server: &str,
        tool: &str,
        answer: impl Fn() -> Result<CallToolResult, UpstreamError> + Send + Sync + 'static,
    ) -> FakeExecutor {
        self.answers
            .insert((server.into(), tool.into()), Box::new(answer));
        self
    }

    /// Every call dispatched so far, in order.
    pub fn calls(&self) -> Vec<ToolCall> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Dispatch for FakeExecutor {
    fn call_tool(
        &self,
        call: ToolCall,
        _options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        let answer = match self.answers.get(&(call.server.clone(), call.tool.clone())) {
            Some(answer) => answer(),
            None => Err(UpstreamError::Unknown(call.server.clone())),
        };
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
        Box::pin(async move { answer })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        _request: ClientRequest,
        _options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        Box::pin(async move { Err(UpstreamError::Unknown(server.to_string())) })
    }
}
