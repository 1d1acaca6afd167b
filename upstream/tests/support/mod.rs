//! An MCP server run in the test's own process, reached by an [`Upstream`]
//! over `tokio::io::duplex`: no child process, no network. The server's tools
//! each show one behaviour, and what the server saw (a call starting, a
//! cancellation arriving) is reported on channels, so tests wait on events,
//! never on time.

#![allow(dead_code)] // each test file uses part of the fixture

use std::sync::Arc;

use quiver_upstream::{Upstream, UpstreamConfig};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
};
use serde_json::json;
use tokio::{sync::mpsc, task::JoinHandle};

/// Tools listed per `tools/list` page, so listing takes several pages.
pub const PAGE_SIZE: usize = 2;

/// Answers with its `text` argument.
pub const ECHO: &str = "echo";
/// Runs and fails: a result with `isError: true`.
pub const FAILS: &str = "forecast_atlantis";
/// Refuses the call with a JSON-RPC error (invalid params).
pub const REFUSES: &str = "strict";
/// Never answers on its own: it waits until the call is cancelled.
pub const WAITS: &str = "wait_forever";

/// Every tool, in listing order.
pub const TOOLS: [&str; 5] = [ECHO, FAILS, REFUSES, WAITS, "spare"];

/// What the server observed, in order of arrival.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A `tools/call` of this tool began.
    CallStarted(String),
    /// The client cancelled the call of this tool.
    CallCancelled(String),
}

struct FixtureServer {
    seen: mpsc::UnboundedSender<Seen>,
}

impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixture", "1.0.0"))
            .with_instructions("A fixture server for upstream tests.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request
            .and_then(|r| r.cursor)
            .map_or(Ok(0), |c| c.parse())
            .map_err(|_| ErrorData::invalid_params("bad cursor", None))?;
        let end = (start + PAGE_SIZE).min(TOOLS.len());
        let schema = Arc::new(JsonObject::from_iter([("type".into(), json!("object"))]));
        let mut page = ListToolsResult::with_all_items(
            TOOLS[start..end]
                .iter()
                .map(|name| Tool::new(*name, format!("The {name} tool."), schema.clone()))
                .collect(),
        );
        page.next_cursor = (end < TOOLS.len()).then(|| end.to_string());
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let _ = self.seen.send(Seen::CallStarted(name.clone()));
        let result = match name.as_str() {
            ECHO => {
                let text = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(|t| t.as_str())
                    .unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            FAILS => CallToolResult::error(vec![ContentBlock::text("no forecast for Atlantis")]),
            REFUSES => {
                return Err(ErrorData::invalid_params("`city` must be a string", None));
            }
            WAITS => {
                context.ct.cancelled().await;
                let _ = self.seen.send(Seen::CallCancelled(name));
                CallToolResult::error(vec![ContentBlock::text("cancelled")])
            }
            _ => CallToolResult::success(Vec::new()),
        };
        Ok(result.into())
    }
}

/// An [`Upstream`] connected to the fixture server over an in-process stream.
pub struct Fixture {
    /// The upstream under test.
    pub upstream: Arc<Upstream>,
    /// What the server saw.
    pub seen: mpsc::UnboundedReceiver<Seen>,
    /// Carries bytes between the upstream's end and the server's end, so that
    /// killing it cuts the connection the way a dying process does: nothing
    /// the server does afterwards reaches the upstream.
    wire: JoinHandle<()>,
}

impl Fixture {
    /// The fixture with default upstream settings.
    pub fn start() -> Fixture {
        Fixture::with_config(UpstreamConfig::stdio("fixture", "unused", Vec::new()))
    }

    /// The fixture with `config`'s id, time limits and breaker settings.
    pub fn with_config(config: UpstreamConfig) -> Fixture {
        let (client_end, mut wire_client_side) = tokio::io::duplex(64 * 1024);
        let (mut wire_server_side, server_end) = tokio::io::duplex(64 * 1024);
        let wire = tokio::spawn(async move {
            let _ =
                tokio::io::copy_bidirectional(&mut wire_client_side, &mut wire_server_side).await;
        });
        let (seen_tx, seen) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let handler = FixtureServer { seen: seen_tx };
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        Fixture {
            upstream: Upstream::over_stream(config, client_end),
            seen,
            wire,
        }
    }

    /// The next thing the server saw; panics if the server is gone.
    pub async fn next_seen(&mut self) -> Seen {
        match self.seen.recv().await {
            Some(seen) => seen,
            None => panic!("the fixture server stopped before reporting anything more"),
        }
    }

    /// Starts a call of [`WAITS`] (which only ends when cancelled) with
    /// `options` on a task of its own, once the server has seen it start.
    pub async fn start_waiting_call(
        &mut self,
        options: quiver_upstream::CallOptions,
    ) -> tokio::task::JoinHandle<Result<CallToolResult, quiver_upstream::UpstreamError>> {
        let upstream = self.upstream.clone();
        let call = tokio::spawn(async move { upstream.call_tool(WAITS, None, options).await });
        assert_eq!(self.next_seen().await, Seen::CallStarted(WAITS.into()));
        call
    }

    /// Kills the server: the connection is cut at once, as when its process
    /// dies, and whatever the server would still send is lost.
    pub fn kill_server(&self) {
        self.wire.abort();
    }
}

/// Announces a phase of a test (shown when the test fails).
pub fn phase(name: &str) {
    eprintln!("--- {name}");
}

/// The text of a result's first content block.
pub fn first_text(result: &CallToolResult) -> &str {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map_or("", |t| t.text.as_str())
}

/// `{"text": text}` as call arguments.
pub fn text_argument(text: &str) -> JsonObject {
    JsonObject::from_iter([("text".into(), json!(text))])
}
