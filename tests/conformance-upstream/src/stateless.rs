//! What the MCP 2026-07-28 requirement set calls: the diagnostic tools of
//! `server-stateless`, the `input_required` tools and prompt of the
//! `input-required-result-*` scenarios (SEP-2322), and list changes told on
//! `subscriptions/listen` streams. For a 2026-07-28 client the older tools
//! that ask the client (sampling, elicitation) ask with `input_required` too
//! ([`ask`]).

#![allow(deprecated)] // logging and sampling are current in the revisions served

use std::sync::{
    Mutex, PoisonError,
    atomic::{AtomicBool, Ordering},
};

use ring::hmac;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResult, ClientCapabilities, ContentBlock, GetPromptResult, InputRequest,
        InputRequests, InputRequiredResult, InputResponses, LoggingLevel,
        LoggingMessageNotificationParam, PromptMessage, ProtocolVersion, Role, Tool,
    },
    service::{RequestContext, SubscriptionSink},
};
use serde_json::{Value, json};

pub const MISSING_CAPABILITY: &str = "test_missing_capability";
pub const TRIGGER_TOOL_CHANGE: &str = "test_trigger_tool_change";
pub const TRIGGER_PROMPT_CHANGE: &str = "test_trigger_prompt_change";
pub const LOGGING_TOOL: &str = "test_logging_tool";
pub const STREAMING_ELICITATION: &str = "test_streaming_elicitation";
pub const IR_ELICITATION: &str = "test_input_required_result_elicitation";
pub const IR_SAMPLING: &str = "test_input_required_result_sampling";
pub const IR_LIST_ROOTS: &str = "test_input_required_result_list_roots";
pub const IR_REQUEST_STATE: &str = "test_input_required_result_request_state";
pub const IR_MULTIPLE: &str = "test_input_required_result_multiple_inputs";
pub const IR_MULTI_ROUND: &str = "test_input_required_result_multi_round";
pub const IR_TAMPERED: &str = "test_input_required_result_tampered_state";
pub const IR_CAPABILITIES: &str = "test_input_required_result_capabilities";
pub const IR_PROMPT: &str = "test_input_required_result_prompt";
/// The tool `test_trigger_tool_change` adds and takes away again.
pub const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt `test_trigger_prompt_change` adds and takes away again.
pub const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Whether the trigger tools have added their tool and prompt (process-wide:
/// a stateless client's requests each get a fresh handler).
static DYNAMIC_TOOL_LISTED: AtomicBool = AtomicBool::new(false);
static DYNAMIC_PROMPT_LISTED: AtomicBool = AtomicBool::new(false);
/// The open `subscriptions/listen` streams, and the sessions to tell.
static LISTENERS: Mutex<Vec<SubscriptionSink>> = Mutex::new(Vec::new());
static SESSIONS: Mutex<Vec<rmcp::service::Peer<RoleServer>>> = Mutex::new(Vec::new());

/// Whether the request speaks MCP 2026-07-28 (or later).
pub fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The tools of this module, with the dynamic one while it is listed.
pub fn catalogue() -> Vec<Tool> {
    let no_args = json!({"type": "object", "properties": {}});
    let mut tools: Vec<(&str, &str)> = vec![
        (
            MISSING_CAPABILITY,
            "Requires the client's sampling capability (-32021 without it)",
        ),
        (
            TRIGGER_TOOL_CHANGE,
            "Adds or removes test_dynamic_tool and tells listeners",
        ),
        (
            TRIGGER_PROMPT_CHANGE,
            "Adds or removes test_dynamic_prompt and tells listeners",
        ),
        (
            LOGGING_TOOL,
            "Logs once, only when the request's _meta names a logLevel",
        ),
        (STREAMING_ELICITATION, "Asks the user with input_required"),
        (
            IR_ELICITATION,
            "input_required: elicits a name, then greets",
        ),
        (IR_SAMPLING, "input_required: asks the model a question"),
        (IR_LIST_ROOTS, "input_required: asks for the client's roots"),
        (
            IR_REQUEST_STATE,
            "input_required with a requestState it checks",
        ),
        (
            IR_MULTIPLE,
            "input_required: elicitation, sampling and roots at once",
        ),
        (IR_MULTI_ROUND, "input_required over two rounds"),
        (
            IR_TAMPERED,
            "input_required with an HMAC-signed requestState",
        ),
        (
            IR_CAPABILITIES,
            "input_required only for the capabilities the client declared",
        ),
    ];
    if DYNAMIC_TOOL_LISTED.load(Ordering::SeqCst) {
        tools.push((
            DYNAMIC_TOOL,
            "Listed while test_trigger_tool_change says so",
        ));
    }
    tools
        .into_iter()
        .map(|(name, description)| {
            let schema = no_args.as_object().cloned().unwrap_or_default();
            Tool::new(name, description, std::sync::Arc::new(schema))
        })
        .collect()
}

/// The prompts of this module.
pub fn prompts() -> Vec<rmcp::model::Prompt> {
    let mut names = vec![(IR_PROMPT, "input_required: asks for context first")];
    if DYNAMIC_PROMPT_LISTED.load(Ordering::SeqCst) {
        names.push((
            DYNAMIC_PROMPT,
            "Listed while test_trigger_prompt_change says so",
        ));
    }
    names
        .into_iter()
        .map(|(name, description)| rmcp::model::Prompt::new(name, Some(description), None))
        .collect()
}

/// Remembers a session to tell of list changes.
pub fn add_session(peer: rmcp::service::Peer<RoleServer>) {
    SESSIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(peer);
}

/// Remembers a `subscriptions/listen` stream to tell of list changes.
pub fn add_listener(sink: SubscriptionSink) {
    LISTENERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(sink);
}

/// Tells every session and listener that the tools (or the prompts) changed.
async fn tell(tools: bool) {
    let sessions = SESSIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for peer in sessions {
        let _ = if tools {
            peer.notify_tool_list_changed().await
        } else {
            peer.notify_prompt_list_changed().await
        };
    }
    let listeners = LISTENERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for sink in listeners {
        let _ = if tools {
            sink.notify_tool_list_changed().await
        } else {
            sink.notify_prompt_list_changed().await
        };
    }
}

/// The client's capabilities: the request's `_meta` for a stateless
/// client, else what it declared at `initialize`.
fn capabilities(context: &RequestContext<RoleServer>) -> ClientCapabilities {
    context.client_capabilities().unwrap_or_default()
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// One input request from its wire JSON.
fn request(method: &str, params: Value) -> InputRequest {
    serde_json::from_value(json!({"method": method, "params": params}))
        .expect("a well-formed input request")
}

fn elicit_request(message: &str, property: &str, kind: &str) -> InputRequest {
    request(
        "elicitation/create",
        json!({"mode": "form", "message": message, "requestedSchema": {
            "type": "object", "properties": {property: {"type": kind}}, "required": [property]}}),
    )
}

fn sampling_request(question: &str, max_tokens: u32) -> InputRequest {
    request(
        "sampling/createMessage",
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": question}}],
               "maxTokens": max_tokens}),
    )
}

fn roots_request() -> InputRequest {
    request("roots/list", json!({}))
}

/// `input_required` asking `requests`, with `state` when given.
fn input_required(requests: InputRequests, state: Option<String>) -> InputRequiredResult {
    InputRequiredResult::new(Some(requests), state)
}

/// The key that signs request states (one per process).
fn state_key() -> &'static hmac::Key {
    static KEY: std::sync::OnceLock<hmac::Key> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .expect("a random key")
    })
}

/// `payload` with its signature: `payload.<hex>`.
fn seal(payload: &str) -> String {
    let tag = hmac::sign(state_key(), payload.as_bytes());
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{payload}.{hex}")
}

/// The payload of a state [`seal`] made, if it was not altered.
fn open(state: &str) -> Option<&str> {
    let (payload, hex) = state.rsplit_once('.')?;
    let tag: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<_>>()?;
    hmac::verify(state_key(), payload.as_bytes(), &tag).ok()?;
    Some(payload)
}

fn tampered() -> ErrorData {
    ErrorData::invalid_params("requestState failed its integrity check", None)
}

/// What the client answered under `key`, when it did with a result (an
/// object); anything else counts as no answer, so it is asked again.
fn answered<'a>(responses: &'a Option<InputResponses>, key: &str) -> Option<&'a Value> {
    responses
        .as_ref()
        .and_then(|r| r.get(key))
        .filter(|answer| answer.is_object())
}

/// Answers the tools of this module; `None` for any other name.
pub async fn call(
    name: &str,
    responses: Option<InputResponses>,
    state: Option<String>,
    context: &RequestContext<RoleServer>,
) -> Option<Result<rmcp::model::CallToolResponse, ErrorData>> {
    let complete = |r: CallToolResult| Some(Ok(r.into()));
    let ask = |requests: InputRequests, state: Option<String>| {
        Some(Ok(input_required(requests, state).into()))
    };
    match name {
        MISSING_CAPABILITY => {
            if capabilities(context).sampling.is_none() {
                let mut required = ClientCapabilities::default();
                required.sampling = Some(Default::default());
                return Some(Err(ErrorData::missing_required_client_capability(required)));
            }
            complete(text("the client declared sampling"))
        }
        TRIGGER_TOOL_CHANGE => {
            DYNAMIC_TOOL_LISTED.fetch_xor(true, Ordering::SeqCst);
            tell(true).await;
            complete(text("the tool list changed"))
        }
        TRIGGER_PROMPT_CHANGE => {
            DYNAMIC_PROMPT_LISTED.fetch_xor(true, Ordering::SeqCst);
            tell(false).await;
            complete(text("the prompt list changed"))
        }
        LOGGING_TOOL => {
            if let Some(level) = context.meta.log_level() {
                let _ = context
                    .peer
                    .notify_logging_message(LoggingMessageNotificationParam::new(
                        level,
                        json!("test_logging_tool ran"),
                    ))
                    .await;
            }
            complete(text("logged only if asked to"))
        }
        STREAMING_ELICITATION | IR_ELICITATION => match answered(&responses, "user_name") {
            Some(answer) => complete(text(format!(
                "Hello, {}!",
                answer["content"]["name"].as_str().unwrap_or("stranger")
            ))),
            None => ask(
                InputRequests::from([(
                    "user_name".to_string(),
                    elicit_request("What is your name?", "name", "string"),
                )]),
                None,
            ),
        },
        IR_SAMPLING => match answered(&responses, "capital_question") {
            Some(answer) => complete(text(format!(
                "The model said: {}",
                answer["content"]["text"].as_str().unwrap_or_default()
            ))),
            None => ask(
                InputRequests::from([(
                    "capital_question".to_string(),
                    sampling_request("What is the capital of France?", 100),
                )]),
                None,
            ),
        },
        IR_LIST_ROOTS => match answered(&responses, "client_roots") {
            Some(answer) => complete(text(format!("Roots: {}", answer["roots"]))),
            None => ask(
                InputRequests::from([("client_roots".to_string(), roots_request())]),
                None,
            ),
        },
        IR_REQUEST_STATE => match (answered(&responses, "confirm"), state.as_deref()) {
            (Some(_), Some(state)) => match open(state) {
                Some("confirm") => complete(text("state-ok: confirmed")),
                _ => Some(Err(tampered())),
            },
            _ => ask(
                InputRequests::from([(
                    "confirm".to_string(),
                    elicit_request("Please confirm", "ok", "boolean"),
                )]),
                Some(seal("confirm")),
            ),
        },
        IR_TAMPERED => match state.as_deref() {
            Some(state) if open(state) != Some("tampered-check") => Some(Err(tampered())),
            Some(_) if answered(&responses, "user_name").is_some() => {
                complete(text("state verified"))
            }
            _ => ask(
                InputRequests::from([(
                    "user_name".to_string(),
                    elicit_request("What is your name?", "name", "string"),
                )]),
                Some(seal("tampered-check")),
            ),
        },
        IR_MULTIPLE => {
            let keys = ["user_name", "greeting", "client_roots"];
            if keys.iter().all(|k| answered(&responses, k).is_some()) {
                return complete(text("all three answered"));
            }
            ask(
                InputRequests::from([
                    (
                        "user_name".to_string(),
                        elicit_request("What is your name?", "name", "string"),
                    ),
                    (
                        "greeting".to_string(),
                        sampling_request("Generate a greeting", 50),
                    ),
                    ("client_roots".to_string(), roots_request()),
                ]),
                Some(seal("multiple")),
            )
        }
        IR_MULTI_ROUND => {
            let round = match state.as_deref().map(open) {
                None => None,
                Some(None) => return Some(Err(tampered())),
                Some(Some(round)) => Some(round),
            };
            let step2 = || {
                InputRequests::from([(
                    "step2".to_string(),
                    elicit_request("Step 2: What is your favorite color?", "color", "string"),
                )])
            };
            match round {
                Some("round-2") if answered(&responses, "step2").is_some() => {
                    complete(text("both steps done"))
                }
                Some("round-2") => ask(step2(), Some(seal("round-2"))),
                Some("round-1") if answered(&responses, "step1").is_some() => {
                    ask(step2(), Some(seal("round-2")))
                }
                _ => ask(
                    InputRequests::from([(
                        "step1".to_string(),
                        elicit_request("Step 1: What is your name?", "name", "string"),
                    )]),
                    Some(seal("round-1")),
                ),
            }
        }
        IR_CAPABILITIES => {
            let caps = capabilities(context);
            if caps.sampling.is_some() && answered(&responses, "question").is_some()
                || caps.elicitation.is_some() && answered(&responses, "user_name").is_some()
            {
                return complete(text("answered what it could"));
            }
            let mut requests = InputRequests::new();
            if caps.sampling.is_some() {
                requests.insert("question".into(), sampling_request("Say hello", 20));
            }
            if caps.elicitation.is_some() {
                requests.insert(
                    "user_name".into(),
                    elicit_request("What is your name?", "name", "string"),
                );
            }
            if requests.is_empty() {
                return complete(text("the client can be asked nothing"));
            }
            ask(requests, None)
        }
        _ => None,
    }
}

/// `test_input_required_result_prompt` (and the dynamic prompt); `None` for
/// any other name.
pub fn get_prompt(
    name: &str,
    responses: Option<InputResponses>,
) -> Option<Result<rmcp::model::GetPromptResponse, ErrorData>> {
    match name {
        IR_PROMPT => Some(Ok(match answered(&responses, "user_context") {
            Some(answer) => {
                let context = answer["content"]["context"].as_str().unwrap_or_default();
                GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Use this context: {context}"),
                )])
                .into()
            }
            None => input_required(
                InputRequests::from([(
                    "user_context".to_string(),
                    elicit_request("What context should the prompt use?", "context", "string"),
                )]),
                None,
            )
            .into(),
        })),
        DYNAMIC_PROMPT if DYNAMIC_PROMPT_LISTED.load(Ordering::SeqCst) => {
            Some(Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                "A prompt listed at run time.",
            )])
            .into()))
        }
        _ => None,
    }
}

/// For a stateless client, the older tools that ask the client (sampling,
/// elicitation) ask with `input_required` under `key`: its answer once
/// given, else the result to send.
pub fn ask(
    responses: &Option<InputResponses>,
    key: &str,
    question: InputRequest,
) -> Result<Value, Box<InputRequiredResult>> {
    match answered(responses, key) {
        Some(answer) => Ok(answer.clone()),
        None => Err(Box::new(input_required(
            InputRequests::from([(key.to_string(), question)]),
            None,
        ))),
    }
}

/// Log level filter for a stateless request: only at or above `_meta.logLevel`.
pub fn logs_at(context: &RequestContext<RoleServer>, level: LoggingLevel) -> bool {
    context
        .meta
        .log_level()
        .is_some_and(|least| level as u8 >= least as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_and_an_altered_one_does_not() {
        let state = seal("round-1");
        assert_eq!(open(&state), Some("round-1"));
        assert_eq!(open(&format!("{state}-TAMPERED")), None);
        assert_eq!(open("round-1"), None);
        assert_eq!(open(&state.replace("round-1", "round-2")), None);
    }

    #[test]
    fn the_dynamic_tool_comes_and_goes() {
        let listed = |tools: Vec<Tool>| tools.iter().any(|t| t.name == DYNAMIC_TOOL);
        let before = listed(catalogue());
        DYNAMIC_TOOL_LISTED.fetch_xor(true, Ordering::SeqCst);
        assert_ne!(listed(catalogue()), before);
        DYNAMIC_TOOL_LISTED.fetch_xor(true, Ordering::SeqCst);
        assert_eq!(listed(catalogue()), before);
    }
}
