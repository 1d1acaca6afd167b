//! Tasks (SEP-2663) through a real `quiver dev` and a real rmcp client that
//! declares the extension: a code-mode script that runs long becomes a task
//! the client follows with `tasks/get`, a short one answers directly, and a
//! cancelled task's script stops making tool calls. A client without the
//! extension never gets a task.

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, TaskPayload,
        TaskStatus,
    },
    service::RunningService,
};
use serde_json::{Value, json};

use crate::support::{
    TaskClient, call, connect, connect_taking_tasks, ctl_until, start_with_config, test_kit_bin,
    text,
};

/// One stdio upstream `w` (the weather mock with its test hooks).
fn config() -> String {
    format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n",
        test_kit_bin()
    )
}

fn execute(code: &str) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("execute");
    params.arguments = json!({ "code": code }).as_object().cloned();
    params
}

/// Polls task `id` until it ends (at most a minute).
async fn ended(client: &RunningService<RoleClient, TaskClient>, id: &str) -> TaskPayload {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let task = client
            .peer()
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get");
        assert_eq!(task.task.task.task_id, id);
        if task.task.status().is_terminal() {
            return task.task.payload;
        }
        assert!(Instant::now() < deadline, "task {id} never ended");
        let pause = task.task.task.poll_interval_ms.unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// How many times `w`'s `get_forecast` was called, as the upstream counts.
async fn forecasts(client: &RunningService<RoleClient, ()>) -> u64 {
    let stats = call(client, "w__quiver_test_stats", json!({})).await;
    let stats: Value = serde_json::from_str(&text(&stats)).expect("stats as JSON");
    stats["calls"]["get_forecast"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn a_long_script_becomes_a_task_and_a_short_one_answers_directly() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let client = connect_taking_tasks(&dev.mode_url("code"), None).await;
    let info = client.peer_info().expect("initialized");
    assert!(
        info.capabilities.supports_tasks(),
        "{:?}",
        info.capabilities
    );

    let short = client
        .peer()
        .call_tool_once(execute("return 6 * 7;"))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(short) = short else {
        panic!("a short script answers directly: {short:?}")
    };
    assert!(text(&short).contains("42"), "{}", text(&short));

    let long = execute(
        "await new Promise((r) => setTimeout(r, 3000)); \
         const f = await tools.w.get_forecast({ city: 'Oslo' }); return { done: true, f };",
    );
    let created = client
        .peer()
        .call_tool_once(long)
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = created else {
        panic!("a script still running after the window is a task: {created:?}")
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    assert!(created.task.ttl_ms.is_some_and(|ttl| ttl > 0));
    let TaskPayload::Completed { result } = ended(&client, &created.task.task_id).await else {
        panic!("the task completes")
    };
    let result = serde_json::to_string(&result).unwrap();
    assert!(
        result.contains("done") && result.contains("Oslo"),
        "{result}"
    );

    // The audit log says when the call became a task and how it ended.
    let id = created.task.task_id.clone();
    let task_records = |out: &str| -> Vec<Value> {
        serde_json::from_str::<Value>(out)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r["kind"] == "task" && r["task_id"] == json!(id))
            .collect()
    };
    let out = ctl_until(&dev.control_plane, &["-o", "json", "audit"], |ok, out| {
        ok && task_records(out).len() == 2
    });
    let outcomes: Vec<Value> = task_records(&out)
        .iter()
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("created"), json!("completed")], "{out}");
    assert!(
        task_records(&out).iter().all(|r| r["tool"] == "execute"),
        "{out}"
    );

    // A client without the extension waits for the same script instead.
    let plain = connect(&dev.mode_url("code")).await;
    let waited = call(
        &plain,
        "execute",
        json!({ "code": "await new Promise((r) => setTimeout(r, 1000)); return 'waited';" }),
    )
    .await;
    assert!(text(&waited).contains("waited"), "{}", text(&waited));
}

#[tokio::test]
async fn a_cancelled_task_stops_its_script() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let client = connect_taking_tasks(&dev.mode_url("code"), None).await;
    let observer = connect(&dev.mode_url("passthrough")).await;
    let before = forecasts(&observer).await;

    let looping = execute(
        "for (;;) { await tools.w.get_forecast({ city: 'Oslo' }); \
         await new Promise((r) => setTimeout(r, 20)); }",
    );
    let created = client
        .peer()
        .call_tool_once(looping)
        .await
        .expect("tools/call");
    let CallToolResponse::Task(created) = created else {
        panic!("an endless script is a task: {created:?}")
    };
    let id = created.task.task_id;
    // It is running: its calls reach the upstream.
    let deadline = Instant::now() + Duration::from_secs(30);
    while forecasts(&observer).await <= before {
        assert!(
            Instant::now() < deadline,
            "the script never called the tool"
        );
    }

    client
        .peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel");
    assert_eq!(ended(&client, &id).await, TaskPayload::Cancelled);

    // Stopped: over a window in which it would have called the tool dozens
    // of times, the upstream sees no further call.
    let at_stop = forecasts(&observer).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        forecasts(&observer).await,
        at_stop,
        "the cancelled script made no further call"
    );

    // Cancelling again is acknowledged; an unknown task is an error.
    client
        .peer()
        .cancel_task(CancelTaskParams::new(id))
        .await
        .expect("cancelling an ended task is acknowledged");
    let unknown = client
        .peer()
        .get_task(GetTaskParams::new("no-such-task"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

#[tokio::test]
async fn an_edge_configured_without_tasks_answers_every_call_directly() {
    // `[edge.tasks]` before the upstream's table, so it is not read as part of it.
    let config = format!("[edge.tasks]\nper_tenant = 0\n\n{}", config());
    let (dev, _dir) = start_with_config(&config, &[]);
    let client = connect_taking_tasks(&dev.mode_url("code"), None).await;
    let answer = client
        .peer()
        .call_tool_once(execute(
            "await new Promise((r) => setTimeout(r, 1500)); return 'direct';",
        ))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(answer) = answer else {
        panic!("with per_tenant = 0 no call becomes a task: {answer:?}")
    };
    assert!(text(&answer).contains("direct"), "{}", text(&answer));
}
