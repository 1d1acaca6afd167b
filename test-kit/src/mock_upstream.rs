//! `quiver-test-kit mock-upstream`: the demo upstream (`quiver_demo`) with
//! the tools Quiver's integration tests use to crash, hang, change the tool
//! list, hold calls until others arrive, answer at length on purpose, or say
//! (as a SHA-256, never the value) which credentials the HTTP requests
//! carried; one subscribable resource and one prompt besides.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context as _, anyhow};
use clap::Args;
use quiver_demo::ServeArgs;
use quiver_proto::{StubHash, catalog::CatalogServer};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::{Peer, RequestContext},
};
use serde_json::{Value, json};

/// Arguments of `quiver-test-kit mock-upstream`.
#[derive(Args, Debug)]
pub struct MockUpstreamArgs {
    #[command(flatten)]
    serve: ServeArgs,
    /// Serve MCP Streamable HTTP on a listening TCP socket inherited as this
    /// file descriptor (an upstream restarted on the socket keeps its
    /// address, and no other process can take the port in between).
    #[arg(long, conflicts_with_all = ["listen", "stdio"])]
    listen_fd: Option<i32>,
    /// Also speak MCP 2026-07-28 (stateless), where the rendezvous tool asks
    /// with `input_required` instead of a request to the client.
    #[arg(long)]
    stateless: bool,
}

/// Runs the mock upstream until its client goes away.
pub async fn run(args: MockUpstreamArgs) -> anyhow::Result<()> {
    let _telemetry = quiver_telemetry::init("mock-upstream", &Default::default(), "warn")
        .map_err(|e| anyhow!("telemetry: {e}"))?;
    let mut mock = MockServer::new(args.serve.load()?, args.serve.page_size.max(1));
    mock.stateless = args.stateless;
    let listener = match (args.serve.listen, args.listen_fd) {
        (Some(addr), _) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?,
        ),
        (None, Some(fd)) => Some(inherited_listener(fd)?),
        (None, None) => None,
    };
    match listener {
        None => quiver_demo::serve_stdio(mock).await?,
        Some(listener) => {
            let seen = mock.authorizations.clone();
            let app = quiver_demo::http_router(mock).layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    record_authorization(&seen, request.headers());
                    next.run(request)
                },
            ));
            quiver_demo::serve_http("mock-upstream", listener, app).await?;
        }
    }
    Ok(())
}

/// The listening socket a parent passed as file descriptor `fd`.
#[cfg(unix)]
fn inherited_listener(fd: i32) -> anyhow::Result<tokio::net::TcpListener> {
    // SAFETY: `fd` is only borrowed for the `dup` below, which fails cleanly
    // (EBADF) if it is not open; this process never closes it.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let owned = borrowed
        .try_clone_to_owned()
        .with_context(|| format!("--listen-fd {fd}: not an open file descriptor"))?;
    let socket = std::net::TcpListener::from(owned);
    socket
        .set_nonblocking(true)
        .with_context(|| format!("--listen-fd {fd}"))?;
    tokio::net::TcpListener::from_std(socket)
        .with_context(|| format!("--listen-fd {fd} is not a listening TCP socket"))
}

#[cfg(not(unix))]
fn inherited_listener(fd: i32) -> anyhow::Result<tokio::net::TcpListener> {
    anyhow::bail!("--listen-fd {fd}: inherited sockets are supported on Unix only")
}

/// A client subscribed to a resource URI.
type Subscribed = (String, Peer<RoleServer>);

/// The tools, resource and prompt the test hooks add.
mod test_hooks;
use test_hooks::test_hook_tools;

#[derive(Clone)]
struct MockServer {
    id: String,
    description: String,
    tools: Arc<Mutex<Vec<Tool>>>,
    page_size: usize,
    /// Speaks MCP 2026-07-28 too (`--stateless`).
    stateless: bool,
    /// Its 2026-07-28 clients' `subscriptions/listen` streams.
    listeners: Arc<Mutex<Vec<rmcp::service::SubscriptionSink>>>,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    cancelled: Arc<std::sync::atomic::AtomicU64>,
    /// Calls of each tool this process received (`quiver_test_stats` reports them).
    calls: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    /// Calls of `quiver_test_rendezvous` that reached each meeting point
    /// (`<group>/start`, `<group>/end`), for all connections of this process.
    arrivals: Arc<tokio::sync::watch::Sender<std::collections::HashMap<String, u64>>>,
    /// HTTP requests by the SHA-256 of their `Authorization` header (`none`
    /// when absent), for all connections of this process (HTTP only).
    authorizations: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    /// Who subscribed to which test resource (`resources/subscribe`; test hooks).
    subscribed: Arc<Mutex<Vec<Subscribed>>>,
}

impl MockServer {
    fn new(server: CatalogServer, page_size: usize) -> MockServer {
        let mut tools = quiver_demo::tools_of(&server);
        tools.extend(test_hook_tools());
        MockServer {
            id: server.id,
            description: server.description,
            tools: Arc::new(Mutex::new(tools)),
            page_size,
            stateless: false,
            listeners: Arc::default(),
            peers: Arc::default(),
            cancelled: Arc::default(),
            calls: Arc::default(),
            arrivals: Arc::new(tokio::sync::watch::Sender::new(Default::default())),
            authorizations: Arc::default(),
            subscribed: Arc::default(),
        }
    }

    fn tools(&self) -> std::sync::MutexGuard<'_, Vec<Tool>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ServerHandler for MockServer {
    fn get_info(&self) -> ServerConfig {
        // One subscribable resource, `quiver-test://note`, and one prompt, `brief`.
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .build();
        quiver_demo::info(&self.id, &self.description, capabilities)
    }

    /// A 2025-11-25 server (its rendezvous asks the client mid-call), unless
    /// `--stateless`: then 2026-07-28 too, where it asks with `input_required`.
    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        use rmcp::model::ProtocolVersion;
        let newest = if self.stateless {
            ProtocolVersion::V_2026_07_28
        } else {
            ProtocolVersion::V_2025_11_25
        };
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&newest))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(
        &self,
        subscription: rmcp::service::SubscriptionContext,
    ) -> Result<(), ErrorData> {
        self.listeners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(subscription.sink().clone());
        subscription.cancelled().await;
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(
            test_hooks::resources(),
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let contents = test_hooks::read_resource(&request.uri)?;
        Ok(rmcp::model::ReadResourceResult::new(contents).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(rmcp::model::ListPromptsResult::with_all_items(
            test_hooks::prompts(),
        ))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        test_hooks::render_prompt(&request).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((request.uri, context.peer));
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(uri, _)| *uri != request.uri);
        Ok(())
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        quiver_demo::page(&self.tools(), request, self.page_size)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools().iter().any(|t| t.name == name) {
            return Err(quiver_demo::unknown_tool(&name));
        }
        *self
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.clone())
            .or_default() += 1;
        match name.as_str() {
            "quiver_test_crash" => std::process::exit(3),
            "quiver_test_sleep" => {
                let ms = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("ms"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                // Tell the caller the call has started (tests wait for this before cancelling).
                if let Some(token) = context.meta.get_progress_token() {
                    let _ = context
                        .peer
                        .notify_progress(rmcp::model::ProgressNotificationParam::new(token, 0.0))
                        .await;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = context.ct.cancelled() => {
                        self.cancelled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        return Err(ErrorData::internal_error("cancelled", None));
                    }
                }
            }
            "quiver_test_fail" => {
                let path = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("path"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let secret = std::env::var("QUIVER_TEST_SECRET").unwrap_or_default();
                let message = format!(
                    "cannot open {path}: permission denied (reading it through postgres://svc:{secret}@10.20.30.40:5432/files with token={secret}, spool /opt/upstream/spool/x1; QUIVER_TEST_SECRET={secret})"
                );
                return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
            }
            "quiver_test_stats" => {
                let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let authorizations = self
                    .authorizations
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                let stats = json!({
                    "cancelled": self.cancelled.load(std::sync::atomic::Ordering::SeqCst),
                    "calls": calls,
                    "authorization_sha256": authorizations,
                });
                return Ok(
                    CallToolResult::success(vec![ContentBlock::text(stats.to_string())]).into(),
                );
            }
            "quiver_test_add_tool" => {
                let new_name = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("added")
                    .to_string();
                if let Ok(tool) = serde_json::from_value::<Tool>(json!({
                    "name": new_name, "description": "Added at run time.", "inputSchema": {"type": "object"}
                })) {
                    self.tools().push(tool);
                }
                let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner()).clone();
                for peer in peers {
                    let _ = peer.notify_tool_list_changed().await;
                }
                let listeners = self
                    .listeners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                for sink in listeners {
                    let _ = sink.notify_tool_list_changed().await;
                }
            }
            "quiver_test_touch_resource" => {
                let uri = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("uri"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let peers: Vec<Peer<RoleServer>> = self
                    .subscribed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .filter(|(subscribed, _)| *subscribed == uri)
                    .map(|(_, peer)| peer.clone())
                    .collect();
                let told = peers.len();
                for peer in peers {
                    let params = rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone());
                    let _ = peer.notify_resource_updated(params).await;
                }
                return Ok(CallToolResult::success(vec![ContentBlock::text(
                    json!({"told": told}).to_string(),
                )])
                .into());
            }
            "quiver_test_rendezvous" if is_stateless(&context) => {
                let arguments = request.arguments.clone().unwrap_or_default();
                return Ok(ask_with_input_required(&arguments, request.input_responses));
            }
            "quiver_test_rendezvous" => {
                let arguments = request.arguments.clone().unwrap_or_default();
                let answer = self.rendezvous(&arguments, &context).await?;
                return Ok(
                    CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into(),
                );
            }
            "quiver_test_request_header" => {
                let name = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let echo = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("echo"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let from_meta = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("meta"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let value: Option<&[u8]> = if from_meta {
                    context
                        .meta
                        .get(name)
                        .and_then(Value::as_str)
                        .map(str::as_bytes)
                } else {
                    context
                        .extensions
                        .get::<axum::http::request::Parts>()
                        .and_then(|parts| parts.headers.get(name))
                        .map(|v| v.as_bytes())
                };
                let hash = value.map(|v| StubHash::of(v).to_hex());
                let mut answer = json!({"header": name, "sha256": hash});
                if echo {
                    answer["value"] = json!(value.and_then(|v| std::str::from_utf8(v).ok()));
                }
                return Ok(
                    CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into(),
                );
            }
            "quiver_test_large" => {
                let bytes = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("bytes"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                return Ok(CallToolResult::success(vec![ContentBlock::text(
                    test_hooks::numbered_lines(bytes),
                )])
                .into());
            }
            _ => {}
        }
        Ok(quiver_demo::answer(&self.id, &name, request.arguments).into())
    }
}

/// Test hooks that need more than a few lines.
impl MockServer {
    /// `quiver_test_rendezvous`: meets the other calls of its group, so the
    /// calls are in flight together while each reports progress and asks its
    /// client; answers with what the asks returned.
    #[allow(deprecated)] // logging: current in the protocol versions Quiver serves
    async fn rendezvous(
        &self,
        arguments: &serde_json::Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let text = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64).unwrap_or(0);
        let (group, tag, ask) = (text("group"), text("tag"), text("ask"));
        let (parties, steps, asks) = (number("parties"), number("steps"), number("asks"));
        self.meet(&format!("{group}/start"), parties).await?;
        for n in 1..=number("logs") {
            let log = rmcp::model::LoggingMessageNotificationParam::new(
                rmcp::model::LoggingLevel::Info,
                json!(format!("{tag} log #{n}")),
            )
            .with_logger("rendezvous");
            let _ = context.peer.notify_logging_message(log).await;
        }
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=steps {
                let mut progress =
                    rmcp::model::ProgressNotificationParam::new(token.clone(), step as f64);
                progress.total = Some(steps as f64);
                progress.message = Some(format!("{tag} {step}/{steps}"));
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        let mut answers = Vec::new();
        for n in 1..=asks {
            let question = format!("{tag} asks #{n}");
            let answer = match ask {
                "sampling" => ask_model(&context.peer, &question).await,
                "elicitation" => ask_user(&context.peer, &question).await,
                other => Err(anyhow!("unknown ask `{other}`")),
            };
            answers.push(match answer {
                Ok(said) => json!({"answered": said}),
                Err(refused) => json!({"refused": refused.to_string()}),
            });
        }
        self.meet(&format!("{group}/end"), parties).await?;
        Ok(json!({"tool": "quiver_test_rendezvous", "tag": tag, "answers": answers}))
    }

    /// Counts this call at `point` and waits (up to a minute) until `parties`
    /// calls are there.
    async fn meet(&self, point: &str, parties: u64) -> Result<(), ErrorData> {
        self.arrivals
            .send_modify(|counts| *counts.entry(point.to_string()).or_default() += 1);
        let mut arrivals = self.arrivals.subscribe();
        let all_there =
            arrivals.wait_for(|counts| counts.get(point).copied().unwrap_or(0) >= parties);
        match tokio::time::timeout(Duration::from_secs(60), all_there).await {
            Ok(Ok(_)) => Ok(()),
            _ => {
                let there = self.arrivals.borrow().get(point).copied().unwrap_or(0);
                Err(ErrorData::internal_error(
                    format!("only {there} of {parties} calls reached `{point}` within a minute"),
                    None,
                ))
            }
        }
    }
}

/// A sampling request to the client; the content it answered, as JSON text.
#[allow(deprecated)] // sampling: current in the protocol versions Quiver serves
async fn ask_model(peer: &Peer<RoleServer>, question: &str) -> anyhow::Result<String> {
    let params = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": 10
    }))?;
    let result = peer.create_message(params).await?;
    Ok(serde_json::to_string(&result.message.content)?)
}

/// Whether the request speaks MCP 2026-07-28 (no requests to the client).
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The rendezvous of a 2026-07-28 client (`asks` questions of kind `ask`,
/// no meeting): `input_required` with the questions, then, once answered,
/// what the client said, in the shape of the 2025 answer.
fn ask_with_input_required(
    arguments: &serde_json::Map<String, Value>,
    responses: Option<rmcp::model::InputResponses>,
) -> CallToolResponse {
    let tag = arguments
        .get("tag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ask = arguments
        .get("ask")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let asks = arguments.get("asks").and_then(Value::as_u64).unwrap_or(0);
    let key = |n: u64| format!("ask-{n}");
    let Some(responses) = responses.filter(|r| (1..=asks).all(|n| r.contains_key(&key(n)))) else {
        let requests: rmcp::model::InputRequests = (1..=asks)
            .filter_map(|n| {
                let question = format!("{tag} asks #{n}");
                let request = match ask {
                    "sampling" => json!({"method": "sampling/createMessage", "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
                        "maxTokens": 10}}),
                    _ => json!({"method": "elicitation/create", "params": {
                        "mode": "form", "message": question,
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
                };
                Some((key(n), serde_json::from_value(request).ok()?))
            })
            .collect();
        return rmcp::model::InputRequiredResult::new(Some(requests), Some("rendezvous".into()))
            .into();
    };
    let answers: Vec<Value> = (1..=asks)
        .map(|n| {
            // Elicitation and sampling results both carry what was said as `content`.
            json!({"answered": responses[&key(n)]["content"].to_string()})
        })
        .collect();
    let answer = json!({"tool": "quiver_test_rendezvous", "tag": tag, "answers": answers});
    CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into()
}

/// An elicitation request to the client; the content it accepted, as JSON text.
async fn ask_user(peer: &Peer<RoleServer>, question: &str) -> anyhow::Result<String> {
    let params = serde_json::from_value(json!({
        "mode": "form",
        "message": question,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    }))?;
    let result = peer.create_elicitation(params).await?;
    Ok(result.content.map(|c| c.to_string()).unwrap_or_default())
}

/// Counts one HTTP request under the SHA-256 of its `Authorization` header.
fn record_authorization(
    seen: &Mutex<std::collections::BTreeMap<String, u64>>,
    headers: &axum::http::HeaderMap,
) {
    let key = headers.get(axum::http::header::AUTHORIZATION).map_or_else(
        || "none".to_string(),
        |v| StubHash::of(v.as_bytes()).to_hex(),
    );
    *seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key)
        .or_default() += 1;
}
