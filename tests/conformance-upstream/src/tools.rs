//! The fixture's tools: one per conformance scenario that calls `tools/call`, named
//! exactly as the suite expects, plus the JSON Schema 2020-12 tool it only lists.
//! Tools that talk back to the client (logging, progress, sampling, elicitation) do so
//! through the request's peer, so the messages travel on that request's stream; a
//! client of MCP 2026-07-28 is asked with `input_required` instead (see `stateless`).

#![allow(deprecated)] // logging and sampling: see server.rs

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
        ElicitRequestParams, ElicitResult, InputRequest, InputResponses, JsonObject, LoggingLevel,
        LoggingMessageNotificationParam, ProgressNotificationParam, ResourceContents,
        SamplingMessage, ServerRequest, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{media, stateless};

pub const SIMPLE_TEXT: &str = "test_simple_text";
pub const IMAGE_CONTENT: &str = "test_image_content";
pub const AUDIO_CONTENT: &str = "test_audio_content";
pub const EMBEDDED_RESOURCE: &str = "test_embedded_resource";
pub const MULTIPLE_CONTENT_TYPES: &str = "test_multiple_content_types";
pub const TOOL_WITH_LOGGING: &str = "test_tool_with_logging";
pub const TOOL_WITH_PROGRESS: &str = "test_tool_with_progress";
pub const ERROR_HANDLING: &str = "test_error_handling";
pub const SAMPLING: &str = "test_sampling";
pub const ELICITATION: &str = "test_elicitation";
pub const ELICITATION_DEFAULTS: &str = "test_elicitation_sep1034_defaults";
pub const ELICITATION_ENUMS: &str = "test_elicitation_sep1330_enums";
pub const JSON_SCHEMA_2020_12: &str = "json_schema_2020_12_tool";
pub const RECONNECTION: &str = "test_reconnection";
pub const HEADER_PARAMETER: &str = "test_header_parameter";

/// Pause between the notifications of the logging and progress tools; the scenarios
/// ask for ~50 ms so clients see them arrive separately.
const STEP: Duration = Duration::from_millis(50);

/// Every tool, in a stable order.
pub fn catalogue() -> Vec<Tool> {
    let no_args = || json!({ "type": "object", "properties": {} });
    vec![
        tool(
            SIMPLE_TEXT,
            "Returns a single text content block",
            no_args(),
        ),
        tool(
            IMAGE_CONTENT,
            "Returns a 1x1 PNG image content block",
            no_args(),
        ),
        tool(
            AUDIO_CONTENT,
            "Returns a tiny WAV audio content block",
            no_args(),
        ),
        tool(
            EMBEDDED_RESOURCE,
            "Returns an embedded text resource",
            no_args(),
        ),
        tool(
            MULTIPLE_CONTENT_TYPES,
            "Returns text, image and embedded resource content together",
            no_args(),
        ),
        tool(
            TOOL_WITH_LOGGING,
            "Sends three info log notifications while it runs",
            no_args(),
        ),
        tool(
            TOOL_WITH_PROGRESS,
            "Reports progress 0, 50 and 100 of 100 when given a progress token",
            no_args(),
        ),
        tool(
            ERROR_HANDLING,
            "Always fails with a tool-level error",
            no_args(),
        ),
        tool(
            SAMPLING,
            "Asks the client's model to complete a prompt (sampling/createMessage)",
            json!({
                "type": "object",
                "properties": {
                    "prompt": { "type": "string", "description": "The prompt to send to the model" }
                },
                "required": ["prompt"]
            }),
        ),
        tool(
            ELICITATION,
            "Asks the user for a username and an email (elicitation/create)",
            json!({
                "type": "object",
                "properties": {
                    "message": { "type": "string", "description": "The message to show the user" }
                },
                "required": ["message"]
            }),
        ),
        tool(
            ELICITATION_DEFAULTS,
            "Elicits a form whose fields all carry default values (SEP-1034)",
            no_args(),
        ),
        tool(
            ELICITATION_ENUMS,
            "Elicits a form using every enum schema variant (SEP-1330)",
            no_args(),
        ),
        tool(
            JSON_SCHEMA_2020_12,
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "address",
                        "type": "object",
                        "properties": {
                            "street": { "type": "string" },
                            "city": { "type": "string" }
                        }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contact": { "type": "string" }
                },
                // SEP-2106: composition and conditional keywords survive listing too.
                "allOf": [
                    { "anyOf": [{ "required": ["name"] }, { "required": ["contact"] }] }
                ],
                "if": { "required": ["address"] },
                "then": { "properties": { "address": { "required": ["city"] } } },
                "else": { "properties": { "name": { "minLength": 1 } } },
                "additionalProperties": false
            }),
        ),
        tool(
            HEADER_PARAMETER,
            "Echoes its `region` argument, which HTTP clients also send as the Mcp-Param-Region header (SEP-2243)",
            json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Region" }
                },
                "required": ["region"]
            }),
        ),
        tool(
            RECONNECTION,
            "Answers after a short pause; used by the SSE polling scenario",
            no_args(),
        ),
    ]
}

fn tool(name: &'static str, description: &'static str, input_schema: Value) -> Tool {
    Tool::new(name, description, Arc::new(json_object(input_schema)))
}

fn json_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The client's `logging/setLevel` filter, as the session holds it.
pub trait LogFilter: Sync {
    /// Whether a log message at `level` passes it.
    fn should_log(&self, level: LoggingLevel) -> bool;
}

/// Runs the tool named in `request`. Unknown tools are a protocol error (the request
/// cannot be routed); a tool that runs and fails returns `isError: true`.
pub async fn call(
    logs: &dyn LogFilter,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let arguments = request.arguments.unwrap_or_default();
    let responses = request.input_responses;
    match request.name.as_ref() {
        SAMPLING => {
            let prompt = string_argument(&arguments, "prompt")?;
            sample(&context, prompt, &responses).await
        }
        ELICITATION => {
            let message = string_argument(&arguments, "message")?;
            elicit(&context, contact_form(message)?, &responses).await
        }
        ELICITATION_DEFAULTS => elicit(&context, defaults_form()?, &responses).await,
        ELICITATION_ENUMS => elicit(&context, enums_form()?, &responses).await,
        _ => call_complete(logs, request.name.as_ref(), arguments, context)
            .await
            .map(Into::into),
    }
}

/// The tools that answer in one round.
async fn call_complete(
    logs: &dyn LogFilter,
    name: &str,
    arguments: JsonObject,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    match name {
        SIMPLE_TEXT => Ok(CallToolResult::success(vec![ContentBlock::text(
            "This is a simple text response for testing.",
        )])),
        IMAGE_CONTENT => Ok(CallToolResult::success(vec![ContentBlock::image(
            media::RED_PIXEL_PNG_BASE64,
            media::PNG_MIME,
        )])),
        AUDIO_CONTENT => Ok(CallToolResult::success(vec![ContentBlock::audio(
            media::SILENCE_WAV_BASE64,
            media::WAV_MIME,
        )])),
        EMBEDDED_RESOURCE => Ok(CallToolResult::success(vec![ContentBlock::resource(
            ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            ),
        )])),
        MULTIPLE_CONTENT_TYPES => Ok(CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(media::RED_PIXEL_PNG_BASE64, media::PNG_MIME),
            ContentBlock::resource(
                ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ])),
        TOOL_WITH_LOGGING => run_with_logging(logs, &context).await,
        TOOL_WITH_PROGRESS => run_with_progress(&context).await,
        ERROR_HANDLING => Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])),
        JSON_SCHEMA_2020_12 => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "Received: {}",
            Value::Object(arguments)
        ))])),
        HEADER_PARAMETER => Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "Region: {}",
            string_argument(&arguments, "region")?
        ))])),
        RECONNECTION => {
            tokio::time::sleep(STEP).await;
            Ok(CallToolResult::success(vec![ContentBlock::text(
                "Reconnection test completed successfully",
            )]))
        }
        other => Err(ErrorData::invalid_params(
            format!("unknown tool `{other}`"),
            Some(
                json!({ "tools": catalogue().iter().map(|t| t.name.clone()).collect::<Vec<_>>() }),
            ),
        )),
    }
}

fn string_argument<'a>(arguments: &'a JsonObject, name: &str) -> Result<&'a str, ErrorData> {
    arguments.get(name).and_then(Value::as_str).ok_or_else(|| {
        ErrorData::invalid_params(format!("argument `{name}` (string) is required"), None)
    })
}

async fn run_with_logging(
    logs: &dyn LogFilter,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (index, message) in steps.into_iter().enumerate() {
        if index > 0 {
            tokio::time::sleep(STEP).await;
        }
        let wanted = if stateless::is_stateless(context) {
            stateless::logs_at(context, LoggingLevel::Info)
        } else {
            logs.should_log(LoggingLevel::Info)
        };
        if wanted {
            context
                .peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                        .with_logger(TOOL_WITH_LOGGING),
                )
                .await
                .map_err(|e| {
                    ErrorData::internal_error(format!("sending a log message: {e}"), None)
                })?;
        }
    }
    Ok(CallToolResult::success(vec![ContentBlock::text(
        "Tool with logging completed",
    )]))
}

async fn run_with_progress(
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let token = context.meta.get_progress_token();
    for (index, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if index > 0 {
            tokio::time::sleep(STEP).await;
        }
        if let Some(token) = &token {
            context
                .peer
                .notify_progress(
                    ProgressNotificationParam::new(token.clone(), progress).with_total(100.0),
                )
                .await
                .map_err(|e| ErrorData::internal_error(format!("sending progress: {e}"), None))?;
        }
    }
    Ok(CallToolResult::success(vec![ContentBlock::text(
        "Tool with progress completed",
    )]))
}

/// One question for the client, in both generations' shapes.
struct Question {
    /// Its key in an `input_required` result.
    key: &'static str,
    /// The capability it needs, by name, and whether the client declared it.
    capability: &'static str,
    declared: fn(&rmcp::model::ClientCapabilities) -> bool,
    /// As an `input_required` request (2026-07-28 clients).
    input: InputRequest,
    /// As a server-to-client request (older clients).
    request: ServerRequest,
}

/// Asks the client `question`: a 2026-07-28 client with `input_required`
/// (its answer arrives in `responses` on the next call), an older one with a
/// server-to-client request. `Err` holds what the call answers instead: the
/// question, or why it cannot be asked.
async fn ask_client<T: serde::de::DeserializeOwned>(
    context: &RequestContext<RoleServer>,
    responses: &Option<InputResponses>,
    question: Question,
) -> Result<T, Result<CallToolResponse, ErrorData>> {
    let answer = if stateless::is_stateless(context) {
        stateless::ask(responses, question.key, question.input)
            .map_err(|asked| Ok((*asked).into()))?
    } else {
        let declared = context
            .peer
            .peer_info()
            .is_some_and(|client| (question.declared)(&client.capabilities));
        if !declared {
            let refusal = format!(
                "the client did not declare the {} capability",
                question.capability
            );
            return Err(Ok(
                CallToolResult::error(vec![ContentBlock::text(refusal)]).into()
            ));
        }
        let response = context
            .peer
            .send_request(question.request)
            .await
            .map_err(|e| {
                let message = format!("asking the client ({}) failed: {e}", question.capability);
                Err(ErrorData::internal_error(message, None))
            })?;
        serde_json::to_value(response).unwrap_or(Value::Null)
    };
    serde_json::from_value(answer).map_err(|e| {
        Err(ErrorData::invalid_params(
            format!(
                "the client's answer ({}) does not fit: {e}",
                question.capability
            ),
            None,
        ))
    })
}

async fn sample(
    context: &RequestContext<RoleServer>,
    prompt: &str,
    responses: &Option<InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    let question = Question {
        key: "sampling",
        capability: "sampling",
        declared: |caps| caps.sampling.is_some(),
        input: InputRequest::CreateMessage(CreateMessageRequest::new(params.clone())),
        request: ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)),
    };
    let result: CreateMessageResult = match ask_client(context, responses, question).await {
        Ok(result) => result,
        Err(answer) => return answer,
    };
    let text = result
        .message
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .map(|content| content.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Ok(CallToolResult::success(vec![ContentBlock::text(format!("LLM response: {text}"))]).into())
}

async fn elicit(
    context: &RequestContext<RoleServer>,
    params: ElicitRequestParams,
    responses: &Option<InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    let question = Question {
        key: "elicitation",
        capability: "elicitation",
        declared: |caps| caps.elicitation.is_some(),
        input: InputRequest::Elicitation(ElicitRequest::new(params.clone())),
        request: ServerRequest::ElicitRequest(ElicitRequest::new(params)),
    };
    let result: ElicitResult = match ask_client(context, responses, question).await {
        Ok(result) => result,
        Err(answer) => return answer,
    };
    let action = serde_json::to_value(&result.action).unwrap_or(Value::Null);
    let content = result.content.unwrap_or(Value::Null);
    Ok(CallToolResult::success(vec![ContentBlock::text(format!(
        "Elicitation completed: action={}, content={content}",
        action.as_str().unwrap_or("unknown")
    ))])
    .into())
}

/// Builds elicitation params from their wire JSON, so each form reads exactly like the
/// schema the scenario checks for.
fn form(message: &str, requested_schema: Value) -> Result<ElicitRequestParams, ErrorData> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": requested_schema,
    }))
    .map_err(|e| ErrorData::internal_error(format!("building an elicitation form: {e}"), None))
}

fn contact_form(message: &str) -> Result<ElicitRequestParams, ErrorData> {
    form(
        message,
        json!({
            "type": "object",
            "properties": {
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" }
            },
            "required": ["username", "email"]
        }),
    )
}

fn defaults_form() -> Result<ElicitRequestParams, ErrorData> {
    form(
        "Please review and update the form fields with defaults",
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active"
                },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            }
        }),
    )
}

fn enums_form() -> Result<ElicitRequestParams, ErrorData> {
    form(
        "Please pick from each kind of enum",
        json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Untitled single-select",
                    "enum": ["option1", "option2", "option3"]
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Titled single-select",
                    "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                        { "const": "value3", "title": "Third Option" }
                    ]
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Legacy titled enum",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Untitled multi-select",
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Titled multi-select",
                    "items": {
                        "anyOf": [
                            { "const": "value1", "title": "First Choice" },
                            { "const": "value2", "title": "Second Choice" },
                            { "const": "value3", "title": "Third Choice" }
                        ]
                    }
                }
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn requested_schema(params: &ElicitRequestParams) -> Value {
        let wire = serde_json::to_value(params).expect("serialize elicitation params");
        wire["requestedSchema"].clone()
    }

    #[test]
    fn tool_names_are_unique_and_every_tool_is_documented() {
        let tools = catalogue();
        let names: BTreeSet<_> = tools.iter().map(|t| t.name.clone()).collect();
        assert_eq!(names.len(), tools.len());
        for tool in &tools {
            assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        }
    }

    #[test]
    fn json_schema_2020_12_keywords_survive_serialization() {
        let tool = catalogue()
            .into_iter()
            .find(|t| t.name == JSON_SCHEMA_2020_12)
            .expect("tool listed");
        let wire = serde_json::to_value(&tool).expect("serialize tool");
        let schema = &wire["inputSchema"];
        assert_eq!(
            schema["$schema"],
            json!("https://json-schema.org/draft/2020-12/schema")
        );
        assert!(schema["$defs"]["address"].is_object());
        assert_eq!(schema["additionalProperties"], json!(false));
    }

    #[test]
    fn defaults_form_keeps_every_default_on_the_wire() {
        let schema = requested_schema(&defaults_form().expect("form builds"));
        let properties = &schema["properties"];
        assert_eq!(properties["name"]["default"], json!("John Doe"));
        assert_eq!(properties["age"]["type"], json!("integer"));
        assert_eq!(properties["age"]["default"], json!(30));
        assert_eq!(properties["score"]["default"], json!(95.5));
        assert_eq!(properties["status"]["default"], json!("active"));
        assert_eq!(
            properties["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert_eq!(properties["verified"]["default"], json!(true));
    }

    #[test]
    fn enums_form_keeps_all_five_variants_on_the_wire() {
        let schema = requested_schema(&enums_form().expect("form builds"));
        let properties = &schema["properties"];
        assert!(properties["untitledSingle"]["enum"].is_array());
        assert!(properties["untitledSingle"].get("oneOf").is_none());
        assert_eq!(
            properties["titledSingle"]["oneOf"][0]["title"],
            json!("First Option")
        );
        assert!(properties["titledSingle"].get("enum").is_none());
        assert_eq!(
            properties["legacyEnum"]["enumNames"],
            json!(["Option One", "Option Two", "Option Three"])
        );
        assert_eq!(properties["untitledMulti"]["type"], json!("array"));
        assert!(properties["untitledMulti"]["items"]["enum"].is_array());
        assert_eq!(
            properties["titledMulti"]["items"]["anyOf"][1]["const"],
            json!("value2")
        );
    }

    #[test]
    fn contact_form_requires_username_and_email() {
        let schema = requested_schema(&contact_form("hi").expect("form builds"));
        assert_eq!(schema["required"], json!(["username", "email"]));
    }
}
