//! Where `execute` runs: on this process's worker pool ([`LocalScripts`]) or on a
//! remote executor over gRPC ([`crate::remote::RemoteExecutor`]). The edge only
//! sees this trait.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_view::ToolView;
use tokio_util::sync::CancellationToken;

use crate::{
    CallSink, Dispatch,
    pool::Owner,
    script::{ExecuteError, ScriptRunner, ViewScriptContext},
    stash::StashStore,
    worker::protocol::Outcome,
};

/// Runs code-mode scripts for a session over a view.
pub trait Scripts: Send + Sync {
    /// Runs `code` for `session`; its tool calls are checked against `view`.
    /// What an upstream sends back during those calls (progress, logs,
    /// sampling and elicitation requests) goes to `sink`, the calling session.
    fn execute<'a>(
        &'a self,
        code: &'a str,
        session: &'a str,
        view: Arc<ToolView>,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
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
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'a, Result<Outcome, ExecuteError>> {
        Box::pin(async move {
            let context = Arc::new(
                ViewScriptContext::new(
                    self.dispatch.clone(),
                    self.stash.clone(),
                    view,
                    session.to_string(),
                    cancel.clone(),
                )
                .relaying_to(sink),
            );
            // Tenants are not resolved at the edge yet: every session belongs
            // to the built-in tenant, and `session` may already name one
            // (`tenant/session`, from a remote edge).
            let owner = match session.split_once('/') {
                Some((tenant, session)) => Owner::new(tenant, session),
                None => Owner::new("default", session),
            };
            self.runner.execute(&owner, code, context, cancel).await
        })
    }
}
