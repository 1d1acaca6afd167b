//! The tools of the tasks extension's scenarios (SEP-2663,
//! `io.modelcontextprotocol/tasks`): `greet` answers at once; the others are
//! task-supporting and, for a caller that declared the extension, answer with
//! a task the caller polls (`tasks/get`), answers (`tasks/update`) and
//! cancels (`tasks/cancel`). Task support is the server's decision, made when
//! the call arrives: an optional tool falls back to answering directly for a
//! caller without the extension, a required one refuses it with `-32021`.
//! Tasks are kept by rmcp's own task runtime, one for the whole process.

use std::{sync::LazyLock, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
        CreateTaskResult, InputRequest, JsonObject, Tool,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions},
};
use serde_json::{Value, json};

pub const GREET: &str = "greet";
pub const SLOW_COMPUTE: &str = "slow_compute";
pub const FAILING_JOB: &str = "failing_job";
pub const PROTOCOL_ERROR_JOB: &str = "protocol_error_job";
pub const CONFIRM_DELETE: &str = "confirm_delete";
pub const MULTI_INPUT: &str = "multi_input";
pub const TOOL_WITH_TASK: &str = "test_tool_with_task";

/// Every task of the process.
pub static TASKS: LazyLock<TaskManager> = LazyLock::new(TaskManager::new);

/// The tools, in a stable order.
pub fn catalogue() -> Vec<Tool> {
    let object = |properties: Value| json!({"type": "object", "properties": properties});
    [
        (
            GREET,
            "Greets by name, at once",
            object(json!({"name": {"type": "string"}})),
        ),
        (
            SLOW_COMPUTE,
            "Sleeps `seconds`, then answers (a task for callers that take tasks)",
            object(json!({"seconds": {"type": "number"}, "label": {"type": "string"}})),
        ),
        (
            FAILING_JOB,
            "A task that ends in a tool error after about a second",
            object(json!({})),
        ),
        (
            PROTOCOL_ERROR_JOB,
            "A task that fails with a protocol error",
            object(json!({})),
        ),
        (
            CONFIRM_DELETE,
            "Asks for a confirmation, then answers (a task for callers that take tasks)",
            object(json!({})),
        ),
        (
            MULTI_INPUT,
            "A task that asks two questions at once",
            object(json!({})),
        ),
        (
            TOOL_WITH_TASK,
            "Asks a name, then answers as a task",
            object(json!({})),
        ),
    ]
    .into_iter()
    .map(|(name, description, schema)| {
        serde_json::from_value(
            json!({"name": name, "description": description, "inputSchema": schema}),
        )
        .expect("a well-formed tool")
    })
    .collect()
}

/// How a tool takes tasks.
#[derive(Clone, Copy, PartialEq)]
enum Support {
    Optional,
    Required,
}

/// Answers a call of one of these tools; `None` for any other tool.
pub async fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let arguments = request.arguments.clone().unwrap_or_default();
    let support = match request.name.as_ref() {
        GREET => {
            let name = arguments
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("stranger");
            return Some(Ok(text(format!("Hello, {name}!")).into()));
        }
        SLOW_COMPUTE | PROTOCOL_ERROR_JOB | CONFIRM_DELETE => Support::Optional,
        FAILING_JOB | MULTI_INPUT | TOOL_WITH_TASK => Support::Required,
        _ => return None,
    };
    let takes_tasks = context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks());
    if !takes_tasks {
        return Some(match support {
            Support::Required => Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            )),
            Support::Optional => run_directly(request, &arguments, context).await,
        });
    }
    if request.name == TOOL_WITH_TASK {
        // First a round of input_required for the name; the task comes after.
        let answer = crate::stateless::ask(
            &request.input_responses,
            "user_name",
            elicitation("What is your name?", "name"),
        );
        let name = match answer {
            Ok(answer) => answer["content"]["name"]
                .as_str()
                .unwrap_or("stranger")
                .to_string(),
            Err(asked) => return Some(Ok((*asked).into())),
        };
        return Some(Ok(spawn(move |_| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(text(format!("Hello, {name}! (answered as a task)")))
            })
        })));
    }
    let name = request.name.to_string();
    Some(Ok(spawn(move |task| operation(name, arguments, task))))
}

/// Starts `make` as a task and answers with its handle.
fn spawn(make: impl FnOnce(TaskContext) -> TaskFuture) -> CallToolResponse {
    let options = TaskOptions::new().with_poll_interval_ms(200);
    CallToolResponse::Task(CreateTaskResult::new(TASKS.spawn(options, make)))
}

/// What a task of `name` does.
fn operation(name: String, arguments: JsonObject, task: TaskContext) -> TaskFuture {
    Box::pin(async move {
        match name.as_str() {
            SLOW_COMPUTE => {
                let seconds = seconds(&arguments);
                tokio::select! {
                    () = tokio::time::sleep(seconds) => Ok(computed(&arguments)),
                    () = task.cancelled() => Err(TaskExit::Cancelled),
                }
            }
            FAILING_JOB => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "failing_job failed, as it always does",
                )]))
            }
            PROTOCOL_ERROR_JOB => Err(TaskExit::Error(ErrorData::internal_error(
                "protocol_error_job hit an internal error",
                None,
            ))),
            CONFIRM_DELETE => {
                let answer = task
                    .request_input("confirm", elicitation("Delete the file?", "confirm"))
                    .await?;
                Ok(confirmed(&answer))
            }
            _ => {
                let (first, second) = tokio::join!(
                    task.request_input("first", elicitation("First answer?", "first")),
                    task.request_input("second", elicitation("Second answer?", "second")),
                );
                Ok(text(format!(
                    "first: {}, second: {}",
                    first?["content"]["first"], second?["content"]["second"]
                )))
            }
        }
    })
}

/// An optional tool for a caller without tasks.
async fn run_directly(
    request: &CallToolRequestParams,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    match request.name.as_ref() {
        PROTOCOL_ERROR_JOB => Err(ErrorData::internal_error(
            "protocol_error_job hit an internal error",
            None,
        )),
        CONFIRM_DELETE => {
            let question = elicitation("Delete the file?", "confirm");
            let answer = if crate::stateless::is_stateless(context) {
                match crate::stateless::ask(&request.input_responses, "confirm", question) {
                    Ok(answer) => answer,
                    Err(asked) => return Ok((*asked).into()),
                }
            } else {
                let InputRequest::Elicitation(asked) = question else {
                    unreachable!("an elicitation")
                };
                let answer = context
                    .peer
                    .create_elicitation(asked.params)
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                serde_json::to_value(answer).unwrap_or_default()
            };
            Ok(confirmed(&answer).into())
        }
        _ => {
            tokio::time::sleep(seconds(arguments)).await;
            Ok(computed(arguments).into())
        }
    }
}

/// `deleted` when the answer confirms, else `kept`.
fn confirmed(answer: &Value) -> CallToolResult {
    let yes = answer["action"] == "accept"
        && answer["content"]["confirm"]
            .as_bool()
            .unwrap_or(answer["content"]["confirm"] == "yes");
    text(if yes { "deleted" } else { "kept" })
}

fn seconds(arguments: &JsonObject) -> Duration {
    let seconds = arguments
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))
}

fn computed(arguments: &JsonObject) -> CallToolResult {
    let label = arguments.get("label").and_then(Value::as_str).unwrap_or("");
    text(format!("computed {label}"))
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// An elicitation form with one string or boolean `property`.
fn elicitation(message: &str, property: &str) -> InputRequest {
    serde_json::from_value(json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": message, "requestedSchema": {
            "type": "object", "properties": {property: {"type": "string"}}, "required": [property]}}}))
    .expect("a well-formed input request")
}
