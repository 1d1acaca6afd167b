//! `quiver mock-upstream`: the demo upstream. Serves one server of a
//! catalogue file (or of the built-in demo catalogue) as a real MCP server,
//! over stdio or Streamable HTTP; a call answers with deterministic JSON
//! naming the server, the tool and the arguments. `quiver dev` without
//! upstreams runs one per demo server. Quiver's own tests use the test kit's
//! mock instead (`quiver-test-kit mock-upstream`), which adds tools that
//! crash, hang or answer at length on purpose.

use std::{net::SocketAddr, path::PathBuf};

use anyhow::Context as _;
use clap::Args;
use quiver_demo::DemoServer;

use super::logging;

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
}

/// Runs the demo upstream until its client goes away.
pub async fn run(args: MockUpstreamArgs) -> anyhow::Result<()> {
    let _telemetry = logging::init("mock-upstream", &Default::default(), "warn")?;
    let server = quiver_demo::load_server(args.catalog.as_deref(), args.server.as_deref())?;
    let demo = DemoServer::new(&server, args.page_size);
    match args.listen {
        None => quiver_demo::serve_stdio(demo).await?,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            quiver_demo::serve_http("mock-upstream", listener, quiver_demo::http_router(demo))
                .await?;
        }
    }
    Ok(())
}
