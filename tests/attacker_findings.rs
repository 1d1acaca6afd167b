//! What an attacker tried against a real `quiver dev`, each held now: a
//! header that grew memory without a credential, an open `/status`, more
//! sessions than an edge can hold. Each test fails on the code before its
//! fix (the finding it answers is named in its first lines).

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{self, QuiverDev, http, start_with_config, word_after};

/// Resident memory of process `pid`, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The value of `quiver_table_entries{quiver_table="<table>"}` at `metrics`.
async fn table_entries(metrics: &str, table: &str) -> Option<f64> {
    let text = http()
        .get(metrics)
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    let label = format!("quiver_table=\"{table}\"");
    text.lines()
        .filter(|l| l.starts_with("quiver_table_entries") && l.contains(&label))
        .find_map(|l| l.rsplit_once(' ')?.1.parse().ok())
}

/// A 2026-07-28 (stateless) `tools/list`, carrying `session` as its
/// `Mcp-Session-Id`.
async fn stateless_list(url: &str, session: &str) -> u16 {
    http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .header("mcp-session-id", session)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

/// Finding 1 (high): each stateless request naming no session added an
/// entry to the edge's session registry that nothing removed (1,000
/// requests with 60 KB ids: +58 MB, without a credential).
#[tokio::test(flavor = "multi_thread")]
async fn made_up_session_ids_leave_nothing_behind() {
    let dev = QuiverDev::start(&["--admin-listen", "127.0.0.1:0"]);
    let metrics = format!("{}/metrics", word_after(&dev.banner, "admin"));
    let url = dev.mode_url("passthrough");
    // Warm: the first requests allocate what every request reuses.
    for i in 0..20 {
        assert_eq!(stateless_list(&url, &format!("warm-{i}")).await, 200);
    }
    let before = rss_kib(dev.pid());
    eprintln!("--- 1,000 stateless requests with distinct 60 KB session ids");
    let padding = "x".repeat(60 * 1024);
    for i in 0..1000 {
        let id = format!("{i:06}{padding}");
        assert_eq!(stateless_list(&url, &id).await, 200, "request {i}");
    }
    let grown = rss_kib(dev.pid()).saturating_sub(before);
    assert!(
        grown < 8 * 1024,
        "the edge grew by {grown} KiB for ids that name nothing"
    );
    assert_eq!(
        table_entries(&metrics, "edge.sessions").await,
        Some(0.0),
        "no session was opened"
    );
}

/// An `initialize` as a 2025-era client sends it; the session id answered.
async fn initialize(url: &str) -> (u16, Option<String>, String) {
    let response = support::post_initialize(url, None).await;
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, session, response.text().await.unwrap_or_default())
}

/// The edge holds at most `max_sessions` sessions, and one tenant at most
/// `max_sessions_per_tenant`; an `initialize` past either is refused with
/// 503 and allocates nothing; ending a session makes room again.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_bounded_per_edge_and_per_tenant() {
    let (dev, _dir) = start_with_config(
        "[edge]\nmax_sessions = 5\nmax_sessions_per_tenant = 3\n",
        &["--admin-listen", "127.0.0.1:0"],
    );
    let metrics = format!("{}/metrics", word_after(&dev.banner, "admin"));
    let url = dev.mode_url("passthrough");
    let mut open = Vec::new();
    for _ in 0..3 {
        let (status, session, body) = initialize(&url).await;
        assert_eq!(status, 200, "{body}");
        open.push(session.expect("a session id"));
    }
    eprintln!("--- the anonymous tenant's fourth session is refused");
    let (status, session, body) = initialize(&url).await;
    assert_eq!(status, 503, "{body}");
    assert!(session.is_none());
    assert!(body.contains("most sessions"), "{body}");
    assert_eq!(table_entries(&metrics, "edge.sessions").await, Some(3.0));
    eprintln!("--- a stateless request still goes through");
    assert_eq!(stateless_list(&url, "").await, 200);
    eprintln!("--- ending one makes room");
    let ended = http()
        .delete(&url)
        .header("mcp-session-id", &open[0])
        .send()
        .await
        .expect("DELETE");
    assert!(ended.status().is_success(), "{}", ended.status());
    let (status, _, body) = initialize(&url).await;
    assert_eq!(status, 200, "{body}");
}

/// Finding 2 (medium): `/status` was served on the MCP listener of an edge
/// that requires credentials, to any Host, with upstream errors verbatim
/// (URLs with credentials in their query strings).
#[tokio::test(flavor = "multi_thread")]
async fn status_is_for_operators_checks_host_and_redacts_errors() {
    let secret_url = "http://quiver:hunter2hunter2@127.0.0.1:9/mcp?token=s3cr3t-t0ken-value";
    let config =
        format!("[[upstream]]\nid = \"broken\"\ntransport = \"http\"\nurl = \"{secret_url}\"\n");
    let (dev, _dir) = start_with_config(
        &config,
        &["--auth", "required", "--admin-listen", "127.0.0.1:0"],
    );
    eprintln!("--- an edge that authenticates clients: not on the MCP listener");
    let on_mcp = http()
        .get(format!("http://{}/status", dev.authority()))
        .send()
        .await
        .expect("GET");
    assert_eq!(on_mcp.status(), 404);
    eprintln!("--- on the admin listener, error texts redacted");
    let admin = word_after(&dev.banner, "admin");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status: Value = loop {
        let status: Value = http()
            .get(format!("{admin}/status"))
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .expect("JSON");
        let failed = status["upstreams"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|u| u["id"] == "broken" && u["last_error"].is_string());
        if failed {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the broken upstream never failed: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let text = status.to_string();
    for leaked in ["hunter2hunter2", "s3cr3t-t0ken-value", "127.0.0.1:9"] {
        assert!(!text.contains(leaked), "`{leaked}` in /status: {text}");
    }

    eprintln!("--- an edge that authenticates nobody: on its listener, for its own Host only");
    let open = QuiverDev::start(&[]);
    let ok = http()
        .get(format!("http://{}/status", open.authority()))
        .send()
        .await
        .expect("GET");
    assert_eq!(ok.status(), 200);
    let rebound = http()
        .get(format!("http://{}/status", open.authority()))
        .header("host", "evil.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(rebound.status(), 403);
    let metrics = http()
        .get(format!("http://{}/metrics", open.authority()))
        .header("host", "evil.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(metrics.status(), 403);
}
