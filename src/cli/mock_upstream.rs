//! `quiver mock-upstream`: serves one server of a catalog file as a real MCP
//! server (stdio or Streamable HTTP). A call answers with deterministic JSON
//! naming the server, the tool and the arguments. `--test-hooks` adds tools the
//! integration tests use to crash, hang or change the tool list on purpose.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context as _, bail};
use clap::Args;
use quiver_proto::catalog::{Catalog, CatalogServer};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::{Peer, RequestContext},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

use super::logging;
use crate::demo;

/// Arguments of `quiver mock-upstream`.
#[derive(Args, Debug)]
pub struct MockUpstreamArgs {
    /// Catalog file (livemcpbench, oslook, or a plain list of tools).
    #[arg(long, required_unless_present = "demo")]
    catalog: Option<PathBuf>,
    /// Serve the built-in demo catalog instead of a file.
    #[arg(long, conflicts_with = "catalog")]
    demo: bool,
    /// Which server of the catalog to serve (default: the first; a plain list is `default`).
    #[arg(long)]
    server: Option<String>,
    /// Serve MCP on stdin/stdout (the default).
    #[arg(long, conflicts_with = "listen")]
    stdio: bool,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Tools per `tools/list` page (pagination is always exercised above this).
    #[arg(long, default_value_t = 100)]
    page_size: usize,
    /// Add the test-only tools `quiver_test_crash`, `quiver_test_sleep` and `quiver_test_add_tool`.
    #[arg(long, hide = true)]
    test_hooks: bool,
}

/// Runs the mock upstream until its client goes away.
pub async fn run(args: MockUpstreamArgs) -> anyhow::Result<()> {
    logging::init("warn");
    let catalog = match (&args.catalog, args.demo) {
        (Some(path), _) => Catalog::load(path, "default")?,
        (None, _) => Catalog::parse(demo::CATALOG, demo::ORIGIN, "demo")?,
    };
    let server = select_server(&catalog, args.server.as_deref())?;
    let mock = MockServer::new(server, args.page_size.max(1), args.test_hooks);
    match args.listen {
        None => {
            let running = mock
                .serve(rmcp::transport::stdio())
                .await
                .context("starting the stdio server")?;
            running.waiting().await.context("serving stdio")?;
        }
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let bound = listener.local_addr()?;
            let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
            let service = StreamableHttpService::new(
                move || Ok(mock.clone()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            println!("mock-upstream listening on http://{bound}/mcp");
            axum::serve(listener, app).await.context("serving HTTP")?;
        }
    }
    Ok(())
}

fn select_server(catalog: &Catalog, wanted: Option<&str>) -> anyhow::Result<CatalogServer> {
    match wanted {
        None => catalog
            .servers
            .first()
            .cloned()
            .context("the catalog has no servers"),
        Some(id) => match catalog.servers.iter().find(|s| s.id == id) {
            Some(s) => Ok(s.clone()),
            None => {
                let ids: Vec<&str> = catalog
                    .servers
                    .iter()
                    .map(|s| s.id.as_str())
                    .take(20)
                    .collect();
                bail!(
                    "no server `{id}` in the catalog; it has: {}",
                    ids.join(", ")
                )
            }
        },
    }
}

#[derive(Clone)]
struct MockServer {
    id: String,
    description: String,
    tools: Arc<Mutex<Vec<Tool>>>,
    page_size: usize,
    test_hooks: bool,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    cancelled: Arc<std::sync::atomic::AtomicU64>,
}

impl MockServer {
    fn new(server: CatalogServer, page_size: usize, test_hooks: bool) -> MockServer {
        let mut tools: Vec<Tool> = server
            .tools
            .iter()
            .filter_map(|def| {
                serde_json::to_value(def)
                    .ok()
                    .and_then(|v| serde_json::from_value(v).ok())
            })
            .collect();
        if test_hooks {
            tools.extend(test_hook_tools());
        }
        MockServer {
            id: server.id,
            description: server.description,
            tools: Arc::new(Mutex::new(tools)),
            page_size,
            test_hooks,
            peers: Arc::default(),
            cancelled: Arc::default(),
        }
    }

    fn tools(&self) -> std::sync::MutexGuard<'_, Vec<Tool>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn test_hook_tools() -> Vec<Tool> {
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
        tool("quiver_test_stats", "Counters of what this server saw (tests only).", json!({"type": "object"})),
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
    ]
    .into_iter()
    .flatten()
    .collect()
}

impl ServerHandler for MockServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(true);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.id.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.description.clone())
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
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| ErrorData::invalid_params(format!("bad cursor `{cursor}`"), None))?,
        };
        let tools = self.tools();
        let end = (start + self.page_size).min(tools.len());
        let page = tools
            .get(start..end)
            .map(<[Tool]>::to_vec)
            .unwrap_or_default();
        let mut result = ListToolsResult::with_all_items(page);
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools().iter().any(|t| t.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            ));
        }
        if self.test_hooks {
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
                            .notify_progress(rmcp::model::ProgressNotificationParam::new(
                                token, 0.0,
                            ))
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
                    let stats = json!({"cancelled": self.cancelled.load(std::sync::atomic::Ordering::SeqCst)});
                    return Ok(CallToolResult::success(vec![ContentBlock::text(
                        stats.to_string(),
                    )])
                    .into());
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
                }
                _ => {}
            }
        }
        let answer = json!({
            "server": self.id,
            "tool": name,
            "arguments": request.arguments.map(Value::Object).unwrap_or_else(|| json!({})),
        });
        Ok(CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into())
    }
}
