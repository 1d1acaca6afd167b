//! What "ready" means for each role, as checks for `quiver_telemetry::Health`,
//! and the admin listener every role can open (`--admin-listen`).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use quiver_control_plane::ManifestStore;
use quiver_executor::pool::{PoolStats, WorkerPool};
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

/// How long a pool that has had workers may have none warm (one retired
/// after its last use, its replacement starting) and still be ready: a
/// caller meanwhile starts a worker of its own.
const WORKER_GAP: Duration = Duration::from_secs(5);

/// Ready while some sandbox worker is warm or running, or was within
/// [`WORKER_GAP`]; not before the first one started.
pub fn workers_warm(pool: Arc<WorkerPool>) -> impl Fn() -> Result<String, NotReady> {
    let empty_since = Mutex::new(None);
    move || {
        let mut empty_since = empty_since.lock().unwrap_or_else(|p| p.into_inner());
        warm_verdict(&pool.stats(), &mut empty_since, Instant::now())
    }
}

/// The verdict on `stats` at `now`; `empty_since` remembers when the pool
/// was last seen with no worker.
fn warm_verdict(
    stats: &PoolStats,
    empty_since: &mut Option<Instant>,
    now: Instant,
) -> Result<String, NotReady> {
    if stats.idle + stats.running > 0 {
        *empty_since = None;
        return Ok(format!("{} idle, {} running", stats.idle, stats.running));
    }
    if stats.spawned == 0 {
        return Err("no sandbox worker is warm".into());
    }
    let since = *empty_since.get_or_insert(now);
    let gap = now.saturating_duration_since(since);
    if gap < WORKER_GAP {
        Ok(format!(
            "replacing a retired worker ({} ms without one)",
            gap.as_millis()
        ))
    } else {
        Err(format!("no sandbox worker has been warm for {} s", gap.as_secs()).into())
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

/// Opens `/healthz`, `/readyz` and `/metrics` on `addr` when given; where
/// others reach it, as `http://…`: the bound address, or, bound to every
/// interface (`0.0.0.0`, `::`), the host of `advertise` (this node's
/// `host:port` for its peers) with the bound port.
pub async fn open_admin(
    addr: Option<SocketAddr>,
    advertise: Option<&str>,
    health: &Health,
    shutdown: &CancellationToken,
) -> anyhow::Result<Option<String>> {
    let Some(addr) = addr else { return Ok(None) };
    let listener = AdminListener::bind(addr, health.clone())
        .await
        .with_context(|| format!("--admin-listen: cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    listener.spawn(shutdown.clone());
    Ok(Some(reachable_admin(bound, advertise)))
}

/// The admin URL for `bound`, with `advertise`'s host in place of an
/// unspecified address.
fn reachable_admin(bound: SocketAddr, advertise: Option<&str>) -> String {
    let host = advertise
        .filter(|_| bound.ip().is_unspecified())
        .map(|advertise| {
            advertise
                .split_once("://")
                .map_or(advertise, |(_, rest)| rest)
        })
        .and_then(|authority| authority.rsplit_once(':').map(|(host, _)| host))
        .filter(|host| !host.is_empty());
    match host {
        Some(host) => format!("http://{host}:{}", bound.port()),
        None => format!("http://{bound}"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(idle: usize, running: usize, spawned: usize) -> PoolStats {
        PoolStats {
            idle,
            running,
            waiting: 0,
            spawned,
            retired: 0,
        }
    }

    #[test]
    fn a_pool_replacing_a_retired_worker_stays_ready_for_a_while_but_not_forever() {
        let start = Instant::now();
        let mut since = None;
        assert!(
            warm_verdict(&pool(0, 0, 0), &mut since, start).is_err(),
            "not before the first worker"
        );
        assert!(warm_verdict(&pool(1, 0, 1), &mut since, start).is_ok());
        // The only worker retired after its last use; its replacement starts.
        let gap = warm_verdict(&pool(0, 0, 1), &mut since, start).expect("ready while replacing");
        assert!(gap.contains("replacing"), "{gap}");
        assert!(warm_verdict(&pool(0, 0, 1), &mut since, start + WORKER_GAP / 2).is_ok());
        let stuck = warm_verdict(&pool(0, 0, 1), &mut since, start + WORKER_GAP).unwrap_err();
        assert!(
            stuck.reason.contains("no sandbox worker"),
            "{}",
            stuck.reason
        );
        // A warm worker again resets the clock.
        assert!(warm_verdict(&pool(0, 1, 2), &mut since, start + WORKER_GAP * 2).is_ok());
        assert!(warm_verdict(&pool(0, 0, 2), &mut since, start + WORKER_GAP * 2).is_ok());
    }

    #[test]
    fn an_admin_listener_on_every_interface_is_reached_at_the_advertised_host() {
        let any = "0.0.0.0:9090".parse().unwrap();
        assert_eq!(
            reachable_admin(any, Some("edge1:8080")),
            "http://edge1:9090"
        );
        assert_eq!(
            reachable_admin(any, Some("http://10.0.0.7:8080")),
            "http://10.0.0.7:9090"
        );
        assert_eq!(
            reachable_admin("[::]:9090".parse().unwrap(), Some("[fd00::7]:7070")),
            "http://[fd00::7]:9090"
        );
        assert_eq!(reachable_admin(any, None), "http://0.0.0.0:9090");
        let loopback = "127.0.0.1:9601".parse().unwrap();
        assert_eq!(
            reachable_admin(loopback, Some("edge1:8080")),
            "http://127.0.0.1:9601"
        );
    }
}
