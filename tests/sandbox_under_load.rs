//! Code mode under hostile load, through the edge as a client sees it: real
//! MCP sessions against `quiver dev`, real worker processes. Each pattern is
//! one that used to wedge, starve or balloon the executor; it runs eight at a
//! time, and afterwards:
//! - every answer came back (a wedge would hang the test: each phase is
//!   bounded and fails naming the pattern),
//! - no answer is larger than the output cap,
//! - the pool settles (nothing running or waiting) and a benign script from
//!   another session succeeds,
//! - no worker's peak resident memory (VmHWM, from `/proc`) passed its limit.

use crate::support;

use std::time::Duration;

use futures::future::join_all;
use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, CallToolResult, ClientRequest},
    service::{PeerRequestOptions, RunningService},
};
use serde_json::{Value, json};
use support::{QuiverDev, call, connect, text};

/// What one answer may carry at most: the result cap (1 MiB), the log cap
/// (64 KiB), each present twice (text and structured content), plus framing.
const ANSWER_CAP: usize = 2 * (1024 * 1024 + 64 * 1024) + 16 * 1024;
/// A worker's memory limit: its data-size cap (`worker::isolation`).
const WORKER_MEMORY_LIMIT_KIB: u64 = 768 * 1024;
/// How long one phase may take before it counts as wedged.
const PHASE_BOUND: Duration = Duration::from_secs(90);

type Client = RunningService<RoleClient, ()>;

async fn execute(client: &Client, code: &str) -> CallToolResult {
    call(client, "execute", json!({ "code": code })).await
}

fn answer_bytes(result: &CallToolResult) -> usize {
    serde_json::to_string(result).map_or(usize::MAX, |s| s.len())
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// The worker processes `quiver dev` has started, with their peak memory.
fn worker_peaks_kib(dev_pid: u32) -> Vec<(u32, u64)> {
    let mut peaks = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return peaks;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().trim_end_matches(" kB").to_string())
        };
        let is_child = field("PPid:").is_some_and(|p| p == dev_pid.to_string());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if is_child && cmdline.windows(8).any(|w| w == b"__worker") {
            let peak = field("VmHWM:").and_then(|v| v.parse().ok()).unwrap_or(0);
            peaks.push((pid, peak));
        }
    }
    peaks
}

struct Harness {
    dev: QuiverDev,
}

impl Harness {
    fn start() -> Harness {
        Harness {
            dev: QuiverDev::start(&["--mode", "code"]),
        }
    }

    async fn workers(&self) -> Value {
        self.dev.status().await["workers"].clone()
    }

    /// Eight sessions run `code` at once; returns their answers.
    async fn eight_at_once(&self, pattern: &str, code: &str) -> Vec<CallToolResult> {
        let clients: Vec<Client> = join_all((0..8).map(|_| connect(&self.dev.url))).await;
        let answers = tokio::time::timeout(
            PHASE_BOUND,
            join_all(clients.iter().map(|client| execute(client, code))),
        )
        .await
        .unwrap_or_else(|_| panic!("{pattern}: the executor wedged (answers never came)"));
        for client in clients {
            let _ = client.cancel().await;
        }
        answers
    }

    /// Eight sessions run `code` at once; each must fail saying `error`.
    async fn all_fail_with(&self, pattern: &str, code: &str, error: &str) {
        let answers = self.eight_at_once(pattern, code).await;
        for answer in &answers {
            assert_eq!(answer.is_error, Some(true), "{pattern}: {}", text(answer));
            assert!(text(answer).contains(error), "{pattern}: {}", text(answer));
        }
        self.check_after(pattern, &answers).await;
    }

    /// After a pattern: every answer within the cap, the pool settled, a
    /// benign script from another session served, no worker over its limit.
    async fn check_after(&self, pattern: &str, answers: &[CallToolResult]) {
        for answer in answers {
            let bytes = answer_bytes(answer);
            assert!(
                bytes <= ANSWER_CAP,
                "{pattern}: an answer of {bytes} bytes passed the cap"
            );
        }
        let settled = tokio::time::timeout(PHASE_BOUND, async {
            loop {
                let workers = self.workers().await;
                if workers["running"] == 0 && workers["waiting"] == 0 {
                    return workers;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{pattern}: the pool never settled"));
        tracing::info!(%pattern, %settled, "pool settled");
        let other = connect(&self.dev.url).await;
        let benign = tokio::time::timeout(PHASE_BOUND, execute(&other, "return 1 + 1;"))
            .await
            .unwrap_or_else(|_| panic!("{pattern}: a benign script waited forever"));
        assert_eq!(
            structured(&benign)["result"],
            json!(2),
            "{pattern}: a benign script from another session failed: {}",
            text(&benign)
        );
        let _ = other.cancel().await;
        for (pid, peak) in worker_peaks_kib(self.dev.pid()) {
            assert!(
                peak <= WORKER_MEMORY_LIMIT_KIB,
                "{pattern}: worker {pid} peaked at {peak} KiB, over its {WORKER_MEMORY_LIMIT_KIB} KiB limit"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn large_parallel_replies_and_requests_never_wedge_a_worker() {
    let harness = Harness::start();

    tracing::info!("--- eight parallel tool calls with ~200 KB answers, eight scripts at once");
    let code = r#"
        const big = "x".repeat(200000);
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) =>
          tools.weather.get_forecast({ city: big + i, days: 1 })));
        return answers.map((a) => a.arguments.city.length);"#;
    let answers = harness.eight_at_once("large replies", code).await;
    for answer in &answers {
        assert_eq!(
            structured(answer)["result"],
            json!(vec![200_001; 8]),
            "{}",
            text(answer)
        );
    }
    harness.check_after("large replies", &answers).await;

    tracing::info!("--- sixteen ~600 KB describe requests, eight scripts at once");
    let code = r#"
        const big = "y".repeat(600000);
        const settled = await Promise.allSettled(Array.from({ length: 16 }, () => describe(big)));
        return settled.filter((s) => s.status === "rejected" && s.reason.message.includes("unknown tool")).length;"#;
    let answers = harness.eight_at_once("large requests", code).await;
    for answer in &answers {
        assert_eq!(structured(answer)["result"], json!(16), "{}", text(answer));
    }
    harness.check_after("large requests", &answers).await;

    tracing::info!("--- a request over the size limit is refused before it is parsed");
    let code = r#"
        try { await describe("z".repeat(2 * 1024 * 1024)); return "sent"; }
        catch (e) { return e.message; }"#;
    let answers = harness.eight_at_once("oversized request", code).await;
    for answer in &answers {
        let said = structured(answer)["result"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(said.contains("at most 1048576 bytes"), "{said}");
    }
    harness.check_after("oversized request", &answers).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn floods_budgets_and_memory_amplification_stay_bounded() {
    let harness = Harness::start();

    tracing::info!("--- millions of empty console.log() lines");
    let code = r#"for (let i = 0; i < 5000000; i++) console.log(); return "done";"#;
    let answers = harness.eight_at_once("log flood", code).await;
    for answer in &answers {
        let body = structured(answer);
        assert_eq!(body["result"], json!("done"), "{}", text(answer));
        assert_eq!(body["truncated"], json!(true));
        let lines = body["logs"].as_array().map_or(0, Vec::len);
        // 64 KiB of log budget, at least 8 bytes a line, plus the marker.
        assert!(lines <= 64 * 1024 / 8 + 1, "{lines} log lines came back");
    }
    harness.check_after("log flood", &answers).await;

    tracing::info!("--- un-awaited 8 MB stash writes");
    let code = r#"
        const big = "m".repeat(8 * 1024 * 1024);
        let refused = 0;
        const writes = [];
        for (let i = 0; i < 100; i++) writes.push(stash.set("k" + i, big).catch(() => { refused++; }));
        await Promise.all(writes);
        return refused;"#;
    let answers = harness.eight_at_once("stash amplification", code).await;
    for answer in &answers {
        assert_eq!(structured(answer)["result"], json!(100), "{}", text(answer));
    }
    harness.check_after("stash amplification", &answers).await;

    tracing::info!("--- host calls of every kind count toward the budget");
    for (pattern, code) in [
        (
            "search loop",
            r#"for (;;) await search("weather forecast");"#,
        ),
        (
            "describe loop",
            r#"for (;;) await describe("weather__get_forecast");"#,
        ),
        (
            "stash fan-out",
            r#"for (let i = 0; ; i++) await stash.get("k" + i);"#,
        ),
    ] {
        harness
            .all_fail_with(pattern, code, "script host_calls")
            .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn native_loops_hit_the_wall_limit_and_cancellation_frees_the_slot() {
    let harness = Harness::start();

    tracing::info!("--- native builtin loops that never check the interrupt");
    for (pattern, code) in [
        (
            "includes over a huge array-like",
            "return Array.prototype.includes.call({ length: 2 ** 32 - 1 }, 1);",
        ),
        ("a plain busy loop", "while (true) {}"),
    ] {
        harness.all_fail_with(pattern, code, "script timeout").await;
    }

    tracing::info!("--- a cancelled request stops its script");
    let client = connect(&harness.dev.url).await;
    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                CallToolRequestParams::new("execute").with_arguments(
                    json!({ "code": "while (true) {}" })
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("the request is sent");
    harness
        .script_stopped_before_its_limit("cancelled", || async move {
            handle
                .cancel(Some("the user gave up".into()))
                .await
                .expect("the cancellation is sent");
        })
        .await;
    let _ = client.cancel().await;

    harness.check_after("cancellation", &[]).await;
}

impl Harness {
    /// Waits until one script runs, does `stop`, and checks that the script's
    /// worker is stopped and its slot free well before its 5 s time limit.
    async fn script_stopped_before_its_limit<F, Fut>(&self, pattern: &str, stop: F)
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        tokio::time::timeout(PHASE_BOUND, async {
            while self.workers().await["running"] != 1 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{pattern}: the script never started"));
        let before = self.workers().await["retired"].as_u64().unwrap_or(0);
        stop().await;
        let freed = tokio::time::timeout(Duration::from_millis(2500), async {
            loop {
                let workers = self.workers().await;
                if workers["running"] == 0 {
                    return workers;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!("{pattern}: the script still held its worker halfway to its time limit")
        });
        assert!(
            freed["retired"].as_u64().unwrap_or(0) > before,
            "{pattern}: the script's worker was not stopped: {freed}"
        );
    }
}
