//! `quiver tokens`: what a client loads up front in each mode, in tokens. The
//! cost counted is the `initialize` instructions plus the raw `tools/list`
//! response, byte for byte as the edge sends it, tokenised with cl100k and o200k.

use std::{fmt::Write as _, path::PathBuf, sync::Arc};

use anyhow::{Context as _, bail};
use clap::Args;
use futures::future::BoxFuture;
use quiver_contract::{CallOptions, Dispatch, Limits, Scripts, ToolCall, UpstreamError};
use quiver_control_plane::ManifestStore;
use quiver_edge::{EdgeConfig, Gateway, Mode, session::GatewaySession};
use quiver_executor::{
    pool::{PoolConfig, WorkerCommand, WorkerPool},
    script::{LocalScripts, ScriptRunner},
};
use quiver_proto::{catalog::Catalog, manifest::ServerEntry};
use rmcp::{ServiceExt, model::CallToolResult};
use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Arguments of `quiver tokens`.
#[derive(Args, Debug)]
pub struct TokensArgs {
    /// Catalog file to measure (livemcpbench, oslook or a plain tool list).
    #[arg(long, required_unless_present = "url")]
    catalog: Option<PathBuf>,
    /// Measure a running edge instead, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, conflicts_with = "catalog")]
    url: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Queries used to measure code mode's `search` answers.
const SAMPLE_QUERIES: &[&str] = &[
    "search the web for recent news",
    "get the weather forecast for a city",
    "create a new issue in a repository",
    "read a file from disk",
    "translate text to another language",
    "find directions between two places",
    "query a database with sql",
    "send a message to a channel",
    "get the stock price of a company",
    "take a screenshot of a web page",
];

struct Tokenizers {
    cl100k: CoreBPE,
    o200k: CoreBPE,
}

impl Tokenizers {
    fn new() -> anyhow::Result<Tokenizers> {
        Ok(Tokenizers {
            cl100k: tiktoken_rs::cl100k_base().context("loading cl100k")?,
            o200k: tiktoken_rs::o200k_base().context("loading o200k")?,
        })
    }

    fn count(&self, text: &str) -> (usize, usize) {
        (
            self.cl100k.encode_with_special_tokens(text).len(),
            self.o200k.encode_with_special_tokens(text).len(),
        )
    }
}

/// What one session loaded up front, as raw text.
struct UpFront {
    instructions: String,
    tools_list: String,
    tool_count: usize,
    searches: Vec<String>,
}

/// Runs `quiver tokens`.
pub async fn run(args: TokensArgs) -> anyhow::Result<()> {
    let tokenizers = Tokenizers::new()?;
    let mut report = json!({});
    match (&args.catalog, &args.url) {
        (Some(path), _) => {
            let catalog = Catalog::load(path, "default")?;
            let total = catalog.tool_count();
            let mut modes = Vec::new();
            for mode in Mode::ALL {
                let up = measure_catalog(&catalog, total, mode).await?;
                modes.push(mode_report(&tokenizers, mode, &up));
            }
            let mut scaling = Vec::new();
            let mut sizes: Vec<usize> = [10, 50, 100, 250, 500]
                .into_iter()
                .filter(|&n| n < total)
                .collect();
            sizes.push(total);
            for n in sizes {
                let mut row = json!({"tools": n});
                for mode in Mode::ALL {
                    let up = measure_catalog(&catalog, n, mode).await?;
                    let (cl, o) =
                        tokenizers.count(&format!("{}{}", up.instructions, up.tools_list));
                    row[mode.as_str()] = json!({"cl100k": cl, "o200k": o});
                }
                scaling.push(row);
            }
            report = json!({"source": path.display().to_string(), "tools": total, "modes": modes, "scaling": scaling});
        }
        (None, Some(url)) => {
            let mut modes = Vec::new();
            for mode in Mode::ALL {
                let up = measure_url(url, mode).await?;
                modes.push(mode_report(&tokenizers, mode, &up));
            }
            report["source"] = json!(url);
            report["modes"] = json!(modes);
        }
        (None, None) => bail!("give --catalog FILE or --url URL"),
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_tables(&report));
    }
    Ok(())
}

fn mode_report(tokenizers: &Tokenizers, mode: Mode, up: &UpFront) -> Value {
    let (instr_cl, instr_o) = tokenizers.count(&up.instructions);
    let (list_cl, list_o) = tokenizers.count(&up.tools_list);
    let mut entry = json!({
        "mode": mode.as_str(),
        "tools_listed": up.tool_count,
        "instructions": {"cl100k": instr_cl, "o200k": instr_o},
        "tools_list": {"cl100k": list_cl, "o200k": list_o},
        "up_front": {"cl100k": instr_cl + list_cl, "o200k": instr_o + list_o},
    });
    if !up.searches.is_empty() {
        let counts: Vec<(usize, usize)> = up.searches.iter().map(|s| tokenizers.count(s)).collect();
        let max_cl = counts.iter().map(|c| c.0).max().unwrap_or(0);
        let max_o = counts.iter().map(|c| c.1).max().unwrap_or(0);
        let mean_cl = counts.iter().map(|c| c.0).sum::<usize>() / counts.len();
        // What a model reads: clients show either the text content or the structured content.
        let parts: Vec<(usize, usize)> = up
            .searches
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|m| {
                let text: String = m["result"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["text"].as_str())
                    .collect();
                let structured = m["result"]["structuredContent"].to_string();
                (tokenizers.count(&text).0, tokenizers.count(&structured).0)
            })
            .collect();
        let max_text = parts.iter().map(|p| p.0).max().unwrap_or(0);
        let max_structured = parts.iter().map(|p| p.1).max().unwrap_or(0);
        entry["search_limit_5"] = json!({"queries": counts.len(), "max_cl100k": max_cl, "mean_cl100k": mean_cl, "max_o200k": max_o,
            "max_text_cl100k": max_text, "max_structured_cl100k": max_structured});
    }
    entry
}

fn render_tables(report: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Up-front cost (initialize instructions + tools/list response as sent), source: {}\n",
        report["source"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        out,
        "| mode | tools listed | cl100k | o200k |\n|---|---:|---:|---:|"
    );
    for m in report["modes"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            m["mode"].as_str().unwrap_or(""),
            m["tools_listed"],
            m["up_front"]["cl100k"],
            m["up_front"]["o200k"]
        );
    }
    for m in report["modes"].as_array().into_iter().flatten() {
        if let Some(s) = m.get("search_limit_5") {
            let _ = writeln!(
                out,
                "\nCode-mode `search` (limit 5) over {} sample queries, cl100k: whole response max {} (mean {}; o200k max {}); text content alone max {}; structuredContent alone max {}",
                s["queries"],
                s["max_cl100k"],
                s["mean_cl100k"],
                s["max_o200k"],
                s["max_text_cl100k"],
                s["max_structured_cl100k"]
            );
        }
    }
    if let Some(rows) = report["scaling"].as_array() {
        let _ = writeln!(out, "\nScaling (cl100k / o200k tokens up front):\n");
        let _ = writeln!(
            out,
            "| tools | passthrough | search | code |\n|---:|---:|---:|---:|"
        );
        for row in rows {
            let cell = |mode: &str| format!("{} / {}", row[mode]["cl100k"], row[mode]["o200k"]);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                row["tools"],
                cell("passthrough"),
                cell("search"),
                cell("code")
            );
        }
    }
    out
}

/// A dispatcher for measuring: no call ever reaches an upstream.
struct NoDispatch;

impl Dispatch for NoDispatch {
    fn call_tool(
        &self,
        call: ToolCall,
        _options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move { Err(UpstreamError::Unknown(call.server)) })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        _request: rmcp::model::ClientRequest,
        _options: CallOptions,
    ) -> BoxFuture<'a, Result<rmcp::model::ServerResult, UpstreamError>> {
        Box::pin(async move { Err(UpstreamError::Unknown(server.to_string())) })
    }
}

/// The first `limit` tools of `catalog`, in file order, as manifest entries.
fn truncated_entries(catalog: &Catalog, limit: usize) -> Vec<ServerEntry> {
    let mut left = limit;
    let mut entries = Vec::new();
    for server in &catalog.servers {
        if left == 0 {
            break;
        }
        let tools: Vec<_> = server.tools.iter().take(left).cloned().collect();
        left -= tools.len();
        entries.push(ServerEntry {
            id: server.id.clone(),
            description: server.description.clone(),
            namespace: server.id.clone(),
            tags: Vec::new(),
            group: String::new(),
            validation: Default::default(),
            features: Vec::new(),
            tools,
            findings: Default::default(),
        });
    }
    entries
}

async fn measure_catalog(catalog: &Catalog, limit: usize, mode: Mode) -> anyhow::Result<UpFront> {
    let store = ManifestStore::new();
    store.publish(truncated_entries(catalog, limit));
    // A pool that never starts a worker: `execute` is listed (and measured) but never run here.
    let mut pool_config = PoolConfig::new(WorkerCommand {
        program: std::env::current_exe()?,
        args: vec!["__worker".into()],
    });
    pool_config.min_workers = 0;
    let runner = Arc::new(ScriptRunner::new(
        WorkerPool::start(pool_config),
        Limits::default(),
    ));
    let config = EdgeConfig::default();
    config.install_search();
    let (_keep, tenants) = tokio::sync::watch::channel(Arc::default());
    let views = quiver_view::LiveViews::follow(store.subscribe(), tenants);
    let scripts = LocalScripts::new(runner, Arc::new(NoDispatch), (views.clone(), true));
    let scripts: Arc<dyn Scripts> = Arc::new(scripts);
    let gateway = Gateway::with_views(views, Arc::new(NoDispatch), Some(scripts), config);
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let session = GatewaySession::new(gateway, mode);
    let running = tokio::spawn(async move {
        if let Ok(service) = session.serve((server_read, server_write)).await {
            let _ = service.waiting().await;
        }
    });
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut exchange = async |message: Value| -> anyhow::Result<String> {
        client_write
            .write_all(format!("{message}\n").as_bytes())
            .await?;
        let Some(id) = message.get("id").cloned() else {
            return Ok(String::new());
        };
        while let Some(line) = lines.next_line().await? {
            if serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|v| v.get("id").cloned())
                == Some(id.clone())
            {
                return Ok(line);
            }
        }
        bail!("the session closed before answering")
    };
    let init = exchange(initialize_request()).await?;
    exchange(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let tools_list = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await?;
    let mut searches = Vec::new();
    if mode == Mode::Code {
        for (i, query) in SAMPLE_QUERIES.iter().enumerate() {
            let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": query, "limit": 5}}});
            searches.push(exchange(call).await?);
        }
    }
    running.abort();
    up_front(&init, tools_list, searches)
}

fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "quiver-tokens", "version": env!("CARGO_PKG_VERSION")}
    }})
}

fn up_front(init: &str, tools_list: String, searches: Vec<String>) -> anyhow::Result<UpFront> {
    let init: Value = serde_json::from_str(init).context("initialize response is not JSON")?;
    let instructions = init["result"]["instructions"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let list: Value =
        serde_json::from_str(&tools_list).context("tools/list response is not JSON")?;
    let tool_count = list["result"]["tools"].as_array().map_or(0, Vec::len);
    Ok(UpFront {
        instructions,
        tools_list,
        tool_count,
        searches,
    })
}

async fn measure_url(base: &str, mode: Mode) -> anyhow::Result<UpFront> {
    let url = format!("{}/{}", base.trim_end_matches('/'), mode.as_str());
    let client = reqwest::Client::new();
    let mut session: Option<String> = None;
    let mut post = async |message: Value| -> anyhow::Result<String> {
        let mut request = client
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2025-11-25")
            .body(message.to_string());
        if let Some(id) = &session {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("POST {url}"))?;
        if let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            session = Some(id.to_string());
        }
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("POST {url}: HTTP {status}: {body}");
        }
        let Some(id) = message.get("id") else {
            return Ok(String::new());
        };
        let candidates: Vec<&str> = if body.trim_start().starts_with('{') {
            vec![body.trim()]
        } else {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect()
        };
        candidates
            .into_iter()
            .find(|c| {
                serde_json::from_str::<Value>(c)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .as_ref()
                    == Some(id)
            })
            .map(str::to_string)
            .with_context(|| format!("no response to request {id} from {url}"))
    };
    let init = post(initialize_request()).await?;
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let tools_list = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await?;
    let mut searches = Vec::new();
    if mode == Mode::Code {
        for (i, query) in SAMPLE_QUERIES.iter().enumerate() {
            let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": query, "limit": 5}}});
            searches.push(post(call).await?);
        }
    }
    up_front(&init, tools_list, searches)
}
