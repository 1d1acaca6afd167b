//! An MCP client that records what reaches it during calls (progress,
//! sampling and elicitation requests, answered with its own name), and the
//! mock upstream's `quiver_test_rendezvous` tool that sends those.
#![allow(deprecated)] // sampling is deprecated by SEP-2577 in rmcp's types

use std::time::Duration;

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        ClientRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, Implementation, ProgressNotificationParam, ProgressToken, ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::text;

/// What one session's client saw from the gateway.
#[derive(Debug)]
pub enum Seen {
    /// A progress notification: its token and message.
    Progress(ProgressToken, String),
    /// A sampling request: its messages as JSON.
    Sampling(String),
    /// An elicitation request, as JSON.
    Elicitation(String),
}

/// A client that records what reaches it and answers sampling and
/// elicitation with its own name.
#[derive(Clone)]
pub struct SessionClient {
    /// Its name, in its answers.
    pub name: &'static str,
    /// Where what reaches it goes.
    pub seen: UnboundedSender<Seen>,
}

impl ClientHandler for SessionClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = serde_json::from_value::<ClientCapabilities>(
            json!({"sampling": {}, "elicitation": {}}),
        )
        .expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new(self.name, "0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = params.message.unwrap_or_default();
        let _ = self
            .seen
            .send(Seen::Progress(params.progress_token, message));
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_string(&params.messages).unwrap_or_default();
        let _ = self.seen.send(Seen::Sampling(asked));
        serde_json::from_value(json!({
            "model": "test-model", "stopReason": "endTurn", "role": "assistant",
            "content": {"type": "text", "text": format!("sampled by {}", self.name)}
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_string(&request).unwrap_or_default();
        let _ = self.seen.send(Seen::Elicitation(asked));
        serde_json::from_value(json!({"action": "accept", "content": {"name": self.name}}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// A session of [`SessionClient`].
pub type Session = RunningService<RoleClient, SessionClient>;

/// Connects a [`SessionClient`] named `name` to `url`.
pub async fn open(url: &str, name: &'static str) -> (Session, UnboundedReceiver<Seen>) {
    quiver_upstream::install_crypto_provider();
    let (tx, rx) = unbounded_channel();
    let client = SessionClient { name, seen: tx }
        .serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .expect("MCP client connects");
    (client, rx)
}

/// Calls `tool` and returns the progress token the client put on the call
/// with the result.
pub async fn call_with_token(
    session: &Session,
    tool: &str,
    arguments: Value,
) -> (ProgressToken, CallToolResult) {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = arguments.as_object().cloned();
    let handle = session
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap_or_else(|e| panic!("sending tools/call {tool}: {e}"));
    let token = handle.progress_token.clone();
    match handle.await_response().await {
        Ok(ServerResult::CallToolResult(result)) => (token, result),
        other => panic!("tools/call {tool}: {other:?}"),
    }
}

/// The arguments of `quiver_test_rendezvous`: meet `parties` calls of
/// `group`, report `steps` progress notifications tagged `tag`, ask once.
pub fn rendezvous(group: &str, parties: u64, tag: &str, steps: u64, ask: Option<&str>) -> Value {
    let mut arguments = json!({"group": group, "parties": parties, "steps": steps, "tag": tag});
    if let Some(ask) = ask {
        arguments["ask"] = json!(ask);
        arguments["asks"] = json!(1);
    }
    arguments
}

/// The `execute` arguments of a script making the rendezvous call.
pub fn via_script(arguments: &Value) -> Value {
    json!({ "code": format!("return await tools.w.quiver_test_rendezvous({arguments});") })
}

/// What the mock answered, from a passthrough result or a script's.
pub fn answer(result: &CallToolResult, who: &str) -> Value {
    assert_ne!(result.is_error, Some(true), "{who}: {}", text(result));
    match &result.structured_content {
        Some(structured) => structured["result"].clone(),
        None => serde_json::from_str(&text(result)).expect("the mock's JSON answer"),
    }
}

/// Waits (up to 20 s each) for `count` items to reach `name`: progress may
/// trail the call's answer.
pub async fn first_items(
    seen: &mut UnboundedReceiver<Seen>,
    name: &str,
    count: usize,
) -> Vec<Seen> {
    let mut got = Vec::new();
    while got.len() < count {
        match tokio::time::timeout(Duration::from_secs(20), seen.recv()).await {
            Ok(Some(item)) => got.push(item),
            _ => panic!("{name} received {} of {count} items: {got:?}", got.len()),
        }
    }
    got
}
