//! `quiver dev`: the embedded default. A single-process control plane
//! (discovery + manifest store), an in-process executor holding the upstream
//! connections, and the edge, over a config file, a catalog, or the demo.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Args;
use quiver_control_plane::{Discovery, ManifestStore};
use quiver_edge::{Gateway, Mode};
use quiver_executor::{
    LocalExecutor,
    pool::{PoolConfig, WorkerCommand, WorkerPool},
    script::{LocalScripts, ScriptRunner, Scripts},
    worker::protocol::Limits,
};
use quiver_proto::catalog::Catalog;
use quiver_upstream::{UpstreamConfig, UpstreamSet};
use tokio_util::sync::CancellationToken;

use super::logging;
use crate::{config::DevConfig, demo};

/// Arguments of `quiver dev`.
#[derive(Args, Debug)]
pub struct DevArgs {
    /// Configuration file (see deploy/quiver.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Serve every server of this catalog file as a mock upstream.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Listen address (overrides the config), e.g. 127.0.0.1:8080; port 0 picks a free one.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Mode served at /mcp (overrides the config).
    #[arg(long)]
    mode: Option<Mode>,
    /// Serve one MCP session on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
}

/// Runs until Ctrl-C / SIGTERM (or, with `--stdio`, until the client disconnects).
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    logging::init("info,rmcp=warn");
    let mut config = match &args.config {
        Some(path) => DevConfig::load(path)?,
        None => DevConfig::default(),
    };
    if let Some(listen) = args.listen {
        config.edge.listen = listen;
    }
    if let Some(mode) = args.mode {
        config.edge.default_mode = mode;
    }
    let exe = std::env::current_exe().context("finding the quiver binary to run mock upstreams")?;
    let exe = exe.to_string_lossy().into_owned();
    if let Some(path) = &args.catalog {
        let path = std::fs::canonicalize(path).with_context(|| format!("reading catalog {}", path.display()))?;
        let catalog = Catalog::load(&path, "default")?;
        let file = path.to_string_lossy().into_owned();
        config.upstreams.extend(catalog.servers.iter().map(|server| {
            let mut upstream = UpstreamConfig::stdio(
                server.id.clone(),
                exe.clone(),
                vec!["mock-upstream".into(), "--catalog".into(), file.clone(), "--server".into(), server.id.clone(), "--stdio".into()],
            );
            upstream.description = Some(server.description.clone());
            upstream
        }));
    }
    let using_demo = config.upstreams.is_empty();
    if using_demo {
        let catalog = Catalog::parse(demo::CATALOG, demo::ORIGIN, "demo")?;
        config.upstreams.extend(catalog.servers.iter().map(|server| {
            let mut upstream = UpstreamConfig::stdio(
                server.id.clone(),
                exe.clone(),
                vec!["mock-upstream".into(), "--demo".into(), "--server".into(), server.id.clone(), "--stdio".into()],
            );
            upstream.description = Some(server.description.clone());
            upstream
        }));
    }
    config.validate()?;
    if let Some(tls) = &config.edge.tls {
        // Fail before anything starts, naming the file and key.
        quiver_edge::tls::acceptor(tls)?;
    }

    let shutdown = CancellationToken::new();
    let upstreams = Arc::new(UpstreamSet::new(config.upstreams.clone()));
    let store = Arc::new(ManifestStore::new());
    let discovery = Discovery::spawn(upstreams.clone(), store.clone(), shutdown.clone());
    let first_round_limit = config.upstreams.iter().map(|u| u.connect_timeout()).max().unwrap_or_default() + Duration::from_secs(5);
    if tokio::time::timeout(first_round_limit, discovery.first_round()).await.is_err() {
        tracing::warn!("some upstreams are still connecting; serving what is ready");
    }
    let executor = Arc::new(LocalExecutor::new(upstreams.clone()));
    let command = WorkerCommand { program: std::env::current_exe().context("finding the quiver binary for workers")?, args: vec!["__worker".into()] };
    let pool = WorkerPool::start(PoolConfig::new(command));
    if let Err(e) = pool.warm_up().await {
        tracing::warn!("sandbox workers are not starting ({e}); execute will report errors");
    }
    let runner = Arc::new(ScriptRunner::new(pool.clone(), Limits::default()));
    let scripts: Arc<dyn Scripts> = Arc::new(LocalScripts::new(runner, executor.clone()));
    let gateway = Gateway::with_scripts(store.subscribe(), executor, Some(scripts), config.edge.clone());
    let manifest = store.current();
    let down: Vec<String> = upstreams.statuses().into_iter().filter(|s| s.state != "connected").map(|s| s.id).collect();
    if !down.is_empty() {
        tracing::warn!("upstreams not reachable yet (retrying with backoff): {}", down.join(", "));
    }

    let result = if args.stdio {
        eprintln!(
            "quiver dev: serving {} tools from {} upstreams on stdio ({} mode)",
            manifest.tools.len(),
            manifest.servers.len(),
            config.edge.default_mode
        );
        quiver_edge::stdio::serve_stdio(gateway, config.edge.default_mode).await
    } else {
        let listener = tokio::net::TcpListener::bind(config.edge.listen)
            .await
            .with_context(|| format!("edge.listen: cannot listen on {}", config.edge.listen))?;
        let bound = listener.local_addr()?;
        let scheme = if config.edge.tls.is_some() { "https" } else { "http" };
        println!(
            "quiver dev: serving {} tools from {} upstreams at {scheme}://{bound}/mcp ({} mode); also /mcp/passthrough /mcp/search /mcp/code{}",
            manifest.tools.len(),
            manifest.servers.len(),
            config.edge.default_mode,
            if using_demo { " [built-in demo catalog]" } else { "" },
        );
        let status_upstreams = upstreams.clone();
        let status_pool = pool.clone();
        let status: quiver_edge::http::StatusProvider = Arc::new(move || {
            serde_json::json!({"upstreams": status_upstreams.statuses(), "workers": status_pool.stats()})
        });
        let serve_shutdown = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            serve_shutdown.cancel();
        });
        quiver_edge::http::serve(gateway, listener, shutdown.clone(), Some(status)).await
    };
    shutdown.cancel();
    pool.shutdown();
    upstreams.shutdown().await;
    result
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
