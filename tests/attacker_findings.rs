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

/// The text of `GET metrics`.
async fn metrics_text(metrics: &str) -> String {
    http()
        .get(metrics)
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text")
}

/// The value of `quiver_table_entries{quiver_table="<table>"}` in `text`.
fn entries_in(text: &str, table: &str) -> Option<f64> {
    let label = format!("quiver_table=\"{table}\"");
    text.lines()
        .filter(|l| l.starts_with("quiver_table_entries") && l.contains(&label))
        .find_map(|l| l.rsplit_once(' ')?.1.parse().ok())
}

/// The value of `quiver_table_entries{quiver_table="<table>"}` at `metrics`.
async fn table_entries(metrics: &str, table: &str) -> Option<f64> {
    entries_in(&metrics_text(metrics).await, table)
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

/// Finding 3 (medium): one tenant minted 2,630 keys in seconds. Keys per
/// tenant are capped (`[control_plane] max_keys_per_tenant`), with an
/// error that says what to do; console sign-ins are rate-limited.
#[tokio::test(flavor = "multi_thread")]
async fn keys_per_tenant_are_capped_and_sign_ins_are_rate_limited() {
    let (dev, _dir) = start_with_config("[control_plane]\nmax_keys_per_tenant = 3\n", &[]);
    let endpoints = dev.control_plane.clone();
    let (ok, _, err) = support::ctl(&endpoints, &["tenant", "create", "acme"]);
    assert!(ok, "{err}");
    for _ in 0..3 {
        let (ok, _, err) = support::ctl(&endpoints, &["key", "issue", "acme"]);
        assert!(ok, "{err}");
    }
    let (ok, _, err) = support::ctl(&endpoints, &["key", "issue", "acme"]);
    assert!(!ok, "a fourth key was issued");
    assert!(
        err.contains("holds 3 keys") && err.contains("key revoke"),
        "{err}"
    );

    eprintln!("--- one credential signing in over and over is held back");
    let session = format!("http://{}/console/api/session", dev.authority());
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let response = http()
            .post(&session)
            .json(&json!({"role": "operator", "credential": "a-guess"}))
            .send()
            .await
            .expect("POST");
        statuses.push(response.status().as_u16());
    }
    assert!(statuses[..10].iter().all(|&s| s == 401), "{statuses:?}");
    assert_eq!(statuses[10..], [429, 429], "{statuses:?}");
}

/// Reads from `stream` until the server closes it (`true`) or `within`
/// passes (`false`); what it sent is returned too.
async fn closed_by_server(stream: &mut tokio::net::TcpStream, within: Duration) -> (bool, String) {
    use tokio::io::AsyncReadExt;
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (true, String::from_utf8_lossy(&seen).into()),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (false, String::from_utf8_lossy(&seen).into()),
        }
    }
}

/// Finding 4 (medium): idle and half-sent connections stayed open 95 s
/// and more, and slow bodies were held for a minute. Now a request head must
/// arrive within `header_timeout_secs` (which also ends idle connections),
/// a body within `body_timeout_secs`, and one address holds at most
/// `max_connections_per_address` connections; the edge keeps serving.
#[tokio::test(flavor = "multi_thread")]
async fn slow_and_greedy_clients_are_cut_off_and_the_edge_keeps_serving() {
    use tokio::io::AsyncWriteExt;
    let (dev, _dir) = start_with_config(
        "[edge]\nheader_timeout_secs = 1\nbody_timeout_secs = 1\nmax_connections_per_address = 6\n",
        &[],
    );
    let address = dev.authority();
    let connect = || tokio::net::TcpStream::connect(address.clone());
    // Far more than the timeouts, far less than the 95 s the finding saw.
    let within = Duration::from_secs(20);

    eprintln!("--- an idle connection is closed");
    let mut idle = connect().await.expect("connect");
    let (closed, _) = closed_by_server(&mut idle, within).await;
    assert!(closed, "an idle connection was kept open");

    eprintln!("--- a half-sent request head is closed");
    let mut slow_head = connect().await.expect("connect");
    slow_head
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Ty").as_bytes())
        .await
        .expect("write");
    let (closed, _) = closed_by_server(&mut slow_head, within).await;
    assert!(closed, "a half-sent head was kept open");

    eprintln!("--- a body that never finishes is answered 408");
    let mut slow_body = connect().await.expect("connect");
    let head = format!(
        "POST /console/api/session HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"cred"
    );
    slow_body.write_all(head.as_bytes()).await.expect("write");
    let (_, answer) = closed_by_server(&mut slow_body, within).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    eprintln!("--- and the edge still serves");
    let health = http()
        .get(format!("http://{address}/healthz"))
        .send()
        .await
        .expect("GET /healthz");
    assert_eq!(health.status(), 200);

    eprintln!("--- one address holds at most 6 connections (idle ones kept 30 s here)");
    let (dev, _dir) = start_with_config(
        "[edge]\nheader_timeout_secs = 30\nmax_connections_per_address = 6\n",
        &[],
    );
    let address = dev.authority();
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(
            tokio::net::TcpStream::connect(&address)
                .await
                .expect("connect"),
        );
    }
    let mut extra = tokio::net::TcpStream::connect(&address)
        .await
        .expect("the kernel accepts");
    let (closed, answer) = closed_by_server(&mut extra, within).await;
    assert!(
        closed && answer.is_empty(),
        "the 7th connection was served: {answer}"
    );
    drop(held);
    let deadline = std::time::Instant::now() + within;
    loop {
        // The held ones are gone: room again (their ends reach the edge
        // in a moment).
        match http().get(format!("http://{address}/healthz")).send().await {
            Ok(health) if health.status() == 200 => break,
            other => assert!(
                std::time::Instant::now() < deadline,
                "the edge never served again: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Finding 9 (info): the console's Origin check ignored the scheme, and
/// reading a tool's declaration in the console (a GET) taught search.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_checks_the_origins_scheme_and_its_gets_change_nothing() {
    let data = tempfile::tempdir().expect("temp dir");
    let dev = QuiverDev::start(&["--data", data.path().to_str().expect("utf-8 path")]);
    let session = format!("http://{}/console/api/session", dev.authority());
    let other_scheme = http()
        .post(&session)
        .header("origin", format!("https://{}", dev.authority()))
        .json(&json!({"role": "tenant", "credential": ""}))
        .send()
        .await
        .expect("POST");
    assert_eq!(other_scheme.status(), 403);
    let same = http()
        .post(&session)
        .header("origin", format!("http://{}", dev.authority()))
        .json(&json!({"role": "tenant", "credential": ""}))
        .send()
        .await
        .expect("POST");
    assert_eq!(same.status(), 200);
    let cookie = same
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_string();

    eprintln!("--- browsing tools in the console teaches search nothing");
    let api = format!("http://{}/console/api", dev.authority());
    for path in [
        "/tools?q=weather+forecast",
        "/tool?name=weather__get_forecast",
    ] {
        let answer = http()
            .get(format!("{api}{path}"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("GET");
        assert_eq!(answer.status(), 200, "{path}");
    }
    let token = std::fs::read_to_string(data.path().join("console-operator.token"))
        .expect("quiver dev's operator token");
    let stats: Value = http()
        .get(format!("http://{}/search/stats", dev.authority()))
        .bearer_auth(token.trim())
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(stats["tenants"], json!([]), "{stats}");
}

/// Finding 8 (low): `/oauth/callback` could be framed, a duplicated
/// `state` spent a live flow, and without `[edge.oauth] resource` the
/// request's `Host` was reflected into `WWW-Authenticate` and the
/// protected-resource metadata.
#[tokio::test(flavor = "multi_thread")]
async fn the_callback_is_never_framed_takes_one_state_and_no_host_is_reflected() {
    let dev = QuiverDev::start(&["--auth", "required"]);
    let base = format!("http://{}", dev.authority());
    let callback = http()
        .get(format!("{base}/oauth/callback?state=a&code=b&state=c"))
        .send()
        .await
        .expect("GET");
    assert_eq!(callback.status(), 400);
    let csp = callback
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(
        callback
            .headers()
            .get("x-frame-options")
            .and_then(|v| v.to_str().ok()),
        Some("DENY")
    );
    let page = callback.text().await.expect("page");
    assert!(page.contains("more than once"), "{page}");

    let challenge = http()
        .post(format!("{base}/mcp"))
        .header("host", "evil.example")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("POST");
    assert_eq!(challenge.status(), 401);
    let www = challenge
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(www.contains("resource_metadata"), "{www}");
    assert!(!www.contains("evil.example"), "{www}");
    let metadata: Value = http()
        .get(format!("{base}/.well-known/oauth-protected-resource"))
        .header("host", "evil.example")
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert!(
        !metadata["resource"].to_string().contains("evil.example"),
        "{metadata}"
    );
}

/// Finding 6 (low): a 1 MB unknown tool name was written whole into a WARN
/// line (rmcp logs the error it answers with, and the error quoted the
/// name). Names are quoted at most 128 bytes long now, in the answer and
/// so in the log.
#[tokio::test(flavor = "multi_thread")]
async fn a_huge_unknown_tool_name_is_not_echoed_or_logged_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("quiver.log");
    let dev = QuiverDev::start_logging_to(&[], &log);
    let url = dev.mode_url("passthrough");
    let client = support::connect(&url).await;
    let name = "x".repeat(1024 * 1024);
    let refused = client
        .call_tool(rmcp::model::CallToolRequestParams::new(name))
        .await
        .expect_err("an unknown tool");
    let answer = refused.to_string();
    assert!(
        answer.contains("unknown tool"),
        "{}",
        &answer[..answer.len().min(300)]
    );
    assert!(answer.len() < 4096, "the answer is {} bytes", answer.len());
    drop(client);
    // The edge answered (and logged) before the client saw the answer.
    let text = std::fs::read_to_string(&log).expect("the log");
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 16 * 1024, "a log line of {longest} bytes");
    assert!(text.contains("unknown tool"), "the refusal was logged");
}

/// The metrics docs/architecture.md's "What grows with tenants" names for
/// each structure: table names (`quiver_table_entries{quiver_table}`) and
/// gauges of their own (`quiver_…`).
fn metrics_the_docs_name() -> (Vec<String>, Vec<String>) {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"),
    )
    .expect("docs/architecture.md");
    let section = docs
        .split("## What grows with tenants")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a section \"What grows with tenants\"");
    let (mut tables, mut gauges) = (Vec::new(), Vec::new());
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        let metric = row.trim_end_matches('|').rsplit('|').next().unwrap_or("");
        let named = metric.split('`').skip(1).step_by(2);
        if metric.trim_start().starts_with("table") {
            // Table names (`edge.sessions`); gauges named beside them are
            // by tenant and appear only once a tenant holds something.
            let table_like = |n: &&str| {
                n.contains('.')
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_')
            };
            tables.extend(named.filter(table_like).map(str::to_owned));
        } else {
            gauges.extend(
                named
                    .filter(|n| n.starts_with("quiver_"))
                    .map(str::to_owned),
            );
        }
    }
    (tables, gauges)
}

/// Every structure a client or tenant grows is counted where the docs say:
/// each table and gauge of "What grows with tenants" is on `/metrics` of a
/// running `quiver dev` (a structure added without its metric, or a metric
/// renamed without the docs, fails here).
#[tokio::test(flavor = "multi_thread")]
async fn every_table_this_section_names_is_on_metrics() {
    let (tables, gauges) = metrics_the_docs_name();
    assert!(
        tables.len() >= 10 && gauges.len() >= 4,
        "the section lists its metrics: {tables:?} {gauges:?}"
    );
    let dev = QuiverDev::start(&["--admin-listen", "127.0.0.1:0"]);
    let metrics = format!("{}/metrics", word_after(&dev.banner, "admin"));
    // Some tables appear once their owner is made (the model loads in the
    // background): wait for them, up to a deadline.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let text = metrics_text(&metrics).await;
        let missing: Vec<&String> = tables
            .iter()
            .filter(|t| entries_in(&text, t).is_none())
            .chain(gauges.iter().filter(|g| {
                !text.lines().any(|l| {
                    l.strip_prefix(g.as_str())
                        .is_some_and(|rest| rest.starts_with([' ', '{', '_']))
                })
            }))
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "named in docs/architecture.md but not on /metrics: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
