//! Bad input at the HTTP edge gets a clear error and loses nothing: malformed
//! JSON-RPC, oversized bodies, DNS-rebinding Host/Origin values. The edge keeps
//! serving real clients afterwards.

use crate::support;

use serde_json::{Value, json};
use support::{QuiverDev, call, connect, text};

const ACCEPT: &str = "application/json, text/event-stream";

async fn post(
    url: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let client = support::http();
    let mut request = client
        .post(url)
        .header("Accept", ACCEPT)
        .header("Content-Type", "application/json")
        .body(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("request sent");
    (
        response.status().as_u16(),
        response.text().await.unwrap_or_default(),
    )
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_and_hostile_requests_are_refused_and_the_edge_keeps_serving() {
    let dev = QuiverDev::start(&["--mode", "passthrough"]);
    let url = dev.url.clone();

    tracing::info!("--- not JSON at all");
    let (status, body) = post(&url, "{this is not json", &[]).await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert_eq!(error["error"]["code"], -32700, "{body}");

    tracing::info!("--- JSON, but not JSON-RPC");
    let (status, body) = post(&url, r#"{"hello": "world"}"#, &[]).await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).expect("a JSON-RPC error body");
    assert_eq!(error["error"]["code"], -32600, "{body}");

    tracing::info!("--- oversized body");
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let (status, body) = post(&url, huge, &[]).await;
    assert_eq!(status, 413);
    assert!(body.contains("exceeds the limit"), "{body}");

    tracing::info!("--- DNS rebinding: foreign Host and Origin");
    let (status, _) = post(&url, initialize(), &[("Host", "evil.example")]).await;
    assert_eq!(status, 403);
    let (status, _) = post(&url, initialize(), &[("Origin", "http://evil.example")]).await;
    assert_eq!(status, 403);

    tracing::info!("--- an allowed browser origin and plain requests still work");
    let (status, body) = post(&url, initialize(), &[("Origin", "http://localhost:3000")]).await;
    assert_eq!(status, 200, "{body}");

    tracing::info!("--- a real client session still works");
    let client = connect(&url).await;
    let result = call(&client, "weather__get_forecast", json!({"city": "Oslo"})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    client.cancel().await.unwrap();

    let health = support::http()
        .get(format!("http://{}/healthz", dev.authority()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn both_protocol_versions_negotiate() {
    let dev = QuiverDev::start(&[]);
    for version in ["2025-06-18", "2025-11-25"] {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let (status, body) = post(&dev.url, request.to_string(), &[]).await;
        assert_eq!(status, 200, "{body}");
        let message: Value = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(body.as_str()))
            .find_map(|c| serde_json::from_str::<Value>(c.trim()).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in {body}"));
        assert_eq!(message["result"]["protocolVersion"], version, "{message}");
    }
}
