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
    try_post(url, authorization, session, body)
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

/// The same, `Err` when no answer came back (the connection failed or
/// broke before the whole answer arrived).
pub async fn try_post(
    url: &str,
    authorization: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> Result<Answer, String> {
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .timeout(std::time::Duration::from_secs(30))
        .json(body);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.send().await.map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| format!("{e:?}"))?;
    Ok(Answer {
        status,
        response: response_in(&body),
        body,
    })
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

/// The events of one server-sent-event stream, as they arrive.
pub struct Events {
    /// Each event's id (when it has one) and JSON data (`Null` for an event
    /// with none, such as the priming event that names where to resume).
    pub received: tokio::sync::mpsc::UnboundedReceiver<(Option<String>, Value)>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Events {
    /// Reads `response`'s events in the background.
    pub fn of(response: reqwest::Response) -> Events {
        use futures::StreamExt as _;
        let (send, received) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut body = response.bytes_stream();
            let mut pending = String::new();
            let (mut id, mut data) = (None, String::new());
            while let Some(Ok(chunk)) = body.next().await {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find('\n') {
                    let line: String = pending.drain(..=end).collect();
                    let line = line.trim_end_matches(['\r', '\n']);
                    if let Some(value) = line.strip_prefix("id:") {
                        id = Some(value.trim().to_string());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim());
                    } else if line.is_empty() && (id.is_some() || !data.is_empty()) {
                        // An event ends at a blank line, whatever the order of its fields.
                        let message = serde_json::from_str(&data).unwrap_or(Value::Null);
                        let _ = send.send((id.take(), message));
                        data.clear();
                    }
                }
            }
        });
        Events { received, reader }
    }

    /// The next event's JSON, waiting up to 10 s.
    pub async fn next(&mut self) -> Option<(Option<String>, Value)> {
        self.next_within(std::time::Duration::from_secs(10)).await
    }

    /// The next event's JSON, waiting up to `limit`.
    pub async fn next_within(
        &mut self,
        limit: std::time::Duration,
    ) -> Option<(Option<String>, Value)> {
        tokio::time::timeout(limit, self.received.recv())
            .await
            .ok()
            .flatten()
    }
}

impl RawSession {
    /// Opens the session's standalone stream (GET) at `url`; with
    /// `last_event_id`, resumes a stream after that event.
    pub async fn listen(&self, url: &str, last_event_id: Option<&str>) -> Events {
        let mut request = http()
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", REVISION);
        if let Some(value) = &self.authorization {
            request = request.header("authorization", value);
        }
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("GET");
        assert_eq!(response.status(), 200, "GET {url}");
        Events::of(response)
    }

    /// Starts `tools/call` of `name` in this session at `url` and reads its
    /// stream's events as they come.
    pub async fn call_streaming(&self, url: &str, name: &str, arguments: Value) -> Events {
        let request = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let mut post = http()
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", REVISION)
            .header("mcp-session-id", &self.id)
            .json(&request);
        if let Some(value) = &self.authorization {
            post = post.header("authorization", value);
        }
        let response = post.send().await.expect("POST");
        assert_eq!(response.status(), 200, "POST {url}");
        Events::of(response)
    }
}

/// A script that counts into the tenant's `probe` stash forever, about 40
/// times a second (its 500 host calls would last 12 s, past its 5-s wall
/// limit).
pub const FOREVER: &str = "for (let i = 1; ; i++) { await stash.set('count', i); await new Promise((r) => setTimeout(r, 20)); }";

/// The `probe` stash's `count`, read through `session` at `url`.
pub async fn probe_count(session: &RawSession, url: &str) -> i64 {
    let code = json!({"code": "return (await stash.get('count')) ?? 0;", "stash_id": "probe"});
    let text = session.call(url, "execute", code).await.text();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("a count: {text}"))
}

/// Runs [`FOREVER`] in `doomed` at `url`, in the background.
pub fn run_forever(url: &str, doomed: &RawSession) -> tokio::task::JoinHandle<()> {
    let (doomed, url) = (doomed.clone(), url.to_string());
    tokio::spawn(async move {
        let _ = doomed
            .call(
                &url,
                "execute",
                json!({"code": FOREVER, "stash_id": "probe"}),
            )
            .await;
    })
}

/// Waits until `running` (a [`FOREVER`] script) counted, as `probe` reads at
/// `url` (a session of the same tenant), calls `stop`, and checks that the
/// script wrote nothing 250 ms after `stop` returned, and that its call
/// ended.
pub async fn stopped_within_250_ms(
    probe: &RawSession,
    url: &str,
    running: tokio::task::JoinHandle<()>,
    stop: impl std::future::Future<Output = ()>,
) {
    use std::time::Duration;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let start = probe_count(probe, url).await;
    while probe_count(probe, url).await < start + 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the script never wrote"
        );
    }
    stop.await;
    // The bound under test: nothing is written 250 ms after the stop
    // (rmcp alone lets a closed session's handlers run on for 5 s).
    tokio::time::sleep(Duration::from_millis(250)).await;
    let settled = probe_count(probe, url).await;
    tokio::time::sleep(Duration::from_millis(750)).await;
    assert_eq!(
        probe_count(probe, url).await,
        settled,
        "the stopped script still writes"
    );
    let _ = tokio::time::timeout(Duration::from_secs(3), running)
        .await
        .expect("the stopped call ended");
}
