//! A real Prometheus scrapes every role of a small cluster of real processes
//! — a `quiver control-plane` node, a `quiver executor` following it, and
//! `quiver dev --executor child --auth required` (its admin listener and its
//! child executor's) — after MCP traffic through dev (passthrough, a refused
//! call, searches, execute): every target is up, each role exports its key
//! metrics, every metric the Grafana dashboard reads is exported, and
//! `/healthz` + `/readyz` answer on every role (503 naming the failed check
//! for an executor whose control plane is unreachable).

use crate::support;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use quiver_telemetry::{health::Readiness, instruments::names, metrics::prometheus_name};
use serde_json::{Value, json};
use support::{
    HeldPort, QuiverDev, call, connect_as, ctl, ctl_json, ctl_until, demo_upstream_flags, http,
    partial_run, quiver_bin, serving_addr, spawn_with_banner, text, word_after,
};

/// How long a cluster on two shared cores may take to get somewhere.
const DEADLINE: Duration = Duration::from_secs(60);

/// A process killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `quiver control-plane --bootstrap --admin-listen 127.0.0.1:0`: the
/// process, its gRPC address and its admin URL.
fn start_control_plane(data: &Path) -> (Running, String, String) {
    let mut command = Command::new(quiver_bin());
    command
        .args(["control-plane", "--node-id", "1", "--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(data)
        .args(["--heartbeat-ms", "50", "--election-timeout-ms", "300"])
        .args(["--bootstrap", "--admin-listen", "127.0.0.1:0"]);
    let (child, banner) = spawn_with_banner(&mut command, "quiver control-plane");
    let child = Running(child);
    (child, serving_addr(&banner), word_after(&banner, "admin"))
}

/// `quiver executor --admin-listen 127.0.0.1:0 <args>`: the process and its
/// admin URL.
fn start_executor(args: &[&str]) -> (Running, String) {
    let mut command = Command::new(quiver_bin());
    command
        .args(["executor", "--listen", "127.0.0.1:0"])
        .args(["--admin-listen", "127.0.0.1:0"])
        .args(args);
    let (child, banner) = spawn_with_banner(&mut command, "quiver executor");
    let child = Running(child);
    assert!(banner.contains("quiver executor: serving"), "{banner}");
    (child, word_after(&banner, "admin"))
}

/// `GET url`: status and body as JSON.
async fn get_json(url: &str) -> (u16, Value) {
    let response = http()
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status().as_u16();
    let body = response
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"));
    (status, body)
}

/// Polls `base/readyz` until it answers 200 (against [`DEADLINE`]), and
/// checks `/healthz` on the way; the readiness it reported.
async fn wait_ready(base: &str, role: &str) -> Readiness {
    let (status, alive) = get_json(&format!("{base}/healthz")).await;
    assert_eq!(status, 200, "{base}/healthz: {alive}");
    assert_eq!(alive, json!({"status": "alive", "role": role}), "{base}");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (status, body) = get_json(&format!("{base}/readyz")).await;
        let readiness: Readiness = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("{base}/readyz is not a readiness ({e}): {body}"));
        if status == 200 {
            assert!(readiness.ready, "200 but not ready: {body}");
            assert_eq!(readiness.role, role);
            return readiness;
        }
        assert_eq!(status, 503, "{base}/readyz: {body}");
        assert!(!readiness.ready, "503 but ready: {body}");
        assert!(
            Instant::now() < deadline,
            "{base} ({role}) never became ready: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `prometheus` binary on `PATH`; `None` (skip) only in a partial run.
fn prometheus_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("prometheus"))
            .find(|candidate| candidate.is_file())
    });
    let path = found.unwrap_or_else(|| PathBuf::from("/usr/bin/prometheus"));
    partial_run::required_input(
        &path,
        "this test scrapes with a real Prometheus: run scripts/install-deps.sh",
    )
}

/// A running Prometheus scraping `jobs` (name, `host:port` targets) every
/// second, with its storage in a temporary directory.
struct Prometheus {
    process: Running,
    /// `http://127.0.0.1:<port>`.
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    async fn start(binary: &Path, jobs: &[(&str, Vec<String>)]) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for (job, targets) in jobs {
            let targets: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ));
        }
        let config_path = support::write_file(dir.path(), "prometheus.yml", &config);
        // A free port: Prometheus cannot report the one it bound.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log_path = dir.path().join("prometheus.log");
        let log = std::fs::File::create(&log_path).expect("prometheus log file");
        let process = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let mut prometheus = Prometheus {
            process: Running(process),
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let deadline = Instant::now() + DEADLINE;
        loop {
            let ready = http()
                .get(format!("{}/-/ready", prometheus.url))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return prometheus;
            }
            // It logs why it stopped or is not ready (a taken port, a bad
            // config line).
            let exited = matches!(prometheus.process.0.try_wait(), Ok(Some(_)));
            assert!(
                !exited && Instant::now() < deadline,
                "Prometheus {}: {}",
                if exited {
                    "exited"
                } else {
                    "never became ready"
                },
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The result vector of an instant query.
    async fn query(&self, promql: &str) -> Vec<Value> {
        let response: Value = http()
            .get(format!(
                "{}/api/v1/query?query={}",
                self.url,
                url_encode(promql)
            ))
            .send()
            .await
            .expect("query Prometheus")
            .json()
            .await
            .expect("Prometheus answers JSON");
        assert_eq!(response["status"], "success", "{promql}: {response}");
        response["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls `promql` until its series cover every one of `instances`
    /// (by their `instance` label); fails after [`DEADLINE`] naming what
    /// was missing.
    async fn wait_for_instances(&self, promql: &str, instances: &[String]) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let seen: BTreeSet<String> = self
                .query(promql)
                .await
                .iter()
                .filter_map(|s| s["metric"]["instance"].as_str().map(str::to_string))
                .collect();
            let missing: Vec<&String> = instances.iter().filter(|i| !seen.contains(*i)).collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{promql}` has no series from {missing:?} (has {seen:?})"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// `text` percent-encoded for a URL query (everything but RFC 3986's
/// unreserved characters).
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Metric names in `expr`: every identifier naming a Quiver or MCP metric
/// is followed by a selector (`{…}`) or a range (`[…]`); identifiers in
/// `by (…)` or before `=` are labels.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < bytes.len() {
        if is_ident(bytes[i]) && (i == 0 || !is_ident(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            let word = &expr[start..i];
            let next = expr[i..].trim_start().bytes().next();
            if (word.starts_with("quiver_") || word.starts_with("mcp_"))
                && matches!(next, Some(b'{' | b'['))
            {
                names.push(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

/// Every PromQL expression of the Grafana dashboard.
fn dashboard_exprs() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/quiver-dashboard.json");
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    let mut stack = vec![&dashboard];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(expr)) = map.get("expr") {
                    exprs.push(expr.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    assert!(!exprs.is_empty(), "no PromQL in {}", path.display());
    exprs
}

/// `expr` as Grafana would send it: its variables replaced (every
/// instance, a one-minute rate window).
fn as_grafana_sends(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$instance", ".*")
}

/// Sample names in a Prometheus text exposition.
fn exported_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn metric_names_are_told_from_labels() {
    assert_eq!(
        metric_names(
            "histogram_quantile(0.99, sum by (le, quiver_mode) (rate(quiver_search_duration_seconds_bucket{quiver_role=\"edge\"}[5m])))"
        ),
        ["quiver_search_duration_seconds_bucket"]
    );
    assert_eq!(
        metric_names("sum(quiver_worker_pool_queued {instance=~\"$instance\"}) + up{}"),
        ["quiver_worker_pool_queued"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_role_is_ready_and_scraped_by_prometheus_and_the_dashboard_reads_only_exported_metrics()
 {
    let Some(prometheus_bin) = prometheus_binary() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");

    tracing::info!("--- a control-plane node with an upstream (a committed write)");
    let (_control_plane, cp_addr, cp_admin) = start_control_plane(&dir.path().join("cp"));
    let mut add = vec!["upstream", "add", "weather"];
    let flags = demo_upstream_flags("weather", &[]);
    add.extend(flags.iter().map(String::as_str));
    let (ok, _, err) = ctl(&cp_addr, &add);
    assert!(ok, "ctl upstream add: {err}");

    tracing::info!("--- an executor following it, and quiver dev with a child executor");
    let (_executor, executor_admin) = start_executor(&[
        "--control-plane",
        &cp_addr,
        "--node-name",
        "telemetry-executor",
    ]);
    // It authenticates its clients, so its edge port serves the probes but
    // not /metrics (which name tenants): Prometheus reads its admin listener.
    let dev = QuiverDev::start(&[
        "--mode",
        "code",
        "--executor",
        "child",
        "--auth",
        "required",
        "--admin-listen",
        "127.0.0.1:0",
    ]);
    let child_admin = word_after(&dev.banner, "executor-admin");
    let edge = word_after(&dev.banner, "admin");
    let edge_port = format!("http://{}", dev.authority());

    tracing::info!("--- /healthz and /readyz on every role");
    wait_ready(&cp_admin, "control-plane").await;
    let executor = wait_ready(&executor_admin, "executor").await;
    let names: Vec<&str> = executor.checks.iter().map(|c| c.name.as_str()).collect();
    // The control-plane check never fails; it says how stale the manifest may be.
    assert_eq!(names, ["manifest", "workers", "control-plane"]);
    assert!(
        executor.checks.iter().all(|c| c.ok),
        "{:?}",
        executor.checks
    );
    wait_ready(&child_admin, "executor").await;
    let dev_ready = wait_ready(&edge, "dev").await;
    assert!(
        dev_ready
            .checks
            .iter()
            .any(|c| c.name == "executor" && c.ok),
        "{dev_ready:?}"
    );
    assert_eq!(dev.status().await["executor_admin"], json!(child_admin));
    let (status, alive) = get_json(&format!("{edge_port}/healthz")).await;
    assert_eq!(status, 200, "the edge port serves the probes too: {alive}");
    let on_edge_port = http()
        .get(format!("{edge_port}/metrics"))
        .send()
        .await
        .expect("GET /metrics on the edge port");
    assert!(
        !on_edge_port.status().is_success(),
        "an edge that authenticates serves /metrics on its MCP port: {}",
        on_edge_port.status()
    );

    tracing::info!(
        "--- MCP traffic through dev as a tenant allowed one forecast: passthrough (the second refused), search (one with no hits), execute"
    );
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &[
            "tenant",
            "create",
            "observed",
            "--server",
            "weather",
            "--tool-rate-limit",
            "weather/get_forecast=1",
        ],
    );
    assert!(ok, "tenant create: {err}");
    let key = ctl_json(&dev.control_plane, &["key", "issue", "observed"])["key"]
        .as_str()
        .expect("a key")
        .to_string();
    let passthrough = connect_as(&dev.mode_url("passthrough"), &key).await;
    let forecast = call(
        &passthrough,
        "weather__get_forecast",
        json!({"city": "Oslo"}),
    )
    .await;
    assert_ne!(forecast.is_error, Some(true), "{}", text(&forecast));
    let refused = call(
        &passthrough,
        "weather__get_forecast",
        json!({"city": "Bergen"}),
    )
    .await;
    assert!(
        refused.is_error == Some(true) && text(&refused).contains("rate limit"),
        "the second forecast was not refused: {}",
        text(&refused)
    );
    passthrough
        .cancel()
        .await
        .expect("end the passthrough session");
    let search = connect_as(&dev.mode_url("search"), &key).await;
    search
        .list_all_tools()
        .await
        .expect("tools/list in search mode");
    let found = call(
        &search,
        "search_tools",
        json!({"query": "weather forecast for a city"}),
    )
    .await;
    assert!(
        text(&found).contains("weather__get_forecast"),
        "{}",
        text(&found)
    );
    let nothing = call(&search, "search_tools", json!({"query": "zqxjv wqpfk"})).await;
    assert_ne!(nothing.is_error, Some(true), "{}", text(&nothing));
    search.cancel().await.expect("end the search session");
    let code = connect_as(&dev.mode_url("code"), &key).await;
    code.list_all_tools()
        .await
        .expect("tools/list in code mode");
    let executed = call(
        &code,
        "execute",
        json!({"code": "return (await tools.weather.get_current_conditions({ city: 'Lima' })).tool;"}),
    )
    .await;
    assert_ne!(executed.is_error, Some(true), "{}", text(&executed));
    code.cancel().await.expect("end the code session");

    tracing::info!(
        "--- the control plane lists the executor as ready, at the admin address scraped below"
    );
    ctl_until(&cp_addr, &["-o", "json", "cluster", "status"], |ok, out| {
        let Some(status) = ok
            .then(|| serde_json::from_str::<Value>(out).ok())
            .flatten()
        else {
            return false;
        };
        status["fleet"].as_array().is_some_and(|fleet| {
            fleet.iter().any(|n| {
                n["node"] == "telemetry-executor"
                    && n["ready"] == true
                    && n["admin"] == executor_admin.as_str()
            })
        })
    });

    tracing::info!("--- a real Prometheus scrapes every target");
    let host = |url: &str| url.trim_start_matches("http://").to_string();
    let edge_target = host(&edge);
    let executor_targets = vec![host(&executor_admin), host(&child_admin)];
    let cp_target = host(&cp_admin);
    let prometheus = Prometheus::start(
        &prometheus_bin,
        &[
            ("quiver-edge", vec![edge_target.clone()]),
            ("quiver-executor", executor_targets.clone()),
            ("quiver-control-plane", vec![cp_target.clone()]),
        ],
    )
    .await;
    let every_target = [
        vec![edge_target.clone(), cp_target.clone()],
        executor_targets.clone(),
    ]
    .concat();
    prometheus
        .wait_for_instances("up == 1", &every_target)
        .await;

    tracing::info!("--- each role's key metrics, as Prometheus stored them");
    let edge_only = std::slice::from_ref(&edge_target);
    for metric in [
        "mcp_server_operation_duration_seconds_count{job=\"quiver-edge\",mcp_method_name=\"tools/call\"}",
        "mcp_server_session_duration_seconds_count{job=\"quiver-edge\"}",
        "quiver_search_duration_seconds_count{job=\"quiver-edge\"}",
        "quiver_tokens_saved_total{job=\"quiver-edge\"}",
    ] {
        prometheus.wait_for_instances(metric, edge_only).await;
    }
    let child_only = [host(&child_admin)];
    prometheus
        .wait_for_instances(
            "quiver_executions_total{job=\"quiver-executor\",outcome=\"ok\"}",
            &child_only,
        )
        .await;
    prometheus
        .wait_for_instances(
            "quiver_refusals_total{job=\"quiver-executor\",reason=\"tool_rate_limit\",quiver_tenant=\"observed\"}",
            &child_only,
        )
        .await;
    prometheus
        .wait_for_instances(
            "mcp_client_operation_duration_seconds_count{job=\"quiver-executor\"}",
            &child_only,
        )
        .await;
    prometheus
        .wait_for_instances(
            "quiver_worker_pool_workers{job=\"quiver-executor\"}",
            &executor_targets,
        )
        .await;
    let cp_only = std::slice::from_ref(&cp_target);
    for metric in [
        "quiver_raft_term{job=\"quiver-control-plane\"} >= 1",
        "quiver_raft_is_leader{job=\"quiver-control-plane\"} == 1",
        "quiver_raft_commit_duration_seconds_count{job=\"quiver-control-plane\"}",
        "quiver_fleet_members{job=\"quiver-control-plane\",quiver_role=\"executor\"}",
    ] {
        prometheus.wait_for_instances(metric, cp_only).await;
    }

    tracing::info!(
        "--- every dashboard query parses in Prometheus, and every metric it reads is exported by the stack"
    );
    // Recycled workers appear only once a worker is retired (after
    // `max_uses` executions, a failure, or idling above `min_workers`),
    // which a few quick scripts do not cause; that one is checked against
    // the declared instrument (the name the recording code uses) instead of
    // a scrape. Refusals were driven above (the second forecast).
    let only_after_an_event: BTreeSet<String> = [format!(
        "{}_total",
        prometheus_name(names::WORKERS_RECYCLED, "")
    )]
    .into();
    let mut exported = BTreeSet::new();
    for target in &every_target {
        let body = http()
            .get(format!("http://{target}/metrics"))
            .send()
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("/metrics text");
        exported.extend(exported_names(&body));
    }
    let exprs = dashboard_exprs();
    for expr in &exprs {
        // `query` fails the test on anything but `success` (a parse error).
        prometheus.query(&as_grafana_sends(expr)).await;
    }
    let wanted: BTreeSet<String> = exprs.iter().flat_map(|e| metric_names(e)).collect();
    for declared in &only_after_an_event {
        assert!(
            wanted.contains(declared),
            "the dashboard does not read {declared}"
        );
    }
    assert!(
        wanted.len() >= 20,
        "too few metrics found in the dashboard: {wanted:?}"
    );
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|m| !only_after_an_event.contains(*m))
        .filter(|m| !exported.contains(*m) && !exported.contains(&format!("{m}_bucket")))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard reads metrics no role exports: {missing:?}\nexported: {exported:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_executor_without_a_manifest_is_alive_but_not_ready() {
    tracing::info!(
        "--- an executor whose control plane refuses connections (it waits 10 s for a manifest, then serves)"
    );
    let unreachable = HeldPort::new();
    let (_orphan, orphan_admin) = start_executor(&[
        "--control-plane",
        &unreachable.addr.to_string(),
        "--node-name",
        "orphan",
    ]);

    tracing::info!("--- alive, but not ready: it holds no manifest");
    let (status, body) = get_json(&format!("{orphan_admin}/readyz")).await;
    assert_eq!(status, 503, "{body}");
    let orphan_ready: Readiness = serde_json::from_value(body.clone()).expect("a readiness");
    assert!(!orphan_ready.ready);
    let manifest = orphan_ready
        .checks
        .iter()
        .find(|c| c.name == "manifest")
        .unwrap_or_else(|| panic!("no manifest check: {body}"));
    assert!(
        !manifest.ok && manifest.detail.contains("no manifest"),
        "{body}"
    );
    let (status, _) = get_json(&format!("{orphan_admin}/healthz")).await;
    assert_eq!(status, 200, "a process that is not ready is still alive");
    drop(unreachable);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_startup_line_names_the_scrape_target_with_and_without_auth() {
    // Authenticating nobody: the MCP port serves /metrics, and says so.
    let open = QuiverDev::start(&[]);
    let target = word_after(&open.banner, "metrics");
    assert_eq!(target, format!("http://{}/metrics", open.authority()));
    let answer = http().get(&target).send().await.expect("GET the target");
    assert!(answer.status().is_success(), "{}", answer.status());

    // Authenticating: the MCP port keeps them, and the line says where to
    // get them instead.
    let closed = QuiverDev::start(&["--auth", "required"]);
    assert!(
        closed.banner.contains("metrics: none") && closed.banner.contains("--admin-listen"),
        "{}",
        closed.banner
    );
    let refused = http()
        .get(format!("http://{}/metrics", closed.authority()))
        .send()
        .await
        .expect("GET /metrics");
    assert!(!refused.status().is_success(), "{}", refused.status());

    // With an admin listener the line names it, and it answers.
    let admin = QuiverDev::start(&["--auth", "required", "--admin-listen", "127.0.0.1:0"]);
    let target = word_after(&admin.banner, "metrics");
    assert!(
        target.ends_with("/metrics") && !target.contains(&admin.authority()),
        "{target}"
    );
    let scraped = http()
        .get(&target)
        .send()
        .await
        .expect("GET the admin target")
        .text()
        .await
        .expect("metrics text");
    assert!(scraped.contains("quiver_manifest_version"), "{scraped}");
}
