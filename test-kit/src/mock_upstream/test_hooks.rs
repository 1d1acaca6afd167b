//! What the test kit's mock upstream adds to the demo for Quiver's own tests:
//! tools (crash, sleep, fail, rendezvous, large answers and the like), one
//! subscribable resource and one prompt.

use rmcp::{
    ErrorData,
    model::{
        GetPromptRequestParams, GetPromptResult, Prompt, PromptMessage, Resource, ResourceContents,
        Role, Tool,
    },
};
use serde_json::{Value, json};

/// The one resource.
const RESOURCE: &str = "quiver-test://note";
/// The one prompt.
const PROMPT: &str = "brief";

/// The resources, `quiver-test://note` alone.
pub(super) fn resources() -> Vec<Resource> {
    serde_json::from_value(json!([{"uri": RESOURCE, "name": "note", "mimeType": "text/plain"}]))
        .unwrap_or_default()
}

/// The contents of `uri`, if it is the one resource.
pub(super) fn read_resource(uri: &str) -> Result<Vec<ResourceContents>, ErrorData> {
    if uri != RESOURCE {
        return Err(ErrorData::resource_not_found(
            format!("no resource `{uri}`"),
            None,
        ));
    }
    Ok(vec![ResourceContents::text("a note", RESOURCE)])
}

/// The prompts, `brief {topic}` alone.
pub(super) fn prompts() -> Vec<Prompt> {
    serde_json::from_value(json!([{
        "name": PROMPT,
        "description": "A one-line brief on a topic",
        "arguments": [{"name": "topic", "required": true}],
    }]))
    .unwrap_or_default()
}

/// `brief` rendered for its `topic`.
pub(super) fn render_prompt(
    request: &GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    if request.name != PROMPT {
        return Err(ErrorData::invalid_params(
            format!("no prompt `{}`", request.name),
            None,
        ));
    }
    let topic = request
        .arguments
        .as_ref()
        .and_then(|a| a.get("topic"))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params("`topic` is required", None))?;
    let text = format!("Write a one-line brief on {topic}.");
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        text,
    )]))
}

/// The test-hook tools, in a fixed order.
pub(super) fn test_hook_tools() -> Vec<Tool> {
    let tool = |name: &str, description: &str, schema: Value| -> Option<Tool> {
        serde_json::from_value(
            json!({"name": name, "description": description, "inputSchema": schema}),
        )
        .ok()
    };
    [
        tool("quiver_test_crash", "Exit the server process immediately (tests only).", json!({"type": "object"})),
        tool(
            "quiver_test_sleep",
            "Sleep, then answer (tests only).",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        ),
        tool("quiver_test_stats", "Counters of what this server saw: cancellations, calls per tool (tests only).", json!({"type": "object"})),
        tool(
            "quiver_test_fail",
            "Fail with an error that names the path asked for beside this server's secret (env QUIVER_TEST_SECRET), an internal address and a server path (tests only).",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        tool(
            "quiver_test_add_tool",
            "Add a tool and announce tools/list_changed (tests only).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        ),
        tool(
            "quiver_test_rendezvous",
            "Wait until `parties` calls of `group` are in flight, send `logs` log messages, report `steps` progress notifications tagged `tag`, make `asks` sampling or elicitation requests (`ask`), wait until every call of the group got that far, then answer with what the client said (tests only).",
            json!({"type": "object", "properties": {
                "group": {"type": "string"}, "parties": {"type": "integer"}, "steps": {"type": "integer"},
                "tag": {"type": "string"}, "ask": {"enum": ["sampling", "elicitation"]}, "asks": {"type": "integer"},
                "logs": {"type": "integer"}
            }, "required": ["group", "parties", "steps", "tag"]}),
        ),
        tool(
            "quiver_test_request_header",
            "Answer with the SHA-256 (hex) of header `name` of the HTTP request that carried this call (with `meta`, of the string under key `name` of the call's `_meta`), or null without one; with `echo`, its value too, as a careless server would in an error (tests only).",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "echo": {"type": "boolean"}, "meta": {"type": "boolean"}}, "required": ["name"]}),
        ),
        tool(
            "quiver_test_touch_resource",
            "Announce notifications/resources/updated for `uri` to the clients subscribed to it (tests only).",
            json!({"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}),
        ),
        tool(
            "quiver_test_large",
            "Answer with `bytes` bytes of text: lines `{n:015}\\n`, n from 0, the last one cut (tests only).",
            json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `bytes` bytes of numbered lines (`{n:015}\n`, n from 0), the last one cut:
/// a reader can tell a dropped, doubled or reordered piece from its position.
pub(super) fn numbered_lines(bytes: u64) -> String {
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    let mut text = String::with_capacity(bytes.saturating_add(16));
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("{n:015}\n"));
        n += 1;
    }
    text.truncate(bytes);
    text
}
