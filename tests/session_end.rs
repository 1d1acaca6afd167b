//! Ending a session the way MCP SDKs do: `DELETE` with the session id answers
//! 204 No Content (the Python `mcp` SDK warns "Session termination failed" on
//! anything but 200/204), and the session is gone afterwards.

use crate::support;

use serde_json::json;
use support::QuiverDev;

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
