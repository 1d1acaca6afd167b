//! Running a code-mode script for a session: the request, the trait the edge
//! calls (a local worker pool or a remote executor behind it), and the script
//! API both sides agree on.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_view::CallOrigin;
use tokio_util::sync::CancellationToken;

use crate::{CallSink, ExecuteError, Limits, ScriptOutcome};

/// The script API as TypeScript declarations, shown in `execute`'s
/// description (which a model reads up front, so it stays short), and by
/// `describe("api")` with [`MORE_API_DECLARATION`]; implemented by the
/// worker's bootstrap.
pub const API_DECLARATION: &str = "\
declare const tools: { [server: string]: { [tool: string]: (args?: object) => Promise<any> }; call(name: string, args?: object): Promise<any> };
declare function search(query: string, limit?: number): Promise<{ name: string; signature: string; summary: string }[]>;
declare function describe(name: string): Promise<string>;
declare const stash: { get(key: string): Promise<any>; set(key: string, value: any, ttlSecs?: number): Promise<boolean>; delete(key: string): Promise<boolean>; keys(): Promise<string[]> };";

/// The rest of the script API, shown by `describe("api")`: the upstreams'
/// resources (each call a host call).
pub const MORE_API_DECLARATION: &str = "\
declare const resources: { list(): Promise<{ uri: string; name: string; mimeType?: string }[]>; read(uri: string): Promise<{ uri: string; mimeType?: string; text?: string; blob?: string }[]> };";

/// One script to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteRequest {
    /// Tenant it runs for: its fair share of workers and its tool calls.
    pub tenant: String,
    /// Session within the tenant: its stash and its share of the tenant's workers.
    pub session: String,
    /// The body of an async function.
    pub code: String,
    /// Tighter limits for this run; the executor's own apply where absent or looser.
    pub limits: Option<Limits>,
    /// Who asked and through which edge (for audit; the script's calls carry it too).
    pub origin: CallOrigin,
    /// The wall time asked for a script that may run as a task (its tenant's
    /// setting), in milliseconds; the executor grants it up to its own
    /// maximum for tasks. `None`: the usual wall time.
    pub task_wall_ms: Option<u64>,
    /// Keep the calls of tools that link an MCP App's view, with their
    /// results, in the outcome (a host that renders them asks).
    pub keep_app_views: bool,
}

impl ExecuteRequest {
    /// `code` for `session` of `tenant`, under the executor's limits.
    pub fn new(
        tenant: impl Into<String>,
        session: impl Into<String>,
        code: impl Into<String>,
    ) -> ExecuteRequest {
        ExecuteRequest {
            tenant: tenant.into(),
            session: session.into(),
            code: code.into(),
            limits: None,
            origin: CallOrigin::default(),
            task_wall_ms: None,
            keep_app_views: false,
        }
    }

    /// The same request, keeping the calls of tools that link an MCP App's
    /// view in the outcome ([`crate::ScriptOutcome::app_views`]).
    pub fn keeping_app_views(mut self) -> ExecuteRequest {
        self.keep_app_views = true;
        self
    }

    /// The same request, for a script that may run as a task with `wall_ms`
    /// of wall time (up to the executor's maximum for tasks).
    pub fn as_possible_task(mut self, wall_ms: u64) -> ExecuteRequest {
        self.task_wall_ms = Some(wall_ms);
        self
    }

    /// The same request, made by `origin`.
    pub fn from_origin(mut self, origin: CallOrigin) -> ExecuteRequest {
        self.origin = origin;
        self
    }

    /// The same request under `limits` (which can only tighten the executor's).
    pub fn with_limits(mut self, limits: Limits) -> ExecuteRequest {
        self.limits = Some(limits);
        self
    }
}

/// Runs code-mode scripts.
pub trait Scripts: Send + Sync {
    /// Runs `request`; its tool calls are checked against its tenant's view
    /// as the node that runs it holds it (the caller's view is never taken
    /// on its word, so none is passed). Cancelling `cancel` stops it and
    /// frees its worker. What an upstream sends back
    /// during its tool calls (progress, logs, sampling and elicitation
    /// requests) goes to `sink`, the calling session.
    fn execute(
        &self,
        request: ExecuteRequest,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>>;
}
