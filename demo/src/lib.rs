//! The demo upstream `quiver mock-upstream` runs: one server of a catalogue
//! file served as a real MCP server (stdio or Streamable HTTP), answering
//! every call with deterministic JSON that names the server, the tool and
//! the arguments. `quiver dev` without upstreams serves the built-in demo
//! catalogue ([`CATALOG`]) through it, one process per server.
//!
//! The pieces are public so Quiver's test kit can build its mock upstream
//! (with fault-injection tools) on the same listing and answers.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
};

use quiver_proto::catalog::{Catalog, CatalogError, CatalogServer};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

/// The demo catalogue: a few small servers of our own, enough to try
/// passthrough, search and code mode.
pub const CATALOG: &str = include_str!("catalog.json");

/// Path-like name used in messages for the embedded catalogue.
pub const ORIGIN: &str = "<built-in demo catalog>";

/// Why a server could not be served.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The catalogue could not be read or parsed.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The catalogue has no servers.
    #[error("the catalog has no servers")]
    Empty,
    /// No server has the id asked for.
    #[error("no server `{wanted}` in the catalog; it has: {some}")]
    NoSuchServer {
        /// The id asked for.
        wanted: String,
        /// The first ids it has, comma-separated.
        some: String,
    },
    /// Starting or running the MCP service failed.
    #[error("{what}: {source}")]
    Serve {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What to serve and where: the flags `quiver mock-upstream` and the test
/// kit's mock share.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Catalog file (livemcpbench, oslook, or a plain list of tools).
    #[arg(long, required_unless_present = "demo")]
    pub catalog: Option<PathBuf>,
    /// Serve the built-in demo catalog instead of a file.
    #[arg(long, conflicts_with = "catalog")]
    pub demo: bool,
    /// Which server of the catalog to serve (default: the first; a plain list is `default`).
    #[arg(long)]
    pub server: Option<String>,
    /// Serve MCP on stdin/stdout (the default).
    #[arg(long, conflicts_with = "listen")]
    pub stdio: bool,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Tools per `tools/list` page (pagination is always exercised above this).
    #[arg(long, default_value_t = 100)]
    pub page_size: usize,
}

impl ServeArgs {
    /// The server these flags name.
    pub fn load(&self) -> Result<CatalogServer, DemoError> {
        load_server(self.catalog.as_deref(), self.server.as_deref())
    }
}

/// The built-in demo catalogue, parsed.
pub fn demo_catalog() -> Result<Catalog, DemoError> {
    Ok(Catalog::parse(CATALOG, ORIGIN, "demo")?)
}

/// The server `wanted` of `catalog` file (of the demo catalogue without a
/// file); the first one when `wanted` is absent. With both a file and an id,
/// only that server is built (hundreds of mocks of a large file hold one
/// server each, not the file).
pub fn load_server(
    catalog: Option<&Path>,
    wanted: Option<&str>,
) -> Result<CatalogServer, DemoError> {
    if let (Some(path), Some(id)) = (catalog, wanted)
        && let Some(server) = Catalog::load_server(path, "default", id)?
    {
        return Ok(server);
    }
    let catalog = match catalog {
        Some(path) => Catalog::load(path, "default")?,
        None => demo_catalog()?,
    };
    select_server(&catalog, wanted)
}

/// The server `wanted` of `catalog`, or its first.
pub fn select_server(catalog: &Catalog, wanted: Option<&str>) -> Result<CatalogServer, DemoError> {
    let Some(id) = wanted else {
        return catalog.servers.first().cloned().ok_or(DemoError::Empty);
    };
    if let Some(server) = catalog.servers.iter().find(|s| s.id == id) {
        return Ok(server.clone());
    }
    let ids: Vec<&str> = catalog
        .servers
        .iter()
        .map(|s| s.id.as_str())
        .take(20)
        .collect();
    Err(DemoError::NoSuchServer {
        wanted: id.to_string(),
        some: ids.join(", "),
    })
}

/// `server`'s tool definitions as MCP tools (a definition MCP cannot read is left out).
pub fn tools_of(server: &CatalogServer) -> Vec<Tool> {
    server
        .tools
        .iter()
        .filter_map(|def| {
            serde_json::to_value(def)
                .ok()
                .and_then(|v| serde_json::from_value(v).ok())
        })
        .collect()
}

/// One `tools/list` page of `tools`: `page_size` from the request's cursor
/// (an index), with the next cursor while tools remain.
pub fn page(
    tools: &[Tool],
    request: Option<PaginatedRequestParams>,
    page_size: usize,
) -> Result<ListToolsResult, ErrorData> {
    let start = match request.and_then(|r| r.cursor) {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| ErrorData::invalid_params(format!("bad cursor `{cursor}`"), None))?,
    };
    let end = start.saturating_add(page_size.max(1)).min(tools.len());
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

/// The refusal of a call to a tool the server does not have.
pub fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown tool `{name}`"), None)
}

/// The deterministic answer of `server` to a call of `tool`.
pub fn answer(server: &str, tool: &str, arguments: Option<JsonObject>) -> CallToolResult {
    let answer = json!({
        "server": server,
        "tool": tool,
        "arguments": arguments.map(Value::Object).unwrap_or_else(|| json!({})),
    });
    CallToolResult::success(vec![ContentBlock::text(answer.to_string())])
}

/// What a demo server says of itself: `capabilities`, its id as the
/// implementation's name, its description as the instructions.
pub fn info(server: &str, description: &str, mut capabilities: ServerCapabilities) -> ServerConfig {
    if let Some(tools) = capabilities.tools.as_mut() {
        tools.list_changed = Some(true);
    }
    ServerConfig::new(capabilities)
        .with_server_info(Implementation::new(
            server.to_string(),
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(description.to_string())
}

/// The demo upstream: tools only, answers naming what was called.
#[derive(Clone)]
pub struct DemoServer {
    id: String,
    description: String,
    tools: Arc<Vec<Tool>>,
    page_size: usize,
}

impl DemoServer {
    /// Serves `server`, `page_size` tools per `tools/list` page.
    pub fn new(server: &CatalogServer, page_size: usize) -> DemoServer {
        DemoServer {
            id: server.id.clone(),
            description: server.description.clone(),
            tools: Arc::new(tools_of(server)),
            page_size,
        }
    }
}

impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        info(
            &self.id,
            &self.description,
            ServerCapabilities::builder().enable_tools().build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        page(&self.tools, request, self.page_size)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(unknown_tool(&request.name));
        }
        Ok(answer(&self.id, &request.name, request.arguments).into())
    }
}

/// Serves `service` on stdin/stdout until its client goes away.
pub async fn serve_stdio<S: ServerHandler>(service: S) -> Result<(), DemoError> {
    let running = service
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| DemoError::Serve {
            what: "starting the stdio server",
            source: Box::new(e),
        })?;
    running.waiting().await.map_err(|e| DemoError::Serve {
        what: "serving stdio",
        source: Box::new(e),
    })?;
    Ok(())
}

/// The Streamable HTTP router of `service` at `/mcp` (any `Host`: a demo
/// and test server on loopback).
pub fn http_router<S: ServerHandler + Clone + Send + Sync + 'static>(service: S) -> axum::Router {
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(service.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Serves `app` on `listener` (no Nagle delay on its connections) until the
/// process ends, after printing `<name> listening on http://ADDR/mcp`.
pub async fn serve_http(
    name: &str,
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> Result<(), DemoError> {
    let bound = listener.local_addr().map_err(|e| DemoError::Serve {
        what: "reading the bound address",
        source: Box::new(e),
    })?;
    println!("{name} listening on http://{bound}/mcp");
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, app)
        .await
        .map_err(|e| DemoError::Serve {
            what: "serving HTTP",
            source: Box::new(e),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn pages_follow_their_cursors_to_the_end() {
        let tools: Vec<Tool> = (0..5).map(|i| tool(&format!("t{i}"))).collect();
        let first = page(&tools, None, 2).unwrap();
        assert_eq!(first.tools.len(), 2);
        let mut request = PaginatedRequestParams::default();
        request.cursor = first.next_cursor.clone();
        let second = page(&tools, Some(request), 2).unwrap();
        assert_eq!(second.tools[0].name, "t2");
        let mut request = PaginatedRequestParams::default();
        request.cursor = Some("4".into());
        let last = page(&tools, Some(request), 2).unwrap();
        assert_eq!((last.tools.len(), last.next_cursor), (1, None));
        let mut request = PaginatedRequestParams::default();
        request.cursor = Some("x".into());
        assert!(page(&tools, Some(request), 2).is_err());
    }

    #[test]
    fn every_demo_server_can_be_chosen_and_a_missing_one_is_named() {
        let catalog = demo_catalog().unwrap();
        assert!(catalog.servers.len() > 1);
        for server in &catalog.servers {
            let chosen = load_server(None, Some(&server.id)).unwrap();
            assert_eq!(&chosen, server);
            assert_eq!(tools_of(&chosen).len(), server.tools.len());
        }
        let error = load_server(None, Some("nope")).unwrap_err().to_string();
        assert!(
            error.contains("nope") && error.contains(&catalog.servers[0].id),
            "{error}"
        );
    }

    #[test]
    fn an_answer_names_the_server_tool_and_arguments() {
        let mut arguments = JsonObject::new();
        arguments.insert("city".into(), json!("Oslo"));
        let result = answer("weather", "forecast", Some(arguments));
        let text = serde_json::to_value(&result.content[0]).unwrap()["text"].clone();
        let said: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
        assert_eq!(
            said,
            json!({"server": "weather", "tool": "forecast", "arguments": {"city": "Oslo"}})
        );
    }
}
