//! What the edge's in-process tests share: a small manifest, stand-ins for
//! the executor ([`FakeExecutor`], [`FakeScripts`]) and a real rmcp client
//! talking to a real [`GatewaySession`] over an in-memory duplex pipe, so a
//! mode is tested without spawning binaries.
#![allow(dead_code, unused_imports)] // each test file uses its own part of this

pub mod fake_executor;
pub mod fake_scripts;
pub mod manifest;

use std::sync::Arc;

use quiver_contract::{Dispatch, Scripts};
use quiver_edge::{EdgeConfig, Gateway, Mode, session::GatewaySession};
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ErrorData},
    service::{RunningService, ServiceError},
};
use serde_json::Value;

pub use fake_executor::FakeExecutor;
pub use fake_scripts::FakeScripts;

/// A connected MCP client.
pub type Client = RunningService<RoleClient, ()>;

/// An initialised client of a new `mode` session on an edge serving
/// [`manifest::two_servers`], whose calls go to `dispatch` and scripts (when
/// given) to `scripts`.
pub async fn connect(
    mode: Mode,
    dispatch: Arc<dyn Dispatch>,
    scripts: Option<Arc<dyn Scripts>>,
) -> Client {
    let gateway = edge(dispatch, scripts);
    connect_to(&gateway, mode).await
}

/// An edge serving [`manifest::two_servers`].
pub fn edge(dispatch: Arc<dyn Dispatch>, scripts: Option<Arc<dyn Scripts>>) -> Arc<Gateway> {
    // The sender may go: the gateway keeps the first manifest it saw.
    let (_sender, manifests) = tokio::sync::watch::channel(Arc::new(manifest::two_servers()));
    Gateway::with_scripts(manifests, dispatch, scripts, EdgeConfig::default())
}

/// An initialised client of a new `mode` session on `gateway`.
pub async fn connect_to(gateway: &Arc<Gateway>, mode: Mode) -> Client {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let session = GatewaySession::new(gateway.clone(), mode);
    tokio::spawn(async move {
        if let Ok(running) = session.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io)
        .await
        .expect("the session answers initialize")
}

/// Calls `name` with `arguments` (a JSON object) and returns the result,
/// failing the test on a protocol error.
pub async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    try_call(client, name, arguments)
        .await
        .unwrap_or_else(|e| panic!("`{name}` answered a protocol error: {e:?}"))
}

/// Calls `name` with `arguments` and returns the protocol error it must answer.
pub async fn call_refused(client: &Client, name: &str, arguments: Value) -> ErrorData {
    match try_call(client, name, arguments).await {
        Err(ServiceError::McpError(error)) => error,
        Err(other) => panic!("`{name}` failed without a protocol error: {other:?}"),
        Ok(result) => panic!("`{name}` was answered, not refused: {result:?}"),
    }
}

async fn try_call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object, not {arguments}");
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(arguments))
        .await
}

/// The text blocks of `result`, joined by newlines.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `tools/list` shows, in order.
pub async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list is answered")
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}
