//! Upstream faults through a running `quiver dev`: an upstream that is down at
//! start (and comes up later), one that dies mid-call, one that hangs, and one
//! that changes its tool list. The edge keeps serving through all of them.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{
    HeldPort, QuiverDev, call, connect, connect_watching, quiver_bin, spawn_with_banner,
    start_with_config, test_kit_bin, text, tool_names, write_file,
};

fn hooks_upstream(id: &str, server: &str, extra: &str) -> String {
    format!(
        "[[upstream]]\nid = \"{id}\"\ntransport = \"stdio\"\ncommand = \"{bin}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"{server}\", \"--stdio\"]\n{extra}\n",
        bin = test_kit_bin()
    )
}

/// What a mock upstream answered: it echoes `{server, tool, arguments}`.
fn echoed(result: &rmcp::model::CallToolResult) -> serde_json::Value {
    assert_ne!(result.is_error, Some(true), "{}", text(result));
    serde_json::from_str(&text(result))
        .unwrap_or_else(|e| panic!("not the mock's JSON echo ({e}): {}", text(result)))
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_down_at_start_does_not_block_others_and_joins_when_up() {
    let dir = tempfile::tempdir().unwrap();
    // The late upstream's port is held by the test from here to the end:
    // refused until the upstream is up, so no other process can take it.
    let late_port = HeldPort::new();
    let config = format!(
        "{}\n[[upstream]]\nid = \"missing\"\ntransport = \"stdio\"\ncommand = \"/nonexistent/quiver-no-such-server\"\n\n[[upstream]]\nid = \"late\"\ntransport = \"http\"\nurl = \"http://{}/mcp\"\nconnect_timeout_ms = 1000\n",
        hooks_upstream("weather", "weather", ""),
        late_port.addr
    );
    let path = write_file(dir.path(), "quiver.toml", &config);

    tracing::info!("--- start with two of three upstreams unreachable");
    let dev = QuiverDev::start(&["--config", path.to_str().unwrap(), "--mode", "passthrough"]);
    let (client, mut changed) = connect_watching(&dev.url).await;
    let names = tool_names(&client).await;
    assert!(
        names.iter().any(|n| n == "weather__get_forecast"),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("late__") || n.starts_with("missing__"))
    );
    let ok = call(
        &client,
        "weather__get_current_conditions",
        json!({"city": "Oslo"}),
    )
    .await;
    let answer = echoed(&ok);
    assert_eq!(
        (&answer["tool"], &answer["arguments"]),
        (&json!("get_current_conditions"), &json!({"city": "Oslo"})),
        "{answer}"
    );

    let status: serde_json::Value = dev.status().await;
    let upstreams = status["upstreams"].as_array().unwrap();
    let missing = upstreams.iter().find(|u| u["id"] == "missing").unwrap();
    assert_eq!(missing["state"], "down", "{status}");
    assert!(
        missing["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{status}"
    );

    tracing::info!("--- bring the late upstream up; discovery retries and publishes it");
    let mut command = std::process::Command::new(quiver_bin());
    command.args([
        "mock-upstream",
        "--demo",
        "--server",
        "notes",
        "--listen",
        "127.0.0.1:0",
    ]);
    let (mut late, banner) = spawn_with_banner(&mut command, "mock-upstream");
    let bound = banner
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in: {banner}"))
        .to_string();
    let relay = late_port.forward_to(bound);
    let appeared = async {
        loop {
            changed.recv().await.expect("notification channel open");
            let tools = client.list_all_tools().await.unwrap();
            if tools.iter().any(|t| t.name == "late__create_note") {
                return;
            }
        }
    };
    let waited = tokio::time::timeout(Duration::from_secs(60), appeared).await;
    let created = match waited {
        Ok(()) => Some(
            call(
                &client,
                "late__create_note",
                json!({"title": "joined", "text": "late but here"}),
            )
            .await,
        ),
        Err(_) => None,
    };
    relay.abort();
    let _ = late.kill();
    let _ = late.wait();
    let created = created.expect("the late upstream's tools were published and announced");
    let answer = echoed(&created);
    assert_eq!(
        (&answer["tool"], &answer["arguments"]["title"]),
        (&json!("create_note"), &json!("joined")),
        "the late upstream answers: {answer}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_dying_mid_call_is_reported_and_respawned() {
    let (mut dev, _dir) = start_with_config(
        &hooks_upstream("w", "weather", ""),
        &["--mode", "passthrough"],
    );
    let client = connect(&dev.url).await;

    tracing::info!("--- the upstream process exits while handling the call");
    let crashed = call(&client, "w__quiver_test_crash", json!({})).await;
    assert_eq!(crashed.is_error, Some(true));
    let message = text(&crashed);
    assert!(message.contains("not retried"), "{message}");
    assert!(!message.contains(quiver_bin()), "no paths leak: {message}");

    tracing::info!("--- the next call re-spawns it");
    let again = call(&client, "w__get_forecast", json!({"city": "Rome"})).await;
    let answer = echoed(&again);
    assert_eq!(
        (&answer["tool"], &answer["arguments"]),
        (&json!("get_forecast"), &json!({"city": "Rome"})),
        "the re-spawned upstream answered this call: {answer}"
    );
    assert!(dev.is_running());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn hung_upstream_times_out_with_a_clear_error() {
    let (dev, _dir) = start_with_config(
        &hooks_upstream("w", "weather", "call_timeout_ms = 300"),
        &["--mode", "passthrough"],
    );
    let client = connect(&dev.url).await;
    let hung = call(&client, "w__quiver_test_sleep", json!({"ms": 20000})).await;
    assert_eq!(hung.is_error, Some(true));
    assert!(
        text(&hung).contains("did not answer within"),
        "{}",
        text(&hung)
    );
    let fine = call(&client, "w__get_forecast", json!({"city": "Rome"})).await;
    let answer = echoed(&fine);
    assert_eq!(
        (&answer["tool"], &answer["arguments"]),
        (&json!("get_forecast"), &json!({"city": "Rome"})),
        "the next call gets its own answer, not the hung one's: {answer}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_tool_list_change_reaches_clients() {
    let (dev, _dir) = start_with_config(
        &hooks_upstream("w", "weather", ""),
        &["--mode", "passthrough"],
    );
    let (client, mut changed) = connect_watching(&dev.url).await;
    assert!(
        !client
            .list_all_tools()
            .await
            .unwrap()
            .iter()
            .any(|t| t.name == "w__fresh_tool")
    );

    let added = call(
        &client,
        "w__quiver_test_add_tool",
        json!({"name": "fresh_tool"}),
    )
    .await;
    assert_eq!(echoed(&added)["tool"], "quiver_test_add_tool");
    let appeared = async {
        loop {
            changed.recv().await.expect("notification channel open");
            if client
                .list_all_tools()
                .await
                .unwrap()
                .iter()
                .any(|t| t.name == "w__fresh_tool")
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), appeared)
        .await
        .expect("list_changed announced the new tool");
    let result = call(&client, "w__fresh_tool", json!({"n": 1})).await;
    let answer = echoed(&result);
    assert_eq!(
        (&answer["tool"], &answer["arguments"]),
        (&json!("fresh_tool"), &json!({"n": 1})),
        "the new tool is routed to the upstream: {answer}"
    );
    client.cancel().await.unwrap();
}

#[derive(Clone)]
struct ProgressWatcher(tokio::sync::mpsc::UnboundedSender<f64>);

impl rmcp::ClientHandler for ProgressWatcher {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.progress);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn client_cancellation_reaches_the_upstream() {
    use rmcp::{
        ServiceExt,
        model::{CallToolRequest, CallToolRequestParams, ClientRequest},
        service::PeerRequestOptions,
        transport::StreamableHttpClientTransport,
    };
    let (dev, _dir) = start_with_config(
        &hooks_upstream("w", "weather", ""),
        &["--mode", "passthrough"],
    );
    quiver_upstream::install_crypto_provider();
    let (progress_tx, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let client = ProgressWatcher(progress_tx)
        .serve(StreamableHttpClientTransport::from_uri(dev.url.clone()))
        .await
        .unwrap();

    tracing::info!("--- start a long call and wait until the upstream reports it started");
    let mut params = CallToolRequestParams::new("w__quiver_test_sleep");
    params.arguments = json!({"ms": 60000}).as_object().cloned();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), progress.recv())
        .await
        .expect("progress from the upstream was relayed")
        .expect("progress channel open");

    tracing::info!("--- cancel it; the upstream must see notifications/cancelled");
    handle
        .cancel(Some("user pressed stop".into()))
        .await
        .unwrap();
    let saw_cancel = async {
        loop {
            let stats = call(&client, "w__quiver_test_stats", json!({})).await;
            let value: serde_json::Value = serde_json::from_str(&text(&stats)).unwrap();
            if value["cancelled"] == 1 {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), saw_cancel)
        .await
        .expect("the upstream saw notifications/cancelled");
    client.cancel().await.unwrap();
}
