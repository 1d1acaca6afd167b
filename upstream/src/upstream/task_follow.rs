//! Following a task an upstream made of a call (the MCP tasks extension,
//! SEP-2663). An upstream decides for itself which calls become tasks, and
//! only for a caller that declared the extension; it then answers with a task
//! handle instead of the result. The caller of [`Upstream::request`] still
//! sees one call with one result: the task is polled (`tasks/get`) until it
//! ends, what it asks for is answered through the caller's sink
//! (`tasks/update`), and it is cancelled (`tasks/cancel`) when the caller goes.

use std::collections::HashSet;

use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, CreateTaskResult, GetTaskParams, GetTaskRequest,
    InputRequests, TaskPayload, UpdateTaskParams, UpdateTaskRequest,
};

use super::*;

/// The first pause between two polls; it doubles up to the upstream's
/// suggested interval.
const FIRST_POLL: Duration = Duration::from_millis(25);
/// The longest pause between two polls, whatever the upstream suggests.
const LONGEST_POLL: Duration = Duration::from_secs(5);
/// The pause between polls when the upstream suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

impl Upstream {
    /// The result of the task `created`, which the upstream made of a call
    /// sent with `options`.
    pub(super) async fn follow_task(
        self: &Arc<Self>,
        created: CreateTaskResult,
        options: CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        if let Some(sink) = &options.sink {
            sink.task_started();
        }
        let task_id = created.task.task_id.clone();
        // Whatever ends this follow early (an error, the caller dropping it
        // on an executor) cancels the upstream's task too.
        let mut abandoned = CancelTaskOnDrop {
            upstream: Some(self.clone()),
            task_id: task_id.clone(),
            options: options.clone(),
        };
        // The upstream fails its own task past its TTL; the follow ends then too.
        let deadline = created
            .task
            .ttl_ms
            .map(|ttl| tokio::time::Instant::now() + Duration::from_millis(ttl));
        let suggested = created
            .task
            .poll_interval_ms
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(FIRST_POLL, LONGEST_POLL);
        let mut pause = FIRST_POLL;
        let mut answered: HashSet<String> = HashSet::new();
        loop {
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return Err(self.task_protocol(format!(
                    "its task {task_id} ran past its own time to live without ending"
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = options.cancel.cancelled() => {
                    abandoned.upstream = None;
                    return Err(self.cancel_task(&task_id, &options).await);
                }
            }
            pause = (pause * 2).min(suggested);
            let get = GetTaskRequest::new(GetTaskParams::new(task_id.clone()));
            let polled = self
                .task_request(ClientRequest::GetTaskRequest(get), &options)
                .await?;
            let ServerResult::GetTaskResult(polled) = polled else {
                return Err(self.task_protocol(format!(
                    "tasks/get answered with {}",
                    super::calls::response_kind(&polled)
                )));
            };
            if polled.task.status().is_terminal() {
                abandoned.upstream = None;
            }
            match polled.task.payload {
                TaskPayload::Completed { result } => {
                    return serde_json::from_value(serde_json::Value::Object(result))
                        .map(ServerResult::CallToolResult)
                        .map_err(|e| self.task_protocol(format!("unreadable task result: {e}")));
                }
                TaskPayload::Failed { error } => {
                    let error = serde_json::Value::Object(error);
                    return Err(UpstreamError::TaskFailed {
                        id: self.config.id.clone(),
                        code: error["code"].as_i64().map_or(-32603, |c| c as i32),
                        message: error["message"]
                            .as_str()
                            .unwrap_or("task failed")
                            .to_string(),
                    });
                }
                TaskPayload::Cancelled => {
                    return Err(UpstreamError::Cancelled {
                        id: self.config.id.clone(),
                    });
                }
                TaskPayload::InputRequired { input_requests } => {
                    let asked: InputRequests = input_requests
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if asked.is_empty() {
                        continue;
                    }
                    let Some(sink) = &options.sink else {
                        return Err(self.input_not_given("nobody to ask".into()));
                    };
                    let responses = tokio::select! {
                        given = sink.input(asked) => given.map_err(|e| self.input_not_given(e.message.to_string()))?,
                        () = options.cancel.cancelled() => {
                            abandoned.upstream = None;
                            return Err(self.cancel_task(&task_id, &options).await);
                        }
                    };
                    answered.extend(responses.keys().cloned());
                    let update =
                        UpdateTaskRequest::new(UpdateTaskParams::new(task_id.clone(), responses));
                    self.task_request(ClientRequest::UpdateTaskRequest(update), &options)
                        .await?;
                    pause = FIRST_POLL;
                }
                // Working, or a status of a later revision: poll again.
                _ => {}
            }
        }
    }

    /// One request about a task, under the call's options (its sink declares
    /// the extension to an upstream that needs it per request).
    async fn task_request(
        self: &Arc<Self>,
        request: ClientRequest,
        options: &CallOptions,
    ) -> Result<ServerResult, UpstreamError> {
        self.request_admitted(request, options.clone()).await
    }

    /// Asks the upstream to cancel `task_id` (its answer does not matter: the
    /// caller is gone) and says the call was cancelled.
    async fn cancel_task(self: &Arc<Self>, task_id: &str, options: &CallOptions) -> UpstreamError {
        let cancel = CancelTaskRequest::new(CancelTaskParams::new(task_id.to_string()));
        let quiet = CallOptions {
            cancel: CancellationToken::new(),
            ..options.clone()
        };
        let _ = self
            .request_admitted(ClientRequest::CancelTaskRequest(cancel), quiet)
            .await;
        UpstreamError::Cancelled {
            id: self.config.id.clone(),
        }
    }

    fn task_protocol(&self, detail: String) -> UpstreamError {
        UpstreamError::Protocol {
            id: self.config.id.clone(),
            detail,
        }
    }
}

/// Cancels an upstream's task when the follow of it ends early (an error,
/// or the follow dropped: the caller went away), unless disarmed (`upstream`
/// taken) because the task ended or was cancelled already.
struct CancelTaskOnDrop {
    upstream: Option<Arc<Upstream>>,
    task_id: String,
    options: CallOptions,
}

impl Drop for CancelTaskOnDrop {
    fn drop(&mut self) {
        let Some(upstream) = self.upstream.take() else {
            return;
        };
        let (task_id, options) = (self.task_id.clone(), self.options.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = upstream.cancel_task(&task_id, &options).await;
            });
        }
    }
}
