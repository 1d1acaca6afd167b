//! Sessions outlive the edge that opened them. Real processes on loopback:
//! a control plane (`quiver dev`), an executor and two edges, all with a
//! real etcd (Debian's `etcd-server`), spoken to over plain HTTP so that the
//! test picks the edge of each request, as a load balancer would:
//! - a session opened on one edge is served by the other, stash and all,
//!   with no new `initialize`;
//! - another tenant naming it gets exactly what an unknown session gets;
//! - it survives its first edge's `kill -9`;
//! - a `DELETE` through one edge stops the session's script running on the
//!   other within 250 ms: it writes nothing after that;
//! - an rmcp client behind a proxy that moves its TCP connections from edge
//!   to edge keeps its session, also when the edge running its call is
//!   killed (that call is lost; the next ones go on).

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    EdgeProcess, ExecutorProcess, QuiverDev, ctl, ctl_json,
    etcd::{Etcd, ok_nodes},
    raw_session::{RawSession, post, run_forever, stopped_within_250_ms},
};

/// A tenant with a key; the `Authorization` value.
fn tenant(cp: &str, id: &str) -> String {
    let (ok, _, err) = ctl(cp, &["tenant", "create", id]);
    assert!(ok, "{err}");
    let key = ctl_json(cp, &["key", "issue", id])["key"]
        .as_str()
        .expect("a key")
        .to_string();
    format!("Bearer {key}")
}

/// Runs `code` through `session` at `url`; what the script returned.
async fn run(session: &RawSession, url: &str, code: &str) -> Value {
    let text = session
        .call(url, "execute", json!({"code": code}))
        .await
        .text();
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("a script's JSON value: {text}"))
}

/// `quiver executor` named `exec-a`, with `extra` flags, on `etcd`.
fn executor(control_plane: &str, etcd: &str, extra: &[&str]) -> ExecutorProcess {
    let mut args = vec![
        "--control-plane",
        control_plane,
        "--etcd",
        etcd,
        "--node-name",
        "exec-a",
    ];
    args.extend_from_slice(extra);
    ExecutorProcess::start(&args)
}

/// `quiver edge` with `extra` flags, once it routes to `exec-a`.
async fn edge(control_plane: &str, extra: &[&str]) -> EdgeProcess {
    let edge = EdgeProcess::start_with(control_plane, extra);
    edge.until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
        .await;
    edge
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_served_by_any_edge_survives_its_edge_and_stops_when_deleted() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--auth", "required", "--data", cp.to_str().unwrap()]);
    let alpha = tenant(&dev.control_plane, "alpha");
    let beta = tenant(&dev.control_plane, "beta");
    let key_file = cp.join("cluster.key");
    let endpoint = etcd.endpoint();
    let _executor = executor(
        &dev.control_plane,
        &endpoint,
        &[
            "--cluster-key-file",
            key_file.to_str().unwrap(),
            "--auth",
            "required",
        ],
    );
    let edge_flags = ["--etcd", &endpoint, "--auth", "required"];
    let mut edge_1 = edge(&dev.control_plane, &edge_flags).await;
    let edge_2 = edge(&dev.control_plane, &edge_flags).await;
    let (one, two) = (edge_1.url("code"), edge_2.url("code"));

    eprintln!("--- a session opened on edge 1 is served by edge 2, with its stash");
    let both = RawSession::open(&one, Some(&alpha)).await;
    assert_eq!(
        run(
            &both,
            &one,
            "await stash.set('k', 'from edge 1'); return 'set';"
        )
        .await,
        json!("set")
    );
    assert_eq!(
        run(&both, &two, "return await stash.get('k');").await,
        json!("from edge 1")
    );
    let records = etcd.read_prefix("/quiver/sessions/").await;
    let (_, record) = records
        .iter()
        .find(|(key, _)| key.ends_with(&both.id))
        .unwrap_or_else(|| panic!("a record of {}: {records:?}", both.id));
    assert_eq!(record["tenant"], "alpha", "{record}");

    eprintln!("--- another tenant naming it is answered as for an unknown session");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let unknown = post(&two, Some(&beta), Some("no-such-session"), &list).await;
    assert_eq!(unknown.status, 404, "{unknown:?}");
    for url in [&one, &two] {
        let hijack = post(url, Some(&beta), Some(&both.id), &list).await;
        assert_eq!(
            (hijack.status, &hijack.body),
            (unknown.status, &unknown.body),
            "{url}"
        );
    }

    eprintln!("--- a session whose edge is killed goes on through the other");
    let orphan = RawSession::open(&one, Some(&alpha)).await;
    assert_eq!(
        run(
            &orphan,
            &one,
            "await stash.set('k', 'before the kill'); return 'set';"
        )
        .await,
        json!("set")
    );
    edge_1.kill();
    let hijack = post(&two, Some(&beta), Some(&orphan.id), &list).await;
    assert_eq!(
        (hijack.status, &hijack.body),
        (unknown.status, &unknown.body)
    );
    let listed = orphan.send(&two, &list).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    let names: Vec<&str> = listed.result()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"execute"), "{names:?}");
    assert_eq!(
        run(&orphan, &two, "return await stash.get('k');").await,
        json!("before the kill")
    );

    eprintln!("--- a DELETE through one edge stops the session's script on the other");
    let edge_3 = edge(&dev.control_plane, &edge_flags).await;
    let three = edge_3.url("code");
    let probe = RawSession::open(&two, Some(&alpha)).await;
    let doomed = RawSession::open(&three, Some(&alpha)).await;
    let running = run_forever(&three, &doomed);
    stopped_within_250_ms(&probe, &two, running, async {
        assert_eq!(doomed.delete(&two).await, 204);
    })
    .await;
    let gone = doomed.send(&three, &list).await;
    assert_eq!(gone.status, 404, "{gone:?}");
    let records: Vec<Value> = etcd
        .read_prefix("/quiver/sessions/")
        .await
        .into_iter()
        .filter(|(key, _)| key.ends_with(&doomed.id))
        .map(|(_, record)| record)
        .collect();
    assert!(records.is_empty(), "{records:?}");
}

/// A loopback TCP proxy whose target can change: moving it cuts every
/// connection it carries, as a load balancer that drains a backend does.
struct MovingProxy {
    addr: std::net::SocketAddr,
    target: std::sync::Arc<std::sync::Mutex<String>>,
    carried: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accepting: tokio::task::JoinHandle<()>,
}

impl MovingProxy {
    async fn start(target: &str) -> MovingProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let target = std::sync::Arc::new(std::sync::Mutex::new(target.to_string()));
        let carried = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepting = {
            let (target, carried) = (target.clone(), carried.clone());
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let to = target.lock().unwrap().clone();
                    let relay = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    carried.lock().unwrap().push(relay.abort_handle());
                }
            })
        };
        MovingProxy {
            addr,
            target,
            carried,
            accepting,
        }
    }

    /// Sends new connections to `target` and cuts the ones it carries.
    fn move_to(&self, target: &str) {
        *self.target.lock().unwrap() = target.to_string();
        for relay in self.carried.lock().unwrap().drain(..) {
            relay.abort();
        }
    }
}

impl Drop for MovingProxy {
    fn drop(&mut self) {
        self.accepting.abort();
        self.move_to("127.0.0.1:9");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_sdk_clients_session_follows_its_connection_to_another_edge() {
    use crate::support::{call, connect, text};

    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--data", cp.to_str().unwrap()]);
    let endpoint = etcd.endpoint();
    let _executor = executor(
        &dev.control_plane,
        &endpoint,
        &[
            "--cluster-key-file",
            cp.join("cluster.key").to_str().unwrap(),
        ],
    );
    let edge_flags = ["--etcd", &endpoint];
    let mut edge_1 = edge(&dev.control_plane, &edge_flags).await;
    let mut edge_2 = edge(&dev.control_plane, &edge_flags).await;
    let proxy = MovingProxy::start(&edge_1.authority).await;
    let client = connect(&format!("http://{}/code/mcp", proxy.addr)).await;
    let set = call(
        &client,
        "execute",
        json!({"code": "await stash.set('k', 'kept'); return 'set';"}),
    )
    .await;
    assert_eq!(set.is_error, Some(false), "{}", text(&set));

    eprintln!("--- the connection moves to edge 2: the session goes on there");
    proxy.move_to(&edge_2.authority);
    let get = json!({"code": "return await stash.get('k');"});
    let moved = call(&client, "execute", get.clone()).await;
    assert_eq!(moved.is_error, Some(false), "{}", text(&moved));
    assert!(text(&moved).contains("kept"), "{}", text(&moved));

    eprintln!("--- edge 2 is killed with a call of the session in flight");
    let in_flight = {
        let peer = client.peer().clone();
        tokio::spawn(async move {
            let mut params = rmcp::model::CallToolRequestParams::new("execute");
            params.arguments = json!({
                "code": "await stash.set('started', true); await new Promise((r) => setTimeout(r, 3000)); return 'late';",
                "stash_id": "flight"
            })
            .as_object()
            .cloned();
            peer.call_tool(params).await
        })
    };
    // The call is in flight once its script said so.
    let looking = RawSession::open(&edge_2.url("code"), None).await;
    let started =
        json!({"code": "return (await stash.get('started')) ?? false;", "stash_id": "flight"});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while looking
        .call(&edge_2.url("code"), "execute", started.clone())
        .await
        .text()
        != "true"
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never started"
        );
    }
    edge_2.kill();
    edge_1.kill();
    let edge_3 = edge(&dev.control_plane, &edge_flags).await;
    proxy.move_to(&edge_3.authority);
    let again = call(&client, "execute", get).await;
    assert_eq!(again.is_error, Some(false), "{}", text(&again));
    assert!(text(&again).contains("kept"), "{}", text(&again));
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "execute"));
    // The call that was in flight on the killed edge is lost (only a task
    // outlives its edge); it must not hang the session's other calls.
    in_flight.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_server_sends_a_session_reaches_it_through_any_edge() {
    use crate::support::{ControlPlaneProcess, add_hooks_upstream};

    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let cp = ControlPlaneProcess::start(1, &data.path().join("cp"), &["--bootstrap"]);
    add_hooks_upstream(&cp.addr, "w", "weather", &[]);
    let endpoint = etcd.endpoint();
    let _executor = executor(&cp.addr, &endpoint, &[]);
    let flags = |name: &'static str| ["--etcd", endpoint.as_str(), "--node-name", name];
    let mut edge_1 = edge(&cp.addr, &flags("edge-1")).await;
    let edge_2 = edge(&cp.addr, &flags("edge-2")).await;
    let (one, two) = (edge_1.url("passthrough"), edge_2.url("passthrough"));
    let logged = |tag: &str| json!({"group": tag, "parties": 1, "steps": 0, "tag": tag, "logs": 5});
    /// The next `n` log messages on `stream`.
    async fn logs(stream: &mut crate::support::raw_session::Events, n: usize) -> Vec<String> {
        let mut said = Vec::new();
        while said.len() < n {
            let Some((_, message)) = stream.next().await else {
                panic!("the log messages stopped coming: {said:?}");
            };
            if message["method"] == "notifications/message" {
                said.push(
                    message["params"]["data"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
        }
        said
    }
    let expected =
        |tag: &str| -> Vec<String> { (1..=5).map(|n| format!("{tag} log #{n}")).collect() };

    eprintln!("--- opened on edge 1, listened to through edge 2, called through both");
    let session = RawSession::open(&one, None).await;
    let mut through_two = session.listen(&two, None).await;
    for (tag, url) in [("via-one", &one), ("via-two", &two)] {
        let called = session
            .call(url, "w__quiver_test_rendezvous", logged(tag))
            .await;
        assert_eq!(called.result()["isError"], false, "{called:?}");
        assert_eq!(logs(&mut through_two, 5).await, expected(tag));
    }
    let holder = |records: Vec<(String, Value)>| {
        records
            .into_iter()
            .find(|(key, _)| key.ends_with(&session.id))
            .map(|(_, record)| record["holder"].clone())
    };
    assert_eq!(
        holder(etcd.read_prefix("/quiver/sessions/").await),
        Some(json!("edge-1"))
    );

    let uri = "quiver-test://note";
    let subscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
        "params": {"uri": uri}});
    let subscribed = session.send(&two, &subscribe).await;
    assert!(
        subscribed
            .response
            .is_some_and(|r| r.get("result").is_some())
    );

    eprintln!("--- edge 1 is killed: edge 2 takes the session up, and it hears the session");
    edge_1.kill();
    drop(through_two);
    let mut again = session.listen(&two, None).await;
    let called = session
        .call(&two, "w__quiver_test_rendezvous", logged("after"))
        .await;
    assert_eq!(called.result()["isError"], false, "{called:?}");
    assert_eq!(logs(&mut again, 5).await, expected("after"));
    assert_eq!(
        holder(etcd.read_prefix("/quiver/sessions/").await),
        Some(json!("edge-2"))
    );

    eprintln!("--- and the session's resource subscription went with it");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    'heard: loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no resources/updated after the takeover"
        );
        let touch = session
            .call(&two, "w__quiver_test_touch_resource", json!({"uri": uri}))
            .await;
        assert_eq!(touch.result()["isError"], false, "{touch:?}");
        while let Some((_, message)) = again.next_within(Duration::from_millis(500)).await {
            if message["method"] == "notifications/resources/updated" {
                assert_eq!(message["params"]["uri"], uri, "{message}");
                break 'heard;
            }
        }
    }
}
