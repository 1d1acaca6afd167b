//! What "ready" means for each role, as checks for `quiver_telemetry::Health`,
//! and the admin listener every role can open (`--admin-listen`).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use quiver_control_plane::ManifestStore;
use quiver_executor::pool::WorkerPool;
use quiver_telemetry::{Health, NotReady, health::AdminListener};
use tokio_util::sync::CancellationToken;

/// Ready once a manifest arrived (version 1 or later).
pub fn manifest_held(store: Arc<ManifestStore>) -> impl Fn() -> Result<String, NotReady> {
    move || {
        let manifest = store.current();
        if manifest.version == 0 {
            Err("no manifest yet (the control plane has not answered)".into())
        } else {
            Ok(format!(
                "version {}, {} tools, stub hash {}",
                manifest.version,
                manifest.tools.len(),
                manifest.stub_hash
            ))
        }
    }
}

/// Ready while some sandbox worker is warm or running.
pub fn workers_warm(pool: Arc<WorkerPool>) -> impl Fn() -> Result<String, NotReady> {
    move || {
        let stats = pool.stats();
        if stats.idle + stats.running == 0 {
            Err("no sandbox worker is warm".into())
        } else {
            Ok(format!("{} idle, {} running", stats.idle, stats.running))
        }
    }
}

/// Ready while the executor whose admin listener is `admin` answers its own
/// `/readyz` with 200; polled every 2 s in the background (checks must not
/// block), so the answer is at most that old.
pub fn remote_executor_ready(
    admin: String,
    shutdown: CancellationToken,
) -> impl Fn() -> Result<String, NotReady> {
    let last: Arc<Mutex<Result<String, NotReady>>> = Arc::new(Mutex::new(Err(format!(
        "executor at {admin} not asked yet"
    )
    .into())));
    let state = last.clone();
    tokio::spawn(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_default();
        let url = format!("{admin}/readyz");
        loop {
            let answer = match client.get(&url).send().await {
                Ok(response) if response.status().is_success() => {
                    Ok(format!("executor at {admin} ready"))
                }
                Ok(response) => Err(format!(
                    "executor at {admin} not ready: {}",
                    response.text().await.unwrap_or_default()
                )
                .into()),
                Err(e) => Err(format!("executor at {admin} unreachable: {e}").into()),
            };
            *state.lock().unwrap_or_else(|p| p.into_inner()) = answer;
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
        }
    });
    move || last.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Opens `/healthz`, `/readyz` and `/metrics` on `addr` when given; the
/// bound address as `http://…`.
pub async fn open_admin(
    addr: Option<SocketAddr>,
    health: &Health,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<String>> {
    let Some(addr) = addr else { return Ok(None) };
    let listener = AdminListener::bind(addr, health.clone())
        .await
        .with_context(|| format!("--admin-listen: cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    listener.spawn(shutdown.clone());
    Ok(Some(format!("http://{bound}")))
}

/// The banner's admin part: `; admin http://…` (empty without one).
pub fn admin_banner(admin: &Option<String>) -> String {
    admin
        .as_ref()
        .map(|url| format!("; admin {url}; metrics {url}/metrics"))
        .unwrap_or_default()
}

/// Where an edge's (or `quiver dev`'s) Prometheus scrape target is, for its
/// startup line when it has no admin listener: the MCP port serves
/// `/metrics` only when it authenticates nobody (the metrics name tenants).
pub fn edge_metrics_banner(
    admin: &Option<String>,
    mcp_base: &str,
    auth: quiver_edge::auth::AuthMode,
) -> String {
    match (admin, auth) {
        (Some(_), _) => String::new(),
        (None, quiver_edge::auth::AuthMode::None) => format!("; metrics {mcp_base}/metrics"),
        (None, _) => {
            "; metrics: none (the MCP port keeps them from clients that authenticate; serve them with --admin-listen ADDR)".to_string()
        }
    }
}
