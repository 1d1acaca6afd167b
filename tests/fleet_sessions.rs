//! Sessions outlive the edge that opened them. Real processes on loopback:
//! a control plane (`quiver dev`), an executor and two edges, all with a
//! real etcd (Debian's `etcd-server`), spoken to over plain HTTP so that the
//! test picks the edge of each request, as a load balancer would:
//! - a session opened on one edge is served by the other, stash and all,
//!   with no new `initialize`;
//! - another tenant naming it gets exactly what an unknown session gets;
//! - it survives its first edge's `kill -9`;
//! - a `DELETE` through one edge stops the session's script running on the
//!   other within 250 ms: it writes nothing after that.

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
    let _executor = ExecutorProcess::start(&[
        "--control-plane",
        &dev.control_plane,
        "--etcd",
        &endpoint,
        "--node-name",
        "exec-a",
        "--cluster-key-file",
        key_file.to_str().unwrap(),
        "--auth",
        "required",
    ]);
    let edge_flags = ["--etcd", &endpoint, "--auth", "required"];
    let mut edge_1 = EdgeProcess::start_with(&dev.control_plane, &edge_flags);
    let edge_2 = EdgeProcess::start_with(&dev.control_plane, &edge_flags);
    for edge in [&edge_1, &edge_2] {
        edge.until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
            .await;
    }
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
    let edge_3 = EdgeProcess::start_with(&dev.control_plane, &edge_flags);
    edge_3
        .until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
        .await;
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
