//! Ending a session the way MCP SDKs do: `DELETE` with the session id answers
//! 204 No Content (the Python `mcp` SDK warns "Session termination failed" on
//! anything but 200/204), the session is gone afterwards, and its running
//! script stops at once.

use std::time::Duration;

use crate::support;

use serde_json::json;
use support::{QuiverDev, raw_session::RawSession};

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

/// The probe stash's `count`, read through `session` at `url`.
async fn count(session: &RawSession, url: &str) -> i64 {
    let code = json!({"code": "return (await stash.get('count')) ?? 0;", "stash_id": "probe"});
    let text = session.call(url, "execute", code).await.text();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("a count: {text}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_sessions_script_stops_within_250_ms() {
    let dev = QuiverDev::start(&[]);
    let url = dev.mode_url("code");
    let probe = RawSession::open(&url, None).await;
    let doomed = RawSession::open(&url, None).await;
    let running = {
        let (doomed, url) = (doomed.clone(), url.clone());
        tokio::spawn(async move {
            let forever = "for (let i = 1; ; i++) { await stash.set('count', i); }";
            doomed
                .call(
                    &url,
                    "execute",
                    json!({"code": forever, "stash_id": "probe"}),
                )
                .await
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while count(&probe, &url).await < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the script never wrote"
        );
    }
    assert_eq!(doomed.delete(&url).await, 204);
    // The bound under test: nothing is written 250 ms after the DELETE
    // (rmcp alone lets a closed session's handlers run on for 5 s).
    tokio::time::sleep(Duration::from_millis(250)).await;
    let settled = count(&probe, &url).await;
    tokio::time::sleep(Duration::from_millis(750)).await;
    assert_eq!(
        count(&probe, &url).await,
        settled,
        "the deleted session's script still writes"
    );
    let _ = tokio::time::timeout(Duration::from_secs(3), running)
        .await
        .expect("the deleted session's call ended");
}
