//! Fleet membership in a real etcd (Debian's `etcd-server`), with real
//! processes on loopback: a control plane (`quiver dev`), executors and an
//! edge started with `--etcd`. Each registers under a lease; the edge routes
//! to the executors it sees there; a killed executor leaves when its lease
//! runs out, a stopped one at once; while etcd is down the edge keeps the
//! membership it had and keeps serving, and everything registers again when
//! etcd returns.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{
    EdgeProcess, QuiverDev, call, connect,
    etcd::{Etcd, executor, ok_nodes},
    text,
};

const EXECUTORS: &str = "/quiver/members/executor/";

/// Polls etcd until `done` holds for the executors' keys (bounded).
async fn keys_until(etcd: &Etcd, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    for _ in 0..300 {
        let keys = etcd.keys(EXECUTORS).await;
        if done(&keys) {
            return keys;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{what}: not within 30 s; keys: {:?}",
        etcd.read_prefix(EXECUTORS).await
    );
}

async fn execute_ok(url: &str, code: &str) -> String {
    let client = connect(url).await;
    let result = call(&client, "execute", json!({ "code": code })).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    text(&result)
}

#[tokio::test(flavor = "multi_thread")]
async fn members_register_in_etcd_leave_on_death_or_stop_and_outlive_an_etcd_outage() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let mut etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--data", data.path().join("cp").to_str().unwrap()]);
    let exec_a = executor(&dev, &data.path().join("cp"), &etcd, "exec-a");
    let mut exec_b = executor(&dev, &data.path().join("cp"), &etcd, "exec-b");
    let edge = EdgeProcess::start_with(&dev.control_plane, &["--etcd", &etcd.endpoint()]);

    eprintln!("--- every member registers; the edge routes to what etcd lists");
    edge.until("both executors take work", |e| {
        ok_nodes(e) == ["exec-a", "exec-b"]
    })
    .await;
    let status = edge.status().await;
    assert_eq!(status["membership"]["source"], "etcd", "{status}");
    assert_eq!(status["membership"]["etcd"]["connected"], true, "{status}");
    let records = etcd.read_prefix("/quiver/members/").await;
    let edge_record = records
        .iter()
        .find(|(key, _)| key.starts_with("/quiver/members/edge/"))
        .unwrap_or_else(|| panic!("the edge registered itself: {records:?}"));
    assert_eq!(
        edge_record.1["address"],
        format!("http://{}/mcp", edge.authority),
        "{edge_record:?}"
    );
    let (_, record_a) = records
        .iter()
        .find(|(key, _)| key == "/quiver/members/executor/exec-a")
        .expect("exec-a's record");
    assert_eq!(record_a["address"], format!("http://{}", exec_a.addr));
    assert_eq!(record_a["ready"], true);
    assert!(record_a["capacity"].as_u64().unwrap() >= 1, "{record_a}");
    assert_eq!(
        record_a["stub_hash"], status["stub_hash"],
        "the executor's stub hash is the one the edge serves"
    );
    assert!(
        execute_ok(&edge.url("code"), "return 6 * 7;")
            .await
            .contains("42")
    );

    eprintln!("--- kill -9 exec-b: its record stays until its lease runs out, then goes");
    exec_b.kill();
    keys_until(&etcd, "exec-b's lease expires", |keys| {
        keys == [format!("{EXECUTORS}exec-a")]
    })
    .await;
    edge.until("the edge stops routing to exec-b", |e| {
        e.iter().all(|x| x["node"] != "exec-b") && ok_nodes(e) == ["exec-a"]
    })
    .await;
    for i in 0..3 {
        execute_ok(&edge.url("code"), &format!("return {i};")).await;
    }

    eprintln!("--- etcd down: no crash, the last membership keeps serving");
    etcd.kill();
    let mut down = Value::Null;
    for _ in 0..300 {
        down = edge.status().await;
        if down["membership"]["etcd"]["connected"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(down["membership"]["etcd"]["connected"], false, "{down}");
    assert!(
        down["membership"]["etcd"]["error"].is_string(),
        "the edge says why: {down}"
    );
    for i in 0..3 {
        execute_ok(&edge.url("code"), &format!("return 'still {i}';")).await;
    }
    assert_eq!(ok_nodes(&edge.executors().await), ["exec-a"]);

    eprintln!("--- etcd back: the registry recovers and new members are seen");
    etcd.restart().await;
    keys_until(&etcd, "exec-a is registered again", |keys| {
        keys.contains(&format!("{EXECUTORS}exec-a"))
    })
    .await;
    let mut exec_c = executor(&dev, &data.path().join("cp"), &etcd, "exec-c");
    edge.until("the edge sees exec-c", |e| {
        ok_nodes(e) == ["exec-a", "exec-c"]
    })
    .await;
    assert_eq!(edge.status().await["membership"]["etcd"]["connected"], true);

    eprintln!("--- a graceful stop deregisters before the process exits");
    let status = exec_c.stop_gracefully();
    assert!(status.success(), "exec-c exited with {status}");
    // Its lease was kept alive until the end, so only a revoke removes the
    // record this soon: an expiry would leave it for seconds more.
    assert_eq!(etcd.keys(EXECUTORS).await, [format!("{EXECUTORS}exec-a")]);
    edge.until("the edge forgets exec-c", |e| {
        e.iter().all(|x| x["node"] != "exec-c")
    })
    .await;
    execute_ok(&edge.url("code"), "return 'done';").await;
    drop(exec_a);
}
