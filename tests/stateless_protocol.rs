//! MCP 2026-07-28 beside 2025-11-25 on one `quiver dev`: a stateless client
//! (rmcp's `server/discover` lifecycle, every request carrying its version,
//! client and capabilities in `_meta`) and a session client (`initialize`)
//! use every mode at the same endpoints; the demo upstreams speak 2025-11-25
//! only, so every call also crosses generations. Bad stateless requests get
//! the errors the specification names and the edge keeps serving; a call
//! that needs the client (an upstream's elicitation) becomes `input_required`
//! for a stateless client; `subscriptions/listen` hears of list changes; code
//! mode's stash has a scope without sessions.
#![allow(deprecated)] // elicitation and logging are current in the revisions served

use crate::support;

use std::time::Duration;

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitResult, Implementation, ProtocolVersion, ServerNotification, SubscriptionFilter,
    },
    service::{ClientLifecycleMode, ClientServiceExt as _, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use support::{QuiverDev, call, connect, ctl, http, start_with_config, test_kit_bin, text};

/// A client of MCP 2026-07-28 that declares `capabilities`.
#[derive(Clone)]
pub(crate) struct Stateless {
    capabilities: Value,
}

impl ClientHandler for Stateless {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.capabilities.clone()).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("stateless-test", "1"))
    }
}

/// Connects to `url` with `server/discover` (no session), declaring `capabilities`.
pub(crate) async fn connect_stateless(
    url: &str,
    capabilities: Value,
) -> RunningService<RoleClient, Stateless> {
    quiver_upstream::install_crypto_provider();
    Stateless { capabilities }
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url.to_string()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("a 2026-07-28 client discovers the edge")
}

/// The revision `client` and the edge agreed on.
fn revision<S: rmcp::Service<RoleClient>>(client: &RunningService<RoleClient, S>) -> String {
    client
        .peer_info()
        .expect("server info")
        .protocol_version
        .to_string()
}

/// One call that shows `mode` working: a forecast for Lisbon, directly, through
/// `call_tool`, or from a script.
async fn use_mode<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    mode: &str,
) -> CallToolResult {
    match mode {
        "passthrough" => {
            call(
                client,
                "weather__get_forecast",
                json!({"city": "Lisbon", "days": 1}),
            )
            .await
        }
        "search" => {
            let found = call(client, "search_tools", json!({"query": "weather forecast"})).await;
            assert!(
                text(&found).contains("weather__get_forecast"),
                "{}",
                text(&found)
            );
            call(
                client,
                "call_tool",
                json!({"name": "weather__get_forecast", "arguments": {"city": "Lisbon", "days": 1}}),
            )
            .await
        }
        _ => {
            let code = "return await tools.weather.get_forecast({ city: 'Lisbon', days: 1 });";
            call(client, "execute", json!({"code": code})).await
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn both_generations_use_every_mode_of_one_edge() {
    let dev = QuiverDev::start(&[]);
    for mode in ["passthrough", "search", "code"] {
        let url = dev.mode_url(mode);
        let modern = connect_stateless(&url, json!({})).await;
        assert_eq!(revision(&modern), "2026-07-28", "{mode}");
        let legacy = connect(&url).await;
        assert_eq!(revision(&legacy), "2025-11-25", "{mode}");

        let modern_tools = support::tool_names(&modern).await;
        let legacy_tools = support::tool_names(&legacy).await;
        assert_eq!(
            modern_tools, legacy_tools,
            "{mode}: both see the same tools"
        );
        for (who, result) in [
            ("2026-07-28", use_mode(&modern, mode).await),
            ("2025-11-25", use_mode(&legacy, mode).await),
        ] {
            assert_ne!(
                result.is_error,
                Some(true),
                "{mode} {who}: {}",
                text(&result)
            );
            assert!(
                text(&result).contains("Lisbon"),
                "{mode} {who}: {}",
                text(&result)
            );
        }
        modern.cancel().await.unwrap();
        legacy.cancel().await.unwrap();
    }

    // `/mcp` serves the edge's default mode (code) to both.
    let modern = connect_stateless(&dev.url, json!({})).await;
    let discovered = modern.peer_info().expect("discover result");
    assert!(discovered.capabilities.tools.is_some());
    assert_eq!(
        support::tool_names(&modern).await,
        ["list", "search", "describe", "execute"]
    );
}

/// POSTs one JSON-RPC request with `headers`; the status and the JSON-RPC
/// message (the body, or the first SSE `data:` line).
async fn post(url: &str, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&text)
        .trim()
        .to_string();
    (status, serde_json::from_str(&json).unwrap_or(Value::Null))
}

/// The `_meta` every 2026-07-28 request carries.
fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_stateless_requests_get_the_errors_the_spec_names_and_the_edge_keeps_serving() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("passthrough");
    let list = |id: u64, meta: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}});
    let v2026 = [("mcp-protocol-version", "2026-07-28")];
    let listing = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];

    // A well-formed one, for contrast: no session, the tools, caching hints.
    let (status, ok) = post(&url, &listing, list(1, meta("2026-07-28"))).await;
    assert_eq!(status, 200, "{ok}");
    assert!(
        ok["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{ok}"
    );
    assert_eq!(ok["result"]["resultType"], "complete");
    assert!(
        ok["result"]["ttlMs"].is_u64() && ok["result"]["cacheScope"].is_string(),
        "{ok}"
    );

    // No session is opened, and nothing can be resumed: no event ids, and no
    // GET stream to resume on.
    let raw = http()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(&list(11, meta("2026-07-28")))
        .send()
        .await
        .expect("POST");
    assert!(raw.headers().get("mcp-session-id").is_none());
    let body = raw.text().await.unwrap();
    assert!(!body.lines().any(|l| l.starts_with("id:")), "{body}");
    let get = http()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status().as_u16(), 405);

    // Mcp-Method missing, or naming another method: HeaderMismatch.
    let (status, missing) = post(&url, &v2026, list(2, meta("2026-07-28"))).await;
    assert_eq!(
        (status, missing["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{missing}"
    );
    let wrong = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "prompts/list"),
    ];
    let (status, mismatch) = post(&url, &wrong, list(3, meta("2026-07-28"))).await;
    assert_eq!(
        (status, mismatch["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{mismatch}"
    );

    // Mcp-Name naming another tool than the body's.
    let named = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "weather__get_air_quality"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "weather__get_forecast", "arguments": {"city": "Oslo"}, "_meta": meta("2026-07-28")}});
    let (status, renamed) = post(&url, &named, body).await;
    assert_eq!(
        (status, renamed["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{renamed}"
    );

    // An unknown version: UnsupportedProtocolVersion, with what is supported.
    let unknown = [
        ("mcp-protocol-version", "2099-01-01"),
        ("mcp-method", "tools/list"),
    ];
    let (status, version) = post(&url, &unknown, list(5, meta("2099-01-01"))).await;
    assert_eq!(
        (status, version["error"]["code"].as_i64()),
        (400, Some(-32022)),
        "{version}"
    );
    let supported = &version["error"]["data"]["supported"];
    for served in ["2026-07-28", "2025-11-25"] {
        assert!(
            supported.as_array().unwrap().contains(&json!(served)),
            "{version}"
        );
    }

    // `_meta` without clientCapabilities: invalid params, naming the key.
    let (status, partial) = post(
        &url,
        &listing,
        list(
            6,
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        ),
    )
    .await;
    assert_eq!(
        (status, partial["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{partial}"
    );
    assert!(
        partial.to_string().contains("clientCapabilities"),
        "{partial}"
    );

    // What 2026-07-28 removed: logging/setLevel and ping are not found.
    let set_level = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "logging/setLevel"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel",
        "params": {"level": "info", "_meta": meta("2026-07-28")}});
    let (status, removed) = post(&url, &set_level, body).await;
    assert_eq!(
        (status, removed["error"]["code"].as_i64()),
        (404, Some(-32601)),
        "{removed}"
    );

    // A 2026 request that carries a session id anyway: there are no sessions
    // in 2026-07-28, so the id names nothing and the request is answered.
    let mut with_session = listing.to_vec();
    with_session.push(("mcp-session-id", "not-a-session"));
    let (status, answered) = post(&url, &with_session, list(8, meta("2026-07-28"))).await;
    assert_eq!(status, 200, "{answered}");
    assert!(answered["result"]["tools"].is_array(), "{answered}");

    // A 2025 request without a session: 400, as 2025-11-25 says.
    let legacy = [("mcp-protocol-version", "2025-11-25")];
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}});
    let (status, _) = post(&url, &legacy, body).await;
    assert_eq!(status, 400);

    // And the edge still serves both generations.
    let (status, again) = post(&url, &listing, list(10, meta("2026-07-28"))).await;
    assert_eq!(status, 200, "{again}");
    let client = connect(&url).await;
    assert!(!support::tool_names(&client).await.is_empty());
}

/// `quiver dev` fronting the weather mock with its test hooks (its
/// rendezvous tool asks the client mid-call, as a 2025-11-25 server does).
fn dev_with_asking_upstream() -> (QuiverDev, tempfile::TempDir) {
    dev_with_mock(&[])
}

/// `quiver dev` fronting the weather mock with its test hooks and `extra` flags.
fn dev_with_mock(extra: &[&str]) -> (QuiverDev, tempfile::TempDir) {
    let extra: String = extra.iter().map(|f| format!("\"{f}\", ")).collect();
    let config = format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", {extra}\"--stdio\"]\n",
        test_kit_bin()
    );
    start_with_config(&config, &[])
}

/// `quiver_test_rendezvous` arguments: one call that asks the client once.
pub(crate) fn asking(group: &str, ask: &str) -> Value {
    json!({"group": group, "parties": 1, "steps": 0, "tag": group, "ask": ask, "asks": 1})
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_asking_mid_call_becomes_input_required_for_a_stateless_client() {
    let (dev, _dir) = dev_with_asking_upstream();
    let url = dev.mode_url("passthrough");
    let client = connect_stateless(&url, json!({"elicitation": {}, "sampling": {}})).await;

    let mut params = CallToolRequestParams::new("w__quiver_test_rendezvous");
    params.arguments = asking("elicit", "elicitation").as_object().cloned();
    let first = client
        .call_tool_once(params.clone())
        .await
        .expect("round 1");
    let CallToolResponse::InputRequired(asked) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let requests = asked.input_requests.clone().expect("input requests");
    assert_eq!(requests.len(), 1, "{requests:?}");
    let (key, request) = requests.iter().next().unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let state = asked.request_state.clone().expect("requestState");

    // An altered state names no waiting call.
    let mut tampered = params.clone();
    tampered.request_state = Some(format!("{state}-TAMPERED"));
    tampered.input_responses = Some([(key.clone(), json!({"action": "decline"}))].into());
    let refused = client
        .call_tool_once(tampered)
        .await
        .expect_err("tampered state");
    assert!(refused.to_string().contains("requestState"), "{refused}");

    // Without the answer it asked for, it asks again.
    let mut unanswered = params.clone();
    unanswered.request_state = Some(state.clone());
    unanswered.input_responses = Some([("other".to_string(), json!({}))].into());
    let CallToolResponse::InputRequired(again) =
        client.call_tool_once(unanswered).await.expect("re-asked")
    else {
        panic!("expected input_required again");
    };
    assert!(again.input_requests.as_ref().unwrap().contains_key(key));

    // Answered: the upstream gets what the client said.
    let answer =
        serde_json::to_value(ElicitResult::new(rmcp::model::ElicitationAction::Accept)).unwrap();
    let mut answer = answer;
    answer["content"] = json!({"name": "stateless client"});
    let mut resumed = params.clone();
    resumed.request_state = again.request_state.clone();
    resumed.input_responses = Some([(key.clone(), answer)].into());
    let CallToolResponse::Complete(done) = client.call_tool_once(resumed).await.expect("round 2")
    else {
        panic!("expected the final result");
    };
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    assert!(text(&done).contains("stateless client"), "{}", text(&done));

    // A client that cannot elicit is told which capability the call needs.
    let unable = connect_stateless(&url, json!({})).await;
    let mut params = CallToolRequestParams::new("w__quiver_test_rendezvous");
    params.arguments = asking("unable", "elicitation").as_object().cloned();
    let result = unable.call_tool_once(params).await;
    let answer = match result {
        Ok(CallToolResponse::Complete(r)) => text(&r),
        other => format!("{other:?}"),
    };
    assert!(
        answer.contains("capability") || answer.contains("-32021"),
        "{answer}"
    );

    // A session client of the same edge is still asked the old way.
    let legacy = connect(&url).await;
    assert_eq!(revision(&legacy), "2025-11-25");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_listener_hears_that_the_tools_changed() {
    let dev = QuiverDev::start(&[]);
    let client = connect_stateless(&dev.mode_url("passthrough"), json!({})).await;
    let mut subscription = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen is acknowledged");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    let before = support::tool_names(&client).await;
    assert!(
        before.iter().any(|t| t.starts_with("calendar__")),
        "{before:?}"
    );

    let (ok, out, err) = ctl(&dev.control_plane, &["upstream", "remove", "calendar"]);
    assert!(ok, "{out}{err}");
    let heard = tokio::time::timeout(Duration::from_secs(30), subscription.next())
        .await
        .expect("a notification within 30 s")
        .expect("the stream is open");
    assert!(
        matches!(
            heard,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{heard:?}"
    );
    let after = support::tool_names(&client).await;
    assert!(
        !after.iter().any(|t| t.starts_with("calendar__")),
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_sessions_the_stash_is_the_tenants_named_one() {
    let dev = QuiverDev::start(&["--mode", "code"]);
    let url = dev.mode_url("code");
    let first = connect_stateless(&url, json!({})).await;
    let second = connect_stateless(&url, json!({})).await;
    let run = |code: &str, stash: Option<&str>| {
        let mut args = json!({"code": code});
        if let Some(id) = stash {
            args["stash_id"] = json!(id);
        }
        args
    };
    let set = call(
        &first,
        "execute",
        run("return await stash.set('k', 'default one');", None),
    )
    .await;
    assert_ne!(set.is_error, Some(true), "{}", text(&set));
    let named = call(
        &first,
        "execute",
        run("return await stash.set('k', 'named');", Some("job-7")),
    )
    .await;
    assert_ne!(named.is_error, Some(true), "{}", text(&named));

    // Another stateless client of the tenant shares the default and the named one.
    let read =
        |result: &CallToolResult| result.structured_content.clone().unwrap()["result"].clone();
    let get = "return await stash.get('k');";
    assert_eq!(
        read(&call(&second, "execute", run(get, None)).await),
        "default one"
    );
    assert_eq!(
        read(&call(&second, "execute", run(get, Some("job-7"))).await),
        "named"
    );
    assert_eq!(
        read(&call(&second, "execute", run(get, Some("job-8"))).await),
        Value::Null
    );

    // A session keeps its own, unless it names one.
    let session = connect(&url).await;
    assert_eq!(
        read(&call(&session, "execute", run(get, None)).await),
        Value::Null
    );
    assert_eq!(
        read(&call(&session, "execute", run(get, Some("job-7"))).await),
        "named"
    );

    // A malformed name is refused before anything runs.
    let bad = call(&second, "execute", run("return 1;", Some("../x"))).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("stash_id"), "{}", text(&bad));
}

/// A session client that reports the resource updates it hears.
#[derive(Clone)]
pub(crate) struct UpdateWatcher {
    pub(crate) heard: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ClientHandler for UpdateWatcher {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(params.uri);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_updates_reach_subscribers_of_both_generations() {
    use rmcp::ServiceExt as _;
    let (dev, _dir) = dev_with_asking_upstream();
    let url = dev.mode_url("passthrough");
    let uri = "quiver-test://note";

    quiver_upstream::install_crypto_provider();
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let session = UpdateWatcher { heard: heard_tx }
        .serve(StreamableHttpClientTransport::from_uri(url.clone()))
        .await
        .expect("session client");
    session
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await
        .expect("resources/subscribe");

    let listener = connect_stateless(&url, json!({})).await;
    let mut subscription = listener
        .listen(
            SubscriptionFilter::builder()
                .resource_subscription(uri)
                .build(),
        )
        .await
        .expect("subscriptions/listen");
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec![uri.to_string()])
    );

    let touch = |client| async move {
        let told = call(client, "w__quiver_test_touch_resource", json!({"uri": uri})).await;
        assert_ne!(told.is_error, Some(true), "{}", text(&told));
    };
    touch(&session).await;
    let to_session = tokio::time::timeout(Duration::from_secs(20), heard.recv()).await;
    assert_eq!(to_session.ok().flatten().as_deref(), Some(uri));
    let to_listener = tokio::time::timeout(Duration::from_secs(20), subscription.next())
        .await
        .expect("an update within 20 s")
        .expect("the stream is open");
    match to_listener {
        Some(ServerNotification::ResourceUpdatedNotification(update)) => {
            assert_eq!(update.params.uri, uri)
        }
        other => panic!("expected resources/updated, got {other:?}"),
    }

    // The session lets go; the listener still holds the resource upstream.
    session
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
        .await
        .expect("resources/unsubscribe");
    touch(&session).await;
    let again = tokio::time::timeout(Duration::from_secs(20), subscription.next())
        .await
        .expect("a second update within 20 s")
        .expect("the stream is open");
    assert!(
        matches!(
            again,
            Some(ServerNotification::ResourceUpdatedNotification(_))
        ),
        "{again:?}"
    );
    assert!(heard.try_recv().is_err(), "the session unsubscribed");
}

/// A session client that answers elicitation with its own name.
#[derive(Clone)]
struct Answering;

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {}})).unwrap();
        ClientConfig::new(capabilities, Implementation::new("session-test", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(serde_json::from_value(
            json!({"action": "accept", "content": {"name": "session client"}}),
        )
        .unwrap())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_upstream_asking_reaches_clients_of_both_generations() {
    use rmcp::ServiceExt as _;
    let (dev, _dir) = dev_with_mock(&["--stateless"]);
    let url = dev.mode_url("passthrough");
    let status = dev.status().await;
    assert_eq!(status["upstreams"][0]["protocol"], "2026-07-28", "{status}");

    // A session client: Quiver answers the upstream's input_required rounds
    // by asking it (elicitation/create), then sends the answers back.
    quiver_upstream::install_crypto_provider();
    let session = Answering
        .serve(StreamableHttpClientTransport::from_uri(url.clone()))
        .await
        .expect("session client");
    let done = call(
        &session,
        "w__quiver_test_rendezvous",
        asking("s", "elicitation"),
    )
    .await;
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    assert!(text(&done).contains("session client"), "{}", text(&done));

    // A stateless client: the question comes back as Quiver's input_required.
    let client = connect_stateless(&url, json!({"elicitation": {}})).await;
    let mut params = CallToolRequestParams::new("w__quiver_test_rendezvous");
    params.arguments = asking("m", "elicitation").as_object().cloned();
    let CallToolResponse::InputRequired(asked) = client
        .call_tool_once(params.clone())
        .await
        .expect("round 1")
    else {
        panic!("expected input_required");
    };
    let key = asked
        .input_requests
        .as_ref()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    params.request_state = asked.request_state.clone();
    params.input_responses = Some(
        [(
            key,
            json!({"action": "accept", "content": {"name": "stateless client"}}),
        )]
        .into(),
    );
    let CallToolResponse::Complete(done) = client.call_tool_once(params).await.expect("round 2")
    else {
        panic!("expected the final result");
    };
    assert!(text(&done).contains("stateless client"), "{}", text(&done));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_upstream_is_heard_when_its_tools_change() {
    // No periodic re-listing: only the upstream's notification can tell.
    let config = format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nrefresh_interval_secs = 0\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stateless\", \"--stdio\"]\n",
        test_kit_bin()
    );
    let (dev, _dir) = start_with_config(&config, &[]);
    let (client, mut changed) = support::connect_watching(&dev.mode_url("passthrough")).await;
    let added = call(&client, "w__quiver_test_add_tool", json!({"name": "fresh"})).await;
    assert_ne!(added.is_error, Some(true), "{}", text(&added));
    tokio::time::timeout(Duration::from_secs(30), changed.recv())
        .await
        .expect("tools/list_changed within 30 s")
        .expect("the session is open");
    let names = support::tool_names(&client).await;
    assert!(names.iter().any(|n| n == "w__fresh"), "{names:?}");
}
