//! The edge's tasks on one edge: their lifecycle, questions, cancellation
//! and expiry.

use rmcp::model::{ContentBlock, ElicitRequest, ElicitRequestParams, InputRequests};
use serde_json::json;
use tokio::sync::oneshot;

use super::*;

/// The questions of a task, for tests: what `tasks/get` shows.
fn questions(task: &DetailedTask) -> Vec<String> {
    match &task.payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

fn question() -> InputRequest {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "message": "name?", "requestedSchema": {"type": "object", "properties": {}}
    }))
    .unwrap();
    InputRequest::Elicitation(ElicitRequest::new(params))
}

/// A call for tenant `t` that asks `keys` at once, then answers with what
/// it was told; and the token that says it was stopped.
fn asking_call(keys: &[&str]) -> (RunningCall, CancellationToken) {
    let (asks, asked) = mpsc::channel(1);
    let cancel = CancellationToken::new();
    let requests: InputRequests = keys.iter().map(|k| (k.to_string(), question())).collect();
    let stopped = cancel.clone();
    let task = tokio::spawn(async move {
        let (answer, answered) = oneshot::channel();
        asks.send(Ask { requests, answer }).await.unwrap();
        let told = answered.await.unwrap()?;
        Ok(CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string(&told).unwrap(),
        )]))
    });
    (RunningCall::new("t", "tool", task, asked, cancel), stopped)
}

/// `call` made a task of tenant `t`; its id.
async fn adopted(tasks: &Arc<EdgeTasks>, call: RunningCall) -> String {
    let room = tasks.reserve("t").expect("room for a task");
    let who = (&CallOrigin::default(), "tool");
    tasks.adopt(call, None, who, room).await.task_id
}

async fn settled(tasks: &EdgeTasks, id: &str) -> DetailedTask {
    loop {
        let task = tasks.get("t", id).await.unwrap();
        if task.status().is_terminal() {
            return task;
        }
        tokio::task::yield_now().await;
    }
}

async fn asking(tasks: &EdgeTasks, id: &str) -> Vec<String> {
    loop {
        let keys = questions(&tasks.get("t", id).await.unwrap());
        if !keys.is_empty() {
            return keys;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn answers_given_one_at_a_time_resume_the_call_once_all_are_in() {
    let tasks = Arc::new(EdgeTasks::new(TaskLimits::default()));
    let (call, _) = asking_call(&["first", "second"]);
    let id = adopted(&tasks, call).await;
    assert_eq!(asking(&tasks, &id).await, ["first", "second"]);

    tasks
        .update(
            "t",
            &id,
            InputResponses::from([("first".into(), json!("a"))]),
        )
        .await
        .unwrap();
    assert_eq!(questions(&tasks.get("t", &id).await.unwrap()), ["second"]);
    // Another tenant sees no such task, and cannot answer it.
    assert!(tasks.get("u", &id).await.is_err());
    assert!(tasks.update("u", &id, InputResponses::new()).await.is_err());

    tasks
        .update(
            "t",
            &id,
            InputResponses::from([("second".into(), json!("b"))]),
        )
        .await
        .unwrap();
    let ended = settled(&tasks, &id).await;
    assert_eq!(ended.status(), TaskStatus::Completed);
    let TaskPayload::Completed { result } = ended.payload else {
        unreachable!()
    };
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("\"first\":\"a\"") && text.contains("\"second\":\"b\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_cancelled_task_stops_its_call_and_ends_cancelled() {
    let tasks = Arc::new(EdgeTasks::new(TaskLimits::default()));
    let (call, stopped) = asking_call(&["q"]);
    let id = adopted(&tasks, call).await;
    asking(&tasks, &id).await;
    tasks.cancel("t", &id).await.unwrap();
    assert_eq!(settled(&tasks, &id).await.status(), TaskStatus::Cancelled);
    assert!(stopped.is_cancelled(), "the call was stopped");
    // Cancelling an ended task changes nothing.
    tasks.cancel("t", &id).await.unwrap();
    assert_eq!(
        tasks.get("t", &id).await.unwrap().status(),
        TaskStatus::Cancelled
    );
}

#[test]
fn calls_that_may_become_tasks_hold_room_until_they_end() {
    let limits = TaskLimits {
        per_tenant: 2,
        ..TaskLimits::default()
    };
    let tasks = Arc::new(EdgeTasks::new(limits));
    let first = tasks.reserve("t").expect("room for one");
    let second = tasks.reserve("t").expect("room for two");
    assert!(
        tasks.reserve("t").is_none(),
        "two calls in flight fill the limit"
    );
    drop(first);
    let third = tasks
        .reserve("t")
        .expect("a call that ended gave its room back");
    drop((second, third));
    assert!(tasks.reserved.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_result_over_the_limit_fails_its_task_and_a_full_tenant_has_no_room() {
    let limits = TaskLimits {
        result_bytes: 16,
        per_tenant: 1,
        ..TaskLimits::default()
    };
    let tasks = Arc::new(EdgeTasks::new(limits));
    let (call, _) = asking_call(&["q"]);
    let id = adopted(&tasks, call).await;
    assert!(
        tasks.reserve("t").is_none(),
        "one task is the tenant's limit"
    );
    assert!(tasks.reserve("u").is_some(), "limits are per tenant");
    asking(&tasks, &id).await;
    tasks
        .update(
            "t",
            &id,
            InputResponses::from([("q".into(), json!("a long answer"))]),
        )
        .await
        .unwrap();
    let ended = settled(&tasks, &id).await;
    assert_eq!(ended.status(), TaskStatus::Failed);
    let TaskPayload::Failed { error } = ended.payload else {
        unreachable!()
    };
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("at most 16 bytes"),
        "{error:?}"
    );
}

#[tokio::test]
async fn results_are_kept_within_the_edge_wide_room_and_tasks_within_the_edge_cap() {
    let limits = TaskLimits {
        results_total: 100,
        max_tasks: 2,
        ..TaskLimits::default()
    };
    let tasks = Arc::new(EdgeTasks::new(limits));
    let finish = |tasks: Arc<EdgeTasks>| async move {
        let (call, _) = asking_call(&["q"]);
        let id = adopted(&tasks, call).await;
        asking(&tasks, &id).await;
        tasks
            .update(
                "t",
                &id,
                InputResponses::from([("q".into(), json!("answer"))]),
            )
            .await
            .unwrap();
        settled(&tasks, &id).await
    };
    let first = finish(tasks.clone()).await;
    assert_eq!(first.status(), TaskStatus::Completed);
    let kept = tasks.kept_bytes.load(std::sync::atomic::Ordering::Relaxed);
    // One result fits in the room, two do not.
    assert!(kept <= 100 && 2 * kept > 100, "{kept}");
    // Two tasks are the edge's cap, whatever the tenant.
    let second = finish(tasks.clone()).await;
    assert!(
        tasks.reserve("u").is_none(),
        "the edge holds its most tasks"
    );
    // The second result did not fit beside the first: its task says so.
    assert_eq!(second.status(), TaskStatus::Failed);
    let TaskPayload::Failed { error } = second.payload else {
        unreachable!()
    };
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("most task results"),
        "{error:?}"
    );
    assert_eq!(
        tasks.kept_bytes.load(std::sync::atomic::Ordering::Relaxed),
        kept
    );
}
