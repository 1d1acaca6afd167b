//! Ending a session the way MCP SDKs do: `DELETE` with the session id answers
//! 204 No Content (the Python `mcp` SDK warns "Session termination failed" on
//! anything but 200/204), the session is gone afterwards, and its running
//! script stops at once.

use crate::support;

use serde_json::json;
use support::{
    QuiverDev,
    raw_session::{FOREVER, RawSession, run_forever, stopped_within_250_ms},
};

const ACCEPT: &str = "application/json, text/event-stream";

#[tokio::test(flavor = "multi_thread")]
async fn delete_ends_the_session_with_204_on_every_path() {
    let dev = QuiverDev::start(&[]);
    let http = support::http();
    for url in [
        dev.url.clone(),
        dev.mode_url("search"),
        format!("{}/passthrough", dev.url),
    ] {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "session-end", "version": "0"}}});
        let response = http
            .post(&url)
            .header("Accept", ACCEPT)
            .json(&initialize)
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.status(), 200, "{url}");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_string();

        let ended = http
            .delete(&url)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .expect("DELETE");
        assert_eq!(ended.status(), 204, "DELETE {url}");

        let after = http
            .post(&url)
            .header("Accept", ACCEPT)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .send()
            .await
            .expect("request after DELETE");
        assert_eq!(
            after.status(),
            404,
            "the ended session still answers at {url}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_its_script_within_250_ms() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("code");
    let session = RawSession::open(&url, None).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user changed their mind"}});
    let probe = RawSession::open(&url, None).await;
    stopped_within_250_ms(&probe, &url, run_forever(&url, &session), async {
        assert_eq!(session.send(&url, &cancel).await.status, 202);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_sessions_script_stops_within_250_ms() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("code");
    let doomed = RawSession::open(&url, None).await;
    let probe = RawSession::open(&url, None).await;
    stopped_within_250_ms(&probe, &url, run_forever(&url, &doomed), async {
        assert_eq!(doomed.delete(&url).await, 204);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_clients_dropped_connection_stops_its_script_within_250_ms() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("code");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "execute", "arguments": {"code": FOREVER, "stash_id": "probe"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let running = {
        let url = url.clone();
        tokio::spawn(async move {
            let _ = support::http()
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "execute")
                .json(&call)
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .expect("the call started")
                .text()
                .await;
        })
    };
    let connection = running.abort_handle();
    let probe = RawSession::open(&url, None).await;
    stopped_within_250_ms(&probe, &url, running, async move { connection.abort() }).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_stream_resumes_with_what_it_missed_including_the_result() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("code");
    let session = RawSession::open(&url, None).await;
    let slow = "console.log('started'); await new Promise((r) => setTimeout(r, 1500)); return 'finished while away';";
    let mut cut = session
        .call_streaming(&url, "execute", json!({"code": slow}))
        .await;
    // The stream's first event names where a client resumes from; the
    // stream is cut before the result.
    let (first_id, first) = cut.next().await.expect("a first event");
    let resume_from = first_id.expect("the first event has an id");
    assert!(first.get("result").is_none(), "{first}");
    drop(cut);

    let mut resumed = session.listen(&url, Some(&resume_from)).await;
    let result = loop {
        let (_, message) = resumed
            .next()
            .await
            .expect("the call's result after resuming");
        if message.get("result").is_some() {
            break message;
        }
    };
    assert_eq!(result["id"], 8, "{result}");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("finished while away"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_standalone_stream_resumes_after_its_last_event() {
    use support::{ControlPlaneProcess, EdgeProcess, ExecutorProcess, add_hooks_upstream};

    // An upstream that logs (the weather mock's test hooks), behind a
    // control plane, one executor and one edge.
    let dir = tempfile::tempdir().unwrap();
    let cp = ControlPlaneProcess::start(1, &dir.path().join("n1"), &["--bootstrap"]);
    add_hooks_upstream(&cp.addr, "w", "weather", &[]);
    let _executor = ExecutorProcess::start(&["--control-plane", &cp.addr, "--node-name", "exec"]);
    let edge = EdgeProcess::start(&cp.addr);
    edge.until("the executor takes work", |e| {
        e.iter().filter(|x| x["state"] == "ok").count() == 1
    })
    .await;
    let url = edge.url("passthrough");
    let session = RawSession::open(&url, None).await;
    let logging =
        |tag: &str| json!({"group": tag, "parties": 1, "steps": 0, "tag": tag, "logs": 3});
    let mut stream = session.listen(&url, None).await;
    session
        .call(&url, "w__quiver_test_rendezvous", logging("before"))
        .await;
    let mut last = None;
    let mut heard = Vec::new();
    while heard.len() < 3 {
        let (id, message) = stream.next().await.expect("the first log messages");
        if message["method"] == "notifications/message" {
            heard.push(message["params"]["data"].clone());
            last = id;
        }
    }
    drop(stream);
    // Sent while no stream is open: kept for the client's return.
    session
        .call(&url, "w__quiver_test_rendezvous", logging("while-cut"))
        .await;
    let mut resumed = session
        .listen(&url, Some(&last.expect("log events carry ids")))
        .await;
    let mut missed = Vec::new();
    while missed.len() < 3 {
        let (_, message) = resumed.next().await.expect("the missed log messages");
        if message["method"] == "notifications/message" {
            missed.push(
                message["params"]["data"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    let expected: Vec<String> = (1..=3).map(|n| format!("while-cut log #{n}")).collect();
    assert_eq!(missed, expected);
}
