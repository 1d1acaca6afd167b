//! An MCP 2025-11-25 session spoken over plain HTTP, so that a test chooses
//! which edge each request goes to and which `Mcp-Session-Id` it names, as
//! a client behind a load balancer does.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::http;

/// The session protocol revision these requests speak.
pub const REVISION: &str = "2025-11-25";

/// One session: its id and the credential that opened it.
#[derive(Clone, Debug)]
pub struct RawSession {
    /// The `Mcp-Session-Id` the edge gave it.
    pub id: String,
    /// The `Authorization` value, when the edge needs one.
    pub authorization: Option<String>,
}

/// What an edge answered to one POST.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body as it came.
    pub body: String,
    /// The JSON-RPC response in it, when there is one.
    pub response: Option<Value>,
}

impl Answer {
    /// The `result` of the JSON-RPC response; panics on anything else.
    pub fn result(&self) -> &Value {
        self.response
            .as_ref()
            .and_then(|r| r.get("result"))
            .unwrap_or_else(|| panic!("no JSON-RPC result: {self:?}"))
    }

    /// The text of an `execute` (or any tool) result's first content item.
    pub fn text(&self) -> String {
        self.result()["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text content: {self:?}"))
            .to_string()
    }
}

/// The JSON-RPC response among the server-sent events (or the JSON body).
fn response_in(body: &str) -> Option<Value> {
    let from_events = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some());
    from_events.or_else(|| serde_json::from_str(body).ok())
}

/// POSTs `body` to `url` as `session` (or, with `None`, as no session).
pub async fn post(
    url: &str,
    authorization: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> Answer {
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .json(body);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.send().await.expect("POST");
    let status = response.status();
    let body = response.text().await.expect("answer body");
    Answer {
        status,
        response: response_in(&body),
        body,
    }
}

impl RawSession {
    /// Opens a session at `url` (initialize, then initialized).
    pub async fn open(url: &str, authorization: Option<&str>) -> RawSession {
        let response = super::post_initialize(url, authorization).await;
        assert_eq!(response.status(), 200, "initialize at {url}");
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_string();
        let _ = response.text().await;
        let session = RawSession {
            id,
            authorization: authorization.map(str::to_owned),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = session.send(url, &initialized).await;
        assert_eq!(sent.status, 202, "initialized at {url}: {sent:?}");
        session
    }

    /// POSTs `message` in this session to `url` (any edge).
    pub async fn send(&self, url: &str, message: &Value) -> Answer {
        post(url, self.authorization.as_deref(), Some(&self.id), message).await
    }

    /// `tools/call` of `name` with `arguments` in this session at `url`.
    pub async fn call(&self, url: &str, name: &str, arguments: Value) -> Answer {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        self.send(url, &request).await
    }

    /// `DELETE` of this session at `url`; the HTTP status.
    pub async fn delete(&self, url: &str) -> StatusCode {
        let mut request = http()
            .delete(url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", REVISION);
        if let Some(value) = &self.authorization {
            request = request.header("authorization", value);
        }
        request.send().await.expect("DELETE").status()
    }
}
