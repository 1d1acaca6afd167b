//! Fixture upstream for the MCP conformance run: an MCP server that implements every
//! tool, resource, prompt and utility the official conformance suite's server
//! scenarios call, so the suite can be pointed at Quiver's edge (fronting this server)
//! or at this server directly. It is test equipment: no auth, no persistence.

mod media;
mod prompts;
mod resources;
mod server;
mod stateless;
mod tasks;
mod tools;

use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use rmcp::{
    ServiceExt,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use crate::server::ConformanceServer;

/// Serve the conformance fixture over stdio (default) or Streamable HTTP.
#[derive(Debug, Parser)]
#[command(name = "quiver-conformance-upstream", version)]
struct Cli {
    /// Serve MCP over stdin/stdout. This is the default when --listen is absent.
    #[arg(long, conflicts_with = "listen")]
    stdio: bool,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead of stdio. Port 0 picks a
    /// free port; the bound address is printed on stdout as `listening on URL`.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // stdout is the protocol channel in stdio mode, so logs always go to stderr.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();

    let cli = Cli::parse();
    match cli.listen {
        Some(addr) => serve_http(addr).await,
        None => serve_stdio().await,
    }
}

async fn serve_stdio() -> anyhow::Result<()> {
    let running = ConformanceServer::new()
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the MCP session on stdio")?;
    running.waiting().await.context("serving MCP on stdio")?;
    Ok(())
}

async fn serve_http(addr: SocketAddr) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    // The default config keeps sessions (the suite's SSE scenarios need a session id),
    // sends SSE priming events with a retry hint, and only accepts loopback `Host`
    // headers, which is what the DNS-rebinding scenario checks for.
    let config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown.clone());
    let service = StreamableHttpService::new(
        || Ok(ConformanceServer::new()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding --listen {addr}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    println!("listening on http://{bound}/mcp");
    tracing::info!(%bound, "serving MCP Streamable HTTP at /mcp");

    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            // A failed signal handler only means we cannot shut down gracefully.
            let _ = tokio::signal::ctrl_c().await;
            shutdown.cancel();
        })
        .await
        .context("serving HTTP")?;
    Ok(())
}
