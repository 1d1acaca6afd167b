//! Scripts on this process's worker pool ([`LocalScripts`]): the local side
//! of the contract's [`Scripts`]; `quiver_contract::RemoteExecutor` is the
//! remote one.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_contract::{
    CallOrigin, CallSink, Dispatch, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts,
};
use quiver_view::ToolView;
use tokio_util::sync::CancellationToken;

use crate::{
    pool::Owner,
    script::{ScriptRunner, ViewScriptContext},
    stash::StashStore,
};

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
    fn execute(
        &self,
        request: ExecuteRequest,
        view: Arc<ToolView>,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            let owner = Owner::new(&request.tenant, &request.session);
            let context = Arc::new(
                ViewScriptContext::new(
                    self.dispatch.clone(),
                    self.stash.clone(),
                    view,
                    owner.clone(),
                    cancel.clone(),
                )
                .relaying_to(sink)
                .made_by(CallOrigin {
                    script_sha256: Some(quiver_proto::audit::script_digest(&request.code)),
                    ..request.origin.clone()
                }),
            );
            self.runner
                .execute_within(
                    &owner,
                    &request.code,
                    request.limits.as_ref(),
                    context,
                    cancel,
                )
                .await
        })
    }
}
