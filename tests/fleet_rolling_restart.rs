//! A rolling restart of every role under steady load, on real processes over
//! loopback: a three-node control plane, etcd, two executors and two edges.
//! Clients keep sending idempotent requests (a passthrough read and a
//! read-only script, as stateless MCP 2026-07-28 requests, and the same in
//! 2025-11-25 sessions, each opened once and never again) to both edges
//! while each control-plane node, each executor and each edge in turn is
//! stopped with SIGTERM and started again. Not one request may fail, and no
//! session client has to initialize again.
//!
//! What a client does, as any client behind a load balancer would: a request
//! whose connection to an edge could not be made, or broke before an answer,
//! goes to the other edge. Any answer that is an error (a JSON-RPC error, a
//! tool result with `isError`) counts as a failure and is not retried, so the
//! executors' drain and the edges' routing get no help from the client.

use crate::support;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use support::{
    EdgeProcess, ExecutorProcess, add_demo_upstream, ctl_until,
    etcd::Etcd,
    http,
    raw_session::{RawSession, try_post},
    start_three_node_cluster,
};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rolling", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// One stateless `tools/call`; `Err` only when no answer came back (the
/// connection failed or broke), `Ok` with the JSON-RPC message otherwise.
async fn post(url: &str, tool: &str, arguments: Value) -> Result<(u16, Value), String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta()}});
    let response = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .timeout(Duration::from_secs(30))
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|e| format!("{e:?}"))?;
    let message = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&text)
        .trim()
        .to_string();
    Ok((
        status,
        serde_json::from_str(&message).unwrap_or(Value::String(text.clone())),
    ))
}

#[derive(Default)]
struct Tally {
    ok: u64,
    /// Requests that went to the other edge because the first gave no answer.
    moved: u64,
    failures: Vec<String>,
}

/// One `tools/call` in `session` (2025-11-25, at code mode, which also
/// calls the view's tools by their own names) through `edge`; like [`post`].
async fn in_session(
    edge: &str,
    session: &RawSession,
    n: usize,
    tool: &str,
    arguments: &Value,
) -> Result<(u16, Value), String> {
    let request = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let answer = try_post(
        &format!("{edge}/code/mcp"),
        None,
        Some(&session.id),
        &request,
    )
    .await?;
    // A body that is no JSON-RPC message is kept as text, for the failure.
    Ok((
        answer.status.as_u16(),
        answer.response.unwrap_or(Value::String(answer.body)),
    ))
}

/// Sends requests in a loop, alternating edges, until `stop`: stateless
/// ones, or all in `session`, opened once and never again.
async fn client(
    edges: Arc<Vec<String>>,
    turn: usize,
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
    session: Option<RawSession>,
) {
    let mut n = turn;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let (path, tool, arguments) = if n.is_multiple_of(2) {
            (
                "passthrough",
                "weather__get_forecast",
                json!({"city": format!("City{n}")}),
            )
        } else {
            (
                "code",
                "execute",
                json!({"code": format!("const f = await tools.weather.get_forecast({{city: 'Town{n}'}}); return f;")}),
            )
        };
        let first = n % edges.len();
        let mut outcome = Err(String::new());
        for attempt in 0..edges.len() {
            let edge = &edges[(first + attempt) % edges.len()];
            outcome = match &session {
                None => post(&format!("{edge}/{path}/mcp"), tool, arguments.clone()).await,
                Some(session) => in_session(edge, session, n, tool, &arguments).await,
            };
            if outcome.is_ok() {
                if attempt > 0 {
                    tally.lock().unwrap().moved += 1;
                }
                break;
            }
        }
        let what = match &session {
            Some(session) => format!("session {} {path} {n}", session.id),
            None => format!("{path} {n}"),
        };
        let mut tally = tally.lock().unwrap();
        match outcome {
            Ok((200, message)) if message["result"]["isError"] == false => tally.ok += 1,
            Ok((status, message)) => tally
                .failures
                .push(format!("{what}: HTTP {status}: {message}")),
            Err(e) => tally
                .failures
                .push(format!("{what}: no edge answered: {e}")),
        }
    }
}

/// Whether a `cluster status` answer has a leader, two followers, and node
/// `id` holding the leader's last log index.
fn caught_up(ok: bool, out: &str, id: u64) -> bool {
    let Some(status) = ok
        .then(|| serde_json::from_str::<Value>(out).ok())
        .flatten()
    else {
        return false;
    };
    let members = status["members"].as_array().cloned().unwrap_or_default();
    let count = |role: &str| members.iter().filter(|m| m["role"] == role).count();
    count("leader") == 1
        && count("follower") == 2
        && members
            .iter()
            .any(|m| m["id"].as_u64() == Some(id) && m["matched_index"] == status["last_log_index"])
}

/// Waits until `tally` counts `more` successes beyond what it had.
async fn progress(tally: &Mutex<Tally>, more: u64, what: &str) {
    let start = tally.lock().unwrap().ok;
    for _ in 0..600 {
        if tally.lock().unwrap().ok >= start + more {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let t = tally.lock().unwrap();
    panic!(
        "{what}: no progress in 30 s ({} ok, failures {:?})",
        t.ok, t.failures
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rolling_restart_of_every_role_under_load_fails_no_idempotent_request() {
    let Some(etcd_binary) = Etcd::binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&etcd_binary, &dir.path().join("etcd")).await;
    let (mut nodes, endpoints) = start_three_node_cluster(dir.path());
    add_demo_upstream(&endpoints, "weather", "weather", &[]);
    let member = |name: &str| {
        ExecutorProcess::start(&[
            "--control-plane",
            &endpoints,
            "--etcd",
            &etcd.endpoint(),
            "--node-name",
            name,
        ])
    };
    let mut executors = [member("exec-1"), member("exec-2")];
    let mut edges = vec![
        EdgeProcess::start_with(&endpoints, &["--etcd", &etcd.endpoint()]),
        EdgeProcess::start_with(&endpoints, &["--etcd", &etcd.endpoint()]),
    ];
    for edge in &edges {
        edge.until("both executors take work", |e| {
            e.iter().filter(|x| x["state"] == "ok").count() == 2
        })
        .await;
    }

    let urls: Arc<Vec<String>> = Arc::new(
        edges
            .iter()
            .map(|e| format!("http://{}", e.authority))
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut clients = Vec::new();
    for turn in 0..6 {
        // Two of the six clients work in one 2025-11-25 session each.
        let session = match turn {
            4 | 5 => Some(RawSession::open(&format!("{}/code/mcp", urls[turn % 2]), None).await),
            _ => None,
        };
        clients.push(tokio::spawn(client(
            urls.clone(),
            turn,
            stop.clone(),
            tally.clone(),
            session,
        )));
    }
    progress(&tally, 20, "the load starts").await;

    for node in nodes.iter_mut() {
        eprintln!("--- restart control-plane node {}", node.id);
        let status = node.stop_gracefully();
        assert!(status.success(), "node {} exited with {status}", node.id);
        progress(&tally, 10, "serving while a control-plane node is down").await;
        node.restart();
        let id = node.id;
        ctl_until(
            &endpoints,
            &["-o", "json", "cluster", "status"],
            |ok, out| caught_up(ok, out, id),
        );
        progress(&tally, 10, "serving after it returned").await;
    }
    for (i, executor) in executors.iter_mut().enumerate() {
        let name = format!("exec-{}", i + 1);
        eprintln!("--- restart executor {name}");
        let status = executor.stop_gracefully();
        assert!(status.success(), "{name} exited with {status}");
        progress(&tally, 10, "serving on the other executor").await;
        *executor = member(&name);
        for edge in &edges {
            edge.until("the restarted executor takes work", |e| {
                e.iter().filter(|x| x["state"] == "ok").count() == 2
            })
            .await;
        }
        progress(&tally, 10, "serving after it returned").await;
    }
    for (i, edge) in edges.iter_mut().enumerate() {
        eprintln!("--- restart edge {}", i + 1);
        edge.restart_gracefully();
        edge.until("the restarted edge routes", |e| {
            e.iter().filter(|x| x["state"] == "ok").count() == 2
        })
        .await;
        progress(&tally, 10, "serving after the edge returned").await;
    }

    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    let tally = tally.lock().unwrap();
    eprintln!(
        "{} requests succeeded, {} of them through the other edge after the first gave no answer",
        tally.ok, tally.moved
    );
    assert!(
        tally.failures.is_empty(),
        "{} failed of {}: {:#?}",
        tally.failures.len(),
        tally.ok + tally.failures.len() as u64,
        tally.failures
    );
    assert!(
        tally.ok >= 100,
        "too little load to prove anything: {}",
        tally.ok
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_edge_turns_unready_and_keeps_serving_through_its_notice() {
    let dir = tempfile::tempdir().unwrap();
    let cp = support::ControlPlaneProcess::start(1, &dir.path().join("n1"), &["--bootstrap"]);
    add_demo_upstream(&cp.addr, "weather", "weather", &[]);
    let _executor = ExecutorProcess::start(&["--control-plane", &cp.addr, "--node-name", "exec"]);
    let mut edge = EdgeProcess::start_with(
        &cp.addr,
        &["--drain-notice", "10", "--admin-listen", "127.0.0.1:0"],
    );
    edge.until("the executor takes work", |e| {
        e.iter().filter(|x| x["state"] == "ok").count() == 1
    })
    .await;
    let readyz = format!("{}/readyz", edge.admin.clone().expect("the admin URL"));
    let ready = || async {
        http()
            .get(&readyz)
            .send()
            .await
            .map(|r| r.status().as_u16())
    };
    assert_eq!(ready().await.ok(), Some(200));

    eprintln!("--- SIGTERM: /readyz turns 503 at once, so a load balancer takes it out");
    edge.ask_to_stop();
    let mut seen = None;
    for _ in 0..100 {
        seen = ready().await.ok();
        if seen == Some(503) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, Some(503), "/readyz while draining");

    eprintln!("--- but through its notice it still takes new requests");
    let url = format!("http://{}/passthrough/mcp", edge.authority);
    let (status, answer) = post(&url, "weather__get_forecast", json!({"city": "Oslo"}))
        .await
        .expect("an answer during the notice");
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["result"]["content"].to_string().contains("Oslo"),
        "{answer}"
    );

    eprintln!("--- then it stops cleanly");
    assert!(edge.exit_status().success());
}
