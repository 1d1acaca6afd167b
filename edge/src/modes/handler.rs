//! What a mode is: the tools it lists, the instructions it gives, and how it
//! answers `tools/call`. A session picks its handler once and hands every
//! call to it; a handler sees the contract with the executors and the
//! session's view, never the gateway.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_contract::{CallOrigin, Dispatch, Scripts};
use quiver_view::ToolView;
use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResult, JsonObject, ServerCapabilities, Tool},
    service::RequestContext,
};

/// Where a mode's calls and scripts run, and how it searches.
#[derive(Clone)]
pub struct Backends {
    /// Runs prepared tool calls.
    pub dispatch: Arc<dyn Dispatch>,
    /// Runs code-mode scripts, when the edge has an executor for them.
    pub scripts: Option<Arc<dyn Scripts>>,
    /// Results a search returns when the caller gives no limit.
    pub search_limit: usize,
}

/// One `tools/call`, as a mode receives it.
pub struct ToolRequest<'a> {
    /// The session's view (the version current when the call arrived).
    pub view: Arc<ToolView>,
    /// The tenant the call is made for (its search signals, stash and
    /// scripts are its own).
    pub tenant: &'a str,
    /// Who made it, through which edge (carried to the executor's audit record).
    pub origin: &'a CallOrigin,
    /// The tool the client named.
    pub name: &'a str,
    /// Its arguments.
    pub arguments: Option<JsonObject>,
    /// The MCP session it came on (a script's stash is per session).
    pub session: &'a str,
    /// The request: its cancellation, progress token and peer.
    pub context: &'a RequestContext<RoleServer>,
}

/// One way of presenting a view.
pub trait ModeHandler: Send + Sync {
    /// What the session declares at `initialize`.
    fn capabilities(&self) -> ServerCapabilities;
    /// The instructions sent at `initialize`.
    fn instructions(&self, view: &ToolView) -> String;
    /// The tools `tools/list` shows.
    fn tools(&self, view: &ToolView) -> Vec<Tool>;
    /// Whether `tools/call` of `name` reaches a tool of this mode over
    /// `view` (telemetry names only such tools, never whatever a client sent).
    fn offers(&self, view: &ToolView, name: &str) -> bool;
    /// Answers a `tools/call`: a result (possibly a tool error), or a
    /// protocol error when the mode treats the call as malformed.
    fn call<'a>(
        &'a self,
        request: ToolRequest<'a>,
    ) -> BoxFuture<'a, Result<CallToolResult, ErrorData>>;
}
