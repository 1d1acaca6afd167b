//! One greedy tenant cannot take what another needs, through a real `quiver
//! dev` (`--auth required`, two tenants with their own keys):
//!
//! - the stash: a tenant at its quota is refused in every one of its sessions
//!   with an error naming its quota, while the other tenant writes; raising
//!   the quota with `quiver ctl tenant update` lets it write again; `ctl
//!   tenant usage` and `/metrics` show what it holds;
//! - the worker queue: 80 long scripts at once from one tenant, then one
//!   probe from another, which finishes within the first wave of the flood;
//!   the flood's surplus is refused in its own terms; queue waits are in
//!   `/metrics` by tenant;
//! - the output cap: a 2 MB result and a quote-heavy one leave the edge
//!   within the cap as encoded on the wire, with a non-empty preview.

use crate::support;

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use support::{QuiverDev, call, connect_as, ctl, ctl_json, ctl_until, http, text, word_after};

/// A tenant in code mode with a key; `flags` go to `tenant create`.
fn tenant(cp: &str, id: &str, flags: &[&str]) -> String {
    let mut args = vec!["tenant", "create", id, "--mode", "code"];
    args.extend_from_slice(flags);
    let (ok, _, err) = ctl(cp, &args);
    assert!(ok, "tenant create {id}: {err}");
    ctl_json(cp, &["key", "issue", id])["key"]
        .as_str()
        .expect("a key")
        .to_string()
}

/// `quiver dev` authenticating its clients, with an admin listener.
fn dev() -> (QuiverDev, String) {
    let dev = QuiverDev::start(&["--auth", "required", "--admin-listen", "127.0.0.1:0"]);
    let admin = word_after(&dev.banner, "admin");
    (dev, admin)
}

/// `/metrics` from the admin listener.
async fn metrics(admin: &str) -> String {
    http()
        .get(format!("{admin}/metrics"))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("/metrics text")
}

/// Whether a sample line of `metric` carries every one of `labels`.
fn has_sample(metrics: &str, metric: &str, labels: &[&str]) -> bool {
    metrics
        .lines()
        .any(|l| l.starts_with(metric) && labels.iter().all(|label| l.contains(label)))
}

/// One stateless (2026-07-28) `execute` of `code` as `key`, with its own
/// `stash_id`: the status, the JSON-RPC message's bytes as they came over
/// the wire, and the message.
async fn execute_raw(url: &str, key: &str, code: &str, stash_id: &str) -> (u16, usize, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "execute", "arguments": {"code": code, "stash_id": stash_id},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let response = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("POST execute");
    let status = response.status().as_u16();
    let raw = response.text().await.unwrap_or_default();
    let message = raw
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&raw)
        .trim()
        .to_string();
    let value = serde_json::from_str(&message).unwrap_or(Value::Null);
    (status, message.len(), value)
}

/// The text of a raw `tools/call` answer.
fn raw_text(message: &Value) -> &str {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// Writes `count` values of 16,000 characters under `prefix0..` and returns
/// `{stored, error?}`: how many were stored before the first refusal.
fn fill(prefix: &str, count: usize) -> String {
    format!(
        "let stored = 0;
         for (let i = 0; i < {count}; i++) {{
           try {{ await stash.set('{prefix}' + i, 'x'.repeat(16000)); stored++; }}
           catch (e) {{ return {{stored, error: String(e && e.message || e)}}; }}
         }}
         return {{stored}};"
    )
}

async fn run_fill(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    prefix: &str,
    count: usize,
    stash_id: Option<&str>,
) -> Value {
    let mut args = json!({"code": fill(prefix, count)});
    if let Some(id) = stash_id {
        args["stash_id"] = json!(id);
    }
    let result = call(client, "execute", args).await;
    result
        .structured_content
        .as_ref()
        .map(|s| s["result"].clone())
        .unwrap_or_else(|| panic!("no result: {}", text(&result)))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_at_its_stash_quota_is_refused_while_another_tenant_writes() {
    let (dev, admin) = dev();
    let cp = dev.control_plane.clone();
    let greedy_key = tenant(&cp, "greedy", &["--stash-bytes", "64KiB"]);
    let quiet_key = tenant(&cp, "quiet", &[]);
    let url = dev.mode_url("code");
    let greedy = connect_as(&url, &greedy_key).await;

    // Each entry takes 16,004 bytes (key and serialised value): four fit in
    // 64 KiB, the fifth is refused with the tenant's own quota.
    let first = run_fill(&greedy, "k", 10, None).await;
    assert_eq!(first["stored"], 4, "{first}");
    let refusal = first["error"].as_str().unwrap_or_default();
    assert!(
        refusal.contains("tenant `greedy` may keep 65536 bytes"),
        "{first}"
    );
    // The quota is the tenant's, not the session's: another of its stashes
    // is refused too.
    let other_stash = run_fill(&greedy, "o", 1, Some("elsewhere")).await;
    assert_eq!(other_stash["stored"], 0, "{other_stash}");

    // The other tenant writes what greedy could not.
    let quiet = connect_as(&url, &quiet_key).await;
    let theirs = run_fill(&quiet, "k", 10, None).await;
    assert_eq!(theirs, json!({"stored": 10}));

    // Raising greedy's quota lets it write again (once its executor has
    // the new policy).
    let (ok, _, err) = ctl(
        &cp,
        &["tenant", "update", "greedy", "--stash-bytes", "256KiB"],
    );
    assert!(ok, "{err}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut raised = run_fill(&greedy, "more", 1, Some("elsewhere")).await;
    while raised["stored"] != 1 && std::time::Instant::now() < deadline {
        raised = run_fill(&greedy, "more", 1, Some("elsewhere")).await;
    }
    assert_eq!(raised["stored"], 1, "{raised}");

    // ctl tenant usage shows the holding and the quota (executors report
    // every couple of seconds).
    let usage = ctl_until(
        &cp,
        &["-o", "json", "tenant", "usage", "greedy"],
        |ok, out| {
            ok && serde_json::from_str::<Value>(out).is_ok_and(|v| {
                v["stash_bytes"].as_u64() == Some(5 * 16_004 + 3)
                    && v["stash_quota_bytes"] == 262_144
            })
        },
    );
    let usage: Value = serde_json::from_str(&usage).expect("usage as JSON");
    assert_eq!(usage["stash_keys"], 5, "{usage}");
    assert_eq!(usage["stash_executors"], 1, "{usage}");

    // And so do the metrics, with the refusals by reason.
    let scraped = metrics(&admin).await;
    assert!(
        has_sample(
            &scraped,
            "quiver_stash_bytes",
            &["quiver_tenant=\"greedy\""]
        ),
        "{scraped}"
    );
    assert!(
        has_sample(
            &scraped,
            "quiver_stash_refusals_total",
            &["quiver_tenant=\"greedy\"", "reason=\"tenant_quota\""]
        ),
        "{scraped}"
    );
    assert!(
        !has_sample(
            &scraped,
            "quiver_stash_refusals_total",
            &["quiver_tenant=\"quiet\""]
        ),
        "{scraped}"
    );
    greedy.cancel().await.unwrap();
    quiet.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_from_one_tenant_delays_another_by_at_most_one_script() {
    let (dev, admin) = dev();
    let cp = dev.control_plane.clone();
    let flood_key = tenant(&cp, "flood", &[]);
    let probe_key = tenant(&cp, "probe", &[]);
    let url = dev.mode_url("code");

    // Every completion takes the next number: the order things ended in.
    let order = Arc::new(AtomicUsize::new(0));
    let (refused_tx, mut refused_rx) = tokio::sync::mpsc::unbounded_channel();
    let long = "const end = Date.now() + 2000; while (Date.now() < end) {} return 'done';";
    let flood: Vec<_> = (0..80)
        .map(|i| {
            let (url, key, order, refused_tx) = (
                url.clone(),
                flood_key.clone(),
                order.clone(),
                refused_tx.clone(),
            );
            tokio::spawn(async move {
                let (status, _, message) =
                    execute_raw(&url, &key, long, &format!("flood-{i}")).await;
                let at = order.fetch_add(1, Ordering::SeqCst);
                let answer = raw_text(&message).to_string();
                if answer != "\"done\"" {
                    let _ = refused_tx.send(());
                }
                (status, at, answer)
            })
        })
        .collect();

    // Once the flood is being refused, its share of the pool and its part
    // of the queue are full: now the probe.
    refused_rx.recv().await.expect("a refusal");
    let (status, _, message) = execute_raw(&url, &probe_key, "return 'probe'", "probe").await;
    let probe_at = order.fetch_add(1, Ordering::SeqCst);
    assert_eq!(
        (status, raw_text(&message)),
        (200, "\"probe\""),
        "{message}"
    );

    let mut done_before_probe = 0;
    let mut done = 0;
    let mut refusals = Vec::new();
    for task in flood {
        let (status, at, answer) = task.await.unwrap();
        assert_eq!(status, 200);
        if answer == "\"done\"" {
            done += 1;
            done_before_probe += usize::from(at < probe_at);
        } else {
            refusals.push(answer);
        }
    }
    // The flood runs at most its share (6 of 8) at once; the probe ended
    // before the flood's second wave did, so it waited for at most one
    // script.
    assert!(
        done_before_probe <= 6,
        "{done_before_probe} flood scripts ended before the probe"
    );
    assert!(done >= 6, "the flood's queued scripts ran too: {done}");
    assert!(!refusals.is_empty());
    for refusal in &refusals {
        assert!(
            refusal.contains("this tenant already has 16 scripts waiting"),
            "{refusal}"
        );
    }

    let scraped = metrics(&admin).await;
    for labels in [
        ["quiver_tenant=\"flood\"", "outcome=\"granted\""],
        ["quiver_tenant=\"flood\"", "outcome=\"refused\""],
        ["quiver_tenant=\"probe\"", "outcome=\"granted\""],
    ] {
        assert!(
            has_sample(
                &scraped,
                "quiver_worker_pool_queue_wait_seconds_count",
                &labels
            ),
            "{labels:?} in {scraped}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn large_and_quote_heavy_replies_leave_the_edge_within_the_output_cap() {
    let (dev, _admin) = dev();
    let cp = dev.control_plane.clone();
    let big_key = tenant(&cp, "big", &[]);
    let quotes_key = tenant(&cp, "quotes", &[]);
    let url = dev.mode_url("code");
    let cap = 1024 * 1024;

    // 2 MB: over the cap before encoding.
    let (status, bytes, message) =
        execute_raw(&url, &big_key, "return 'x'.repeat(2 * 1024 * 1024)", "s").await;
    assert_eq!(status, 200);
    assert!(bytes <= cap, "{bytes} bytes on the wire");
    let preview = raw_text(&message);
    assert!(
        preview.contains("xxxxxxxx"),
        "{}",
        &preview[..200.min(preview.len())]
    );
    assert!(
        preview.len() > cap / 2,
        "a preview of {} bytes",
        preview.len()
    );
    assert_eq!(message["result"]["structuredContent"]["truncated"], true);

    // 400,000 quotes: under the cap as a value, but escaped twice in the
    // text and once more in the structured content.
    let (status, bytes, message) =
        execute_raw(&url, &quotes_key, "return '\"'.repeat(400000)", "s").await;
    assert_eq!(status, 200);
    assert!(bytes <= cap, "{bytes} bytes on the wire");
    let preview = raw_text(&message);
    assert!(
        preview.starts_with("\"\\\"\\\"\\\""),
        "{}",
        &preview[..40.min(preview.len())]
    );
    assert!(
        preview.len() > cap / 4,
        "a preview of {} bytes",
        preview.len()
    );
    assert!(
        preview.contains("output cap"),
        "the preview says it was cut"
    );

    // Within the cap, nothing is cut.
    let (_, _, message) = execute_raw(&url, &big_key, "return 'x'.repeat(1000)", "s").await;
    assert_eq!(raw_text(&message).len(), 1002);
    assert_eq!(message["result"]["structuredContent"]["truncated"], false);
}
