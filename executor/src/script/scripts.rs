//! Where `execute` runs: on this process's worker pool ([`LocalScripts`]) or on a
//! remote executor over gRPC ([`crate::remote::RemoteExecutor`]). The edge only
//! sees this trait.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_view::ToolView;
use tokio_util::sync::CancellationToken;

use crate::{
    Dispatch,
    script::{ExecuteError, ScriptRunner, ViewScriptContext},
    stash::StashStore,
    worker::protocol::Outcome,
};

/// Runs code-mode scripts for a session over a view.
pub trait Scripts: Send + Sync {
    /// Runs `code` for `session`; its tool calls are checked against `view`.
    fn execute<'a>(
        &'a self,
        code: &'a str,
        session: &'a str,
        view: Arc<ToolView>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Outcome, ExecuteError>>;
}

/// Scripts on this process's worker pool, tool calls through `dispatch`.
pub struct LocalScripts {
    runner: Arc<ScriptRunner>,
    dispatch: Arc<dyn Dispatch>,
    stash: Arc<StashStore>,
}

impl LocalScripts {
    /// Local execution with its own session stash store.
    pub fn new(runner: Arc<ScriptRunner>, dispatch: Arc<dyn Dispatch>) -> LocalScripts {
        LocalScripts {
            runner,
            dispatch,
            stash: Arc::new(StashStore::default()),
        }
    }

    /// The runner.
    pub fn runner(&self) -> &Arc<ScriptRunner> {
        &self.runner
    }
}

impl Scripts for LocalScripts {
    fn execute<'a>(
        &'a self,
        code: &'a str,
        session: &'a str,
        view: Arc<ToolView>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Outcome, ExecuteError>> {
        Box::pin(async move {
            let context = Arc::new(ViewScriptContext::new(
                self.dispatch.clone(),
                self.stash.clone(),
                view,
                session.to_string(),
                cancel,
            ));
            self.runner.execute(code, context).await
        })
    }
}
