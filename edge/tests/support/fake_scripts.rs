//! A stand-in for the executor's script runner behind the edge's `Scripts`:
//! nothing runs. It records each `ExecuteRequest` and answers the outcome
//! or error the test chose.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use quiver_contract::{CallSink, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts};
use tokio_util::sync::CancellationToken;

type Answer = Box<dyn Fn() -> Result<ScriptOutcome, ExecuteError> + Send + Sync>;

/// A fake script runner: the requests it received, and its one answer.
pub struct FakeScripts {
    answer: Answer,
    requests: Mutex<Vec<ExecuteRequest>>,
}

impl FakeScripts {
    /// Answers every script with what `answer` returns.
    pub fn answering(
        answer: impl Fn() -> Result<ScriptOutcome, ExecuteError> + Send + Sync + 'static,
    ) -> FakeScripts {
        FakeScripts {
            answer: Box::new(answer),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ExecuteRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Scripts for FakeScripts {
    fn execute(
        &self,
        request: ExecuteRequest,
        _cancel: CancellationToken,
        _sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        let answer = (self.answer)();
        Box::pin(async move { answer })
    }
}
