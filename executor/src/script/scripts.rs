//! Scripts on this process's worker pool ([`LocalScripts`]): the local side
//! of the contract's [`Scripts`]; `quiver_fleet::RemoteExecutor` is the
//! remote one.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_contract::{
    CallOrigin, CallSink, Dispatch, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts,
};
use quiver_telemetry::{quiver_span, spans};
use quiver_view::LiveViews;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::{
    pool::Owner,
    script::{ScriptRunner, ViewScriptContext},
    stash::StashStore,
};

/// Scripts on this process's worker pool, tool calls through `dispatch`,
/// checked against the tenants' views in `views`.
pub struct LocalScripts {
    runner: Arc<ScriptRunner>,
    dispatch: Arc<dyn Dispatch>,
    stash: Arc<StashStore>,
    views: Arc<LiveViews>,
    /// Whether a tenant `views` does not hold sees every tool (see
    /// [`LiveViews::view_of`]).
    anonymous: bool,
}

impl LocalScripts {
    /// Local execution with its own session stash store.
    pub fn new(
        runner: Arc<ScriptRunner>,
        dispatch: Arc<dyn Dispatch>,
        (views, anonymous): (Arc<LiveViews>, bool),
    ) -> LocalScripts {
        let stash = Arc::new(StashStore::default());
        LocalScripts::with_stash(runner, dispatch, stash, (views, anonymous))
    }

    /// Local execution whose scripts keep their stashes in `stash` (a
    /// replicated one, say).
    pub fn with_stash(
        runner: Arc<ScriptRunner>,
        dispatch: Arc<dyn Dispatch>,
        stash: Arc<StashStore>,
        (views, anonymous): (Arc<LiveViews>, bool),
    ) -> LocalScripts {
        LocalScripts {
            runner,
            dispatch,
            stash,
            views,
            anonymous,
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
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            let Some(view) = self.views.view_of(&request.tenant, self.anonymous) else {
                return Err(ExecuteError::Failed {
                    reason: format!(
                        "tenant `{}` is not known to this executor; nothing ran",
                        request.tenant
                    ),
                });
            };
            let digest = quiver_proto::audit::script_digest(&request.code);
            let span = quiver_span!("quiver.script.run", "internal");
            span.record("quiver.script.hash", digest.as_str());
            span.record("quiver.tenant", request.tenant.as_str());
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
                .keeping_app_views(request.keep_app_views)
                .made_by(CallOrigin {
                    script_sha256: Some(digest),
                    // A script's calls are the model's, whoever sent it.
                    from_app: false,
                    ..request.origin.clone()
                })
                .traced_by(span.clone()),
            );
            let outcome = self
                .runner
                .execute_as_task(
                    &owner,
                    &request.code,
                    (request.limits.as_ref(), request.task_wall_ms),
                    context.clone(),
                    cancel,
                )
                .instrument(span.clone())
                .await;
            if let Some(error) = execution_error_type(&outcome) {
                spans::record_error(&span, &error);
            }
            outcome.map(|mut ended| {
                ended.app_views = context.take_app_views();
                ended
            })
        })
    }
}

/// `error.type` of a script that did not end well: `script_<kind>` when it
/// ran and failed, else why it did not run.
fn execution_error_type(outcome: &Result<ScriptOutcome, ExecuteError>) -> Option<String> {
    match outcome {
        Ok(outcome) => outcome
            .error
            .as_ref()
            .map(|e| format!("script_{}", e.kind.as_str())),
        Err(ExecuteError::Rejected(_)) => Some("script_rejected".into()),
        Err(ExecuteError::Busy { .. }) => Some("executor_busy".into()),
        Err(_) => Some("executor_error".into()),
    }
}
