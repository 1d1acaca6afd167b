//! The MCP reference servers from npm (`@modelcontextprotocol/server-everything`,
//! `server-memory`, `server-filesystem`, pinned by scripts/install-node-tools.sh)
//! as stdio upstreams of `quiver dev`, driven by a real rmcp client: through
//! passthrough (calls, structured content, images, progress of a long-running
//! operation, sampling and elicitation relayed to the client) and through a
//! code-mode script (calls, structured content, an image, and a filesystem
//! denial the model can act on: its own path kept, the server's directory not).
// Sampling is deprecated by SEP-2577 in rmcp's types, but reference servers and
// clients still use it, and Quiver relays it.
#![allow(deprecated)]

use crate::support;

use std::path::Path;

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::{
        ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequestParams, ElicitResult, Implementation, ProgressNotificationParam,
    },
    service::{NotificationContext, RequestContext, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use support::{QuiverDev, call, node_tools, text};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What the client saw from the server side: progress values, sampling
/// prompts, elicitation messages.
#[derive(Clone)]
struct ReferenceClient {
    progress: UnboundedSender<f64>,
    sampled: UnboundedSender<String>,
    elicited: UnboundedSender<String>,
}

impl ClientHandler for ReferenceClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = serde_json::from_value::<ClientCapabilities>(
            json!({"sampling": {}, "elicitation": {}}),
        )
        .expect("capabilities");
        ClientConfig::new(
            capabilities,
            Implementation::new("reference-servers-test", "0"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params.progress);
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let _ = self
            .sampled
            .send(serde_json::to_string(&params.messages).unwrap_or_default());
        serde_json::from_value(json!({
            "model": "test-model", "stopReason": "endTurn", "role": "assistant",
            "content": {"type": "text", "text": "sampled by the test client"}
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let _ = self
            .elicited
            .send(serde_json::to_string(&request).unwrap_or_default());
        serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada Lovelace"}}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

struct Channels {
    progress: UnboundedReceiver<f64>,
    sampled: UnboundedReceiver<String>,
    elicited: UnboundedReceiver<String>,
}

/// The long-running operation's three progress steps reached the client, in
/// order. Notifications are handled beside the response (possibly after it),
/// so each is waited for.
async fn assert_three_progress_steps(seen: &mut Channels, from: &str) {
    let mut steps = Vec::new();
    for _ in 0..3 {
        let step = tokio::time::timeout(std::time::Duration::from_secs(10), seen.progress.recv())
            .await
            .unwrap_or_else(|_| panic!("three progress notifications relayed from {from}"))
            .expect("progress channel open");
        steps.push(step);
    }
    assert_eq!(
        steps,
        [1.0, 2.0, 3.0],
        "progress from {from} relayed in order"
    );
}

async fn connect_reference(url: &str) -> (RunningService<RoleClient, ReferenceClient>, Channels) {
    quiver_upstream::install_crypto_provider();
    let (progress_tx, progress) = unbounded_channel();
    let (sampled_tx, sampled) = unbounded_channel();
    let (elicited_tx, elicited) = unbounded_channel();
    let client = ReferenceClient {
        progress: progress_tx,
        sampled: sampled_tx,
        elicited: elicited_tx,
    }
    .serve(StreamableHttpClientTransport::from_uri(url.to_string()))
    .await
    .expect("MCP client connects");
    (
        client,
        Channels {
            progress,
            sampled,
            elicited,
        },
    )
}

/// `quiver dev` with the three reference servers; `share` is the only
/// directory the filesystem server may touch.
fn start_with_reference_servers(dir: &Path, share: &Path) -> QuiverDev {
    let node = node_tools::node();
    let server = |package: &str| {
        node_tools::package_file(package, "dist/index.js")
            .display()
            .to_string()
    };
    let config = format!(
        r#"
[[upstream]]
id = "everything"
transport = "stdio"
command = "{node}"
args = ["{everything}", "stdio"]

[[upstream]]
id = "memory"
transport = "stdio"
command = "{node}"
args = ["{memory}"]
env = {{ MEMORY_FILE_PATH = "{memory_file}" }}

[[upstream]]
id = "fs"
transport = "stdio"
command = "{node}"
args = ["{filesystem}", "{share}"]
"#,
        node = node.display(),
        everything = server("@modelcontextprotocol/server-everything"),
        memory = server("@modelcontextprotocol/server-memory"),
        memory_file = dir.join("memory.jsonl").display(),
        filesystem = server("@modelcontextprotocol/server-filesystem"),
        share = share.display(),
    );
    let path = support::write_file(dir, "quiver.toml", &config);
    QuiverDev::start(&["--config", path.to_str().expect("utf-8 path")])
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_servers_through_passthrough() {
    let dir = tempfile::tempdir().expect("temp dir");
    let share = dir.path().join("share");
    std::fs::create_dir(&share).expect("share dir");
    std::fs::write(share.join("notes.txt"), "remember the milk").expect("write");
    let dev = start_with_reference_servers(dir.path(), &share);
    let (client, mut seen) = connect_reference(&dev.mode_url("passthrough")).await;

    eprintln!("--- a plain call and structured content");
    let sum = call(&client, "everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(text(&sum).contains("42"), "{}", text(&sum));
    let weather = call(
        &client,
        "everything__get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    let structured = weather
        .structured_content
        .clone()
        .expect("structured content");
    assert!(structured["temperature"].is_number(), "{structured}");

    eprintln!("--- an image arrives as an image block");
    let image = call(&client, "everything__get-tiny-image", json!({})).await;
    let blocks = serde_json::to_value(&image.content).expect("content");
    let png = blocks
        .as_array()
        .expect("blocks")
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block: {blocks}"));
    assert_eq!(png["mimeType"], "image/png");
    assert!(png["data"].as_str().is_some_and(|d| d.len() > 100));

    eprintln!("--- progress of a long-running operation reaches the client");
    let long = call(
        &client,
        "everything__trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    )
    .await;
    assert_ne!(long.is_error, Some(true), "{}", text(&long));
    assert_three_progress_steps(&mut seen, "a direct call").await;

    eprintln!("--- sampling: the upstream asks the client's model, through Quiver");
    let sampled = call(
        &client,
        "everything__trigger-sampling-request",
        json!({"prompt": "write a haiku", "maxTokens": 20}),
    )
    .await;
    assert!(
        text(&sampled).contains("sampled by the test client"),
        "{}",
        text(&sampled)
    );
    let prompt = seen.sampled.try_recv().expect("the client was asked");
    assert!(prompt.contains("write a haiku"), "{prompt}");

    eprintln!("--- elicitation: the upstream asks the user, through Quiver");
    let elicited = call(
        &client,
        "everything__trigger-elicitation-request",
        json!({}),
    )
    .await;
    assert!(
        text(&elicited).contains("Ada Lovelace"),
        "{}",
        text(&elicited)
    );
    assert!(seen.elicited.try_recv().is_ok(), "the client was asked");

    eprintln!("--- memory: what one call stores, the next reads");
    let created = call(
        &client,
        "memory__create_entities",
        json!({"entities": [{"name": "Quiver", "entityType": "project", "observations": ["fronts MCP servers"]}]}),
    )
    .await;
    assert_ne!(created.is_error, Some(true), "{}", text(&created));
    let found = call(&client, "memory__search_nodes", json!({"query": "Quiver"})).await;
    assert!(
        text(&found).contains("fronts MCP servers"),
        "{}",
        text(&found)
    );

    eprintln!("--- filesystem: a read inside the share, a denial outside it");
    let read = call(
        &client,
        "fs__read_text_file",
        json!({"path": share.join("notes.txt")}),
    )
    .await;
    assert_eq!(text(&read), "remember the milk");
    let denied = call(
        &client,
        "fs__read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert_eq!(denied.is_error, Some(true));
    assert_denial_is_actionable(&text(&denied), &share);
    client.cancel().await.expect("close");
}

/// The denial keeps the reason and the path the caller sent; the server's own
/// directory (not the caller's) is redacted.
fn assert_denial_is_actionable(message: &str, share: &Path) {
    assert!(
        message.contains("Access denied") && message.contains("outside allowed directories"),
        "the reason is kept: {message}"
    );
    assert!(
        message.contains("/etc/hostname"),
        "the caller's own path is kept: {message}"
    );
    let share = share.display().to_string();
    assert!(
        !message.contains(&share),
        "the server's directory leaked: {message}"
    );
    assert!(message.contains("[path]"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_servers_through_a_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let share = dir.path().join("share");
    std::fs::create_dir(&share).expect("share dir");
    let dev = start_with_reference_servers(dir.path(), &share);
    let (client, mut seen) = connect_reference(&dev.mode_url("code")).await;

    eprintln!("--- one script: a sum, structured content, an image, memory and a file");
    let script = format!(
        r#"
const [sum, weather, image] = await Promise.all([
  tools.call("everything__get-sum", {{ a: 2, b: 40 }}),
  tools.call("everything__get-structured-content", {{ location: "Chicago" }}),
  tools.call("everything__get-tiny-image", {{}}),
]);
await tools.call("memory__create_entities", {{ entities: [{{ name: "Lisbon", entityType: "city", observations: ["sunny"] }}] }});
const graph = await tools.call("memory__read_graph", {{}});
await tools.call("fs__write_file", {{ path: "{file}", content: "written by a script" }});
const back = await tools.call("fs__read_text_file", {{ path: "{file}" }});
return {{ sum, temperature: weather.temperature, image: Array.isArray(image) ? image.map((b) => b.type) : image, graph, back }};
"#,
        file = share.join("out.txt").display()
    );
    let result = call(&client, "execute", json!({"code": script})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let value = result.structured_content.expect("structured")["result"].clone();
    assert!(value["sum"].to_string().contains("42"), "{value}");
    assert!(value["temperature"].is_number(), "{value}");
    assert!(value.to_string().contains("image"), "{value}");
    assert!(value["graph"].to_string().contains("sunny"), "{value}");
    // The filesystem server answers with structured content: {content}.
    assert_eq!(
        value["back"]["content"],
        Value::String("written by a script".into())
    );
    assert_eq!(
        std::fs::read_to_string(share.join("out.txt")).expect("the file was written"),
        "written by a script"
    );

    eprintln!("--- sampling and elicitation from a script's tool calls reach the client");
    let script = r#"
const sampled = await tools.call("everything__trigger-sampling-request", { prompt: "write a limerick", maxTokens: 20 });
const elicited = await tools.call("everything__trigger-elicitation-request", {});
return { sampled: JSON.stringify(sampled), elicited: JSON.stringify(elicited) };
"#;
    let result = call(&client, "execute", json!({"code": script})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let value = result.structured_content.expect("structured")["result"].clone();
    assert!(
        value["sampled"]
            .as_str()
            .unwrap_or_default()
            .contains("sampled by the test client"),
        "{value}"
    );
    assert!(
        value["elicited"]
            .as_str()
            .unwrap_or_default()
            .contains("Ada Lovelace"),
        "{value}"
    );
    let prompt = seen
        .sampled
        .try_recv()
        .expect("the client was asked to sample");
    assert!(prompt.contains("write a limerick"), "{prompt}");
    assert!(seen.elicited.try_recv().is_ok(), "the client was asked");

    eprintln!("--- progress of a long-running operation a script calls reaches the client");
    let script = r#"
await tools.call("everything__trigger-long-running-operation", { duration: 0.3, steps: 3 });
return "done";
"#;
    let result = call(&client, "execute", json!({"code": script})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert_three_progress_steps(&mut seen, "the script's call").await;

    eprintln!("--- a denial the script can act on: caught, with its own path in it");
    let script = r#"
try {
  await tools.call("fs__read_text_file", { path: "/etc/hostname" });
  return "read";
} catch (e) {
  const allowed = await tools.call("fs__list_allowed_directories", {});
  return { error: String(e.message ?? e), allowed_known: JSON.stringify(allowed).length > 0 };
}
"#;
    let result = call(&client, "execute", json!({"code": script})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let value = result.structured_content.expect("structured")["result"].clone();
    assert_denial_is_actionable(value["error"].as_str().expect("message"), &share);

    eprintln!("--- uncaught, the script's error keeps the path it wrote");
    let result = call(
        &client,
        "execute",
        json!({"code": r#"return await tools.call("fs__read_text_file", { path: "/etc/hostname" });"#}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_denial_is_actionable(&text(&result), &share);
    client.cancel().await.expect("close");
}
