//! Tasks outlive the edge that made them. Real processes on loopback: a
//! control plane (`quiver dev`), an executor and two edges, all with a real
//! etcd (Debian's `etcd-server`), and an rmcp client that takes tasks. A
//! 20-second script (its tenant allows tasks 40 s of wall time; other
//! scripts keep 5 s) starts as a task through one edge, is polled through
//! the other, and still gives its result there after the first edge was
//! killed (`kill -9`). A task whose executor is killed ends as failed, with
//! the reason.

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskPayload, TaskStatus},
    service::RunningService,
};
use serde_json::json;

use crate::support::{
    EdgeProcess, ExecutorProcess, QuiverDev, TaskClient, connect_taking_tasks, ctl, ctl_json,
    etcd::{Etcd, ok_nodes},
};

type Client = RunningService<RoleClient, TaskClient>;

async fn connect(url: &str, key: &str) -> Client {
    connect_taking_tasks(url, Some(key)).await
}

/// Starts `code` through `client`: it must become a task; its id.
async fn start_task(client: &Client, code: &str) -> String {
    let mut params = CallToolRequestParams::new("execute");
    params.arguments = json!({ "code": code }).as_object().cloned();
    match client
        .peer()
        .call_tool_once(params)
        .await
        .expect("tools/call")
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("a long script is a task: {other:?}"),
    }
}

/// Polls task `id` through `client` until it ends (at most 90 s).
async fn ended(client: &Client, id: &str) -> (TaskStatus, TaskPayload) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match client.peer().get_task(GetTaskParams::new(id)).await {
            Ok(task) if task.task.status().is_terminal() => {
                return (task.task.status(), task.task.payload);
            }
            Ok(_) => {}
            // An edge that just lost its peer may say so once; ask again.
            Err(e) => eprintln!("tasks/get {id}: {e}"),
        }
        assert!(Instant::now() < deadline, "task {id} never ended");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_outlives_its_edge_and_fails_when_its_executor_dies() {
    let Some(binary) = Etcd::binary() else { return };
    let data = tempfile::tempdir().unwrap();
    let cp = data.path().join("cp");
    let etcd = Etcd::start(&binary, &data.path().join("etcd")).await;
    let dev = QuiverDev::start(&["--auth", "required", "--data", cp.to_str().unwrap()]);
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &["tenant", "create", "longrun", "--task-wall", "40s"],
    );
    assert!(ok, "{err}");
    let key = ctl_json(&dev.control_plane, &["key", "issue", "longrun"])["key"]
        .as_str()
        .unwrap()
        .to_string();
    let key_file = cp.join("cluster.key");
    let endpoint = etcd.endpoint();
    let executor_args = [
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
    ];
    let mut exec_a = ExecutorProcess::start(&executor_args);
    let edge_flags = ["--etcd", &endpoint, "--auth", "required"];
    let mut edge_1 = EdgeProcess::start_with(&dev.control_plane, &edge_flags);
    let edge_2 = EdgeProcess::start_with(&dev.control_plane, &edge_flags);
    for edge in [&edge_1, &edge_2] {
        edge.until("exec-a takes work", |e| ok_nodes(e) == ["exec-a"])
            .await;
    }
    let through_1 = connect(&edge_1.url("code"), &key).await;
    let through_2 = connect(&edge_2.url("code"), &key).await;

    eprintln!("--- a 20 s script becomes a task on edge 1; edge 2 answers for it");
    let id = start_task(
        &through_1,
        "await new Promise((r) => setTimeout(r, 20000)); return 'survived its edge';",
    )
    .await;
    let seen = through_2
        .peer()
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("edge 2 hands tasks/get to the edge that holds the task");
    assert_eq!(seen.task.task.task_id, id);
    assert!(
        !seen.task.status().is_terminal(),
        "{:?}",
        seen.task.status()
    );
    let records = etcd.read_prefix("/quiver/tasks/").await;
    assert!(
        records
            .iter()
            .any(|(key, record)| key.ends_with(&id) && record["tenant"] == "longrun"),
        "the task is recorded in etcd: {records:?}"
    );

    eprintln!("--- kill -9 edge 1; the script runs on, and edge 2 gives its result");
    edge_1.kill();
    let (status, payload) = ended(&through_2, &id).await;
    assert_eq!(status, TaskStatus::Completed, "{payload:?}");
    let TaskPayload::Completed { result } = payload else {
        unreachable!()
    };
    let text = serde_json::to_string(&result).unwrap();
    assert!(text.contains("survived its edge"), "{text}");

    eprintln!("--- a task whose executor is killed ends as failed, with the reason");
    let doomed = start_task(
        &through_2,
        "await new Promise((r) => setTimeout(r, 20000)); return 'never';",
    )
    .await;
    exec_a.kill();
    let (status, payload) = ended(&through_2, &doomed).await;
    assert_eq!(status, TaskStatus::Failed, "{payload:?}");
    let TaskPayload::Failed { error } = payload else {
        unreachable!()
    };
    let message = error["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains("executor"),
        "the reason names the executor: {message}"
    );

    drop(etcd);
}
