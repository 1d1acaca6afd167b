//! The control plane unreachable from a running fleet (real processes on
//! loopback): a `quiver control-plane` node, an executor and an edge that
//! follow it. With the control plane `kill -9`ed, the edge and the executor
//! keep serving the last manifest they hold and say, in the edge's
//! `/status` and both roles' `/readyz`, that the control plane does not
//! answer and since when; once it is back they say so, and a change made
//! after its return reaches them.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{
    ControlPlaneProcess, EdgeProcess, ExecutorProcess, add_demo_upstream, call, connect, http, text,
};

/// The edge's `/status` once `done` holds for it (bounded).
async fn status_until(edge: &EdgeProcess, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut status = Value::Null;
    for _ in 0..600 {
        status = edge.status().await;
        if done(&status) {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 30 s; /status: {status}");
}

/// GET `<admin>/readyz`: (status code, body).
async fn readyz(admin: &str) -> (u16, String) {
    let answer = http()
        .get(format!("{admin}/readyz"))
        .send()
        .await
        .expect("GET /readyz");
    let code = answer.status().as_u16();
    (code, answer.text().await.unwrap_or_default())
}

async fn forecast(edge: &EdgeProcess, city: &str) {
    let client = connect(&edge.url("passthrough")).await;
    let result = call(&client, "weather__get_forecast", json!({ "city": city })).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert!(text(&result).contains(city), "{}", text(&result));
    let code = connect(&edge.url("code")).await;
    let script = call(
        &code,
        "execute",
        json!({"code": format!("return await tools.weather.get_forecast({{city: '{city}'}});")}),
    )
    .await;
    assert_eq!(script.is_error, Some(false), "{}", text(&script));
}

#[tokio::test(flavor = "multi_thread")]
async fn edges_and_executors_serve_the_last_manifest_while_the_control_plane_is_away_and_catch_up()
{
    let dir = tempfile::tempdir().unwrap();
    let mut cp = ControlPlaneProcess::start(1, &dir.path().join("n1"), &["--bootstrap"]);
    add_demo_upstream(&cp.addr, "weather", "weather", &[]);
    let executor = ExecutorProcess::start(&[
        "--control-plane",
        &cp.addr,
        "--node-name",
        "exec-a",
        "--admin-listen",
        "127.0.0.1:0",
    ]);
    let executor_admin = executor.admin.clone().expect("the executor's admin URL");
    let edge = EdgeProcess::start(&cp.addr);
    edge.until("the executor takes work", |e| {
        e.iter().filter(|x| x["state"] == "ok").count() == 1
    })
    .await;
    let before = status_until(&edge, "the control plane answers", |s| {
        s["control_plane"]["connected"] == true
    })
    .await;
    forecast(&edge, "Oslo").await;

    eprintln!("--- kill -9 the control plane: both roles say so and keep serving");
    cp.kill();
    let away = status_until(&edge, "the edge notices", |s| {
        s["control_plane"]["connected"] == false
    })
    .await;
    assert!(away["control_plane"]["error"].is_string(), "{away}");
    assert!(away["control_plane"]["last_answer_ms"].is_u64(), "{away}");
    assert_eq!(away["manifest_version"], before["manifest_version"]);
    assert_eq!(away["stub_hash"], before["stub_hash"]);
    forecast(&edge, "Bergen").await;
    let mut body = String::new();
    for _ in 0..300 {
        let (code, text) = readyz(&executor_admin).await;
        assert_eq!(code, 200, "the executor stays ready: {text}");
        body = text;
        if body.contains("unreachable") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        body.contains("unreachable") && body.contains("serving the last manifest"),
        "{body}"
    );
    forecast(&edge, "Lisbon").await;

    eprintln!("--- the control plane returns: both say so, and a new change arrives");
    cp.restart();
    status_until(&edge, "the edge reconnects", |s| {
        s["control_plane"]["connected"] == true
    })
    .await;
    add_demo_upstream(&cp.addr, "notes", "notes", &[]);
    let after = status_until(&edge, "the edge catches up", |s| {
        s["manifest_version"].as_u64() > before["manifest_version"].as_u64()
    })
    .await;
    assert_ne!(after["stub_hash"], before["stub_hash"]);
    edge.until("the executor holds the new manifest", |e| {
        e.iter().filter(|x| x["state"] == "ok").count() == 1
    })
    .await;
    let client = connect(&edge.url("passthrough")).await;
    let tools = support::tool_names(&client).await;
    assert!(
        tools.iter().any(|t| t.starts_with("notes__")),
        "the new upstream's tools are served: {tools:?}"
    );
    let (code, body) = readyz(&executor_admin).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("connected"), "{body}");
}
