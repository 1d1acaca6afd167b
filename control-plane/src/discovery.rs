//! Discovery: lists every upstream's tools at start, on `tools/list_changed`, on
//! an interval and on demand, and publishes a new manifest version when anything
//! changed. An upstream that cannot be reached is retried with backoff and keeps
//! its last known tools; it never holds up the others.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use quiver_proto::manifest::ServerEntry;
use quiver_upstream::{Upstream, UpstreamEvent, UpstreamSet};
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::manifest_store::ManifestStore;

const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Runs discovery for a set of upstreams.
pub struct Discovery {
    upstreams: Arc<UpstreamSet>,
    store: Arc<ManifestStore>,
    entries: Mutex<BTreeMap<String, ServerEntry>>,
    refresh: BTreeMap<String, Arc<Notify>>,
    attempted: watch::Sender<usize>,
    dirty: Notify,
}

impl Discovery {
    /// Starts discovery tasks for every upstream; they stop when `shutdown` is cancelled.
    pub fn spawn(
        upstreams: Arc<UpstreamSet>,
        store: Arc<ManifestStore>,
        shutdown: CancellationToken,
    ) -> Arc<Discovery> {
        let refresh = upstreams
            .iter()
            .map(|u| (u.id().to_string(), Arc::new(Notify::new())))
            .collect();
        let (attempted, _) = watch::channel(0);
        let discovery = Arc::new(Discovery {
            upstreams: upstreams.clone(),
            store,
            entries: Mutex::new(BTreeMap::new()),
            refresh,
            attempted,
            dirty: Notify::new(),
        });
        for upstream in upstreams.iter() {
            let d = discovery.clone();
            let u = upstream.clone();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = d.watch_upstream(u) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
        let d = discovery.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = d.publish_loop() => {}
                () = shutdown.cancelled() => {}
            }
        });
        discovery
    }

    /// Resolves once every upstream has been tried at least once (successfully or not)
    /// and the result is published.
    pub async fn first_round(&self) {
        let total = self.upstreams.len();
        let mut rx = self.attempted.subscribe();
        let _ = rx.wait_for(|n| *n >= total).await;
        self.publish_now();
    }

    /// Asks for an immediate re-list of one upstream, or of all.
    pub fn refresh(&self, id: Option<&str>) -> Result<(), quiver_upstream::UpstreamError> {
        match id {
            Some(id) => {
                self.refresh
                    .get(id)
                    .ok_or_else(|| quiver_upstream::UpstreamError::Unknown(id.to_string()))?
                    .notify_one();
            }
            None => self.refresh.values().for_each(|n| n.notify_one()),
        }
        Ok(())
    }

    async fn publish_loop(&self) {
        loop {
            self.dirty.notified().await;
            // Coalesce a burst of changes (e.g. 70 upstreams coming up) into one version.
            tokio::time::sleep(Duration::from_millis(25)).await;
            self.publish_now();
        }
    }

    fn publish_now(&self) {
        let entries: Vec<ServerEntry> = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        self.store.publish(entries);
    }

    async fn watch_upstream(&self, upstream: Arc<Upstream>) {
        let id = upstream.id().to_string();
        let refresh = self.refresh.get(&id).cloned().unwrap_or_default();
        let mut events = upstream.subscribe();
        let interval = upstream.config().refresh_interval_secs;
        let mut backoff = BACKOFF_START;
        let mut first = true;
        loop {
            let healthy = match upstream.list_tools().await {
                Ok(tools) => {
                    backoff = BACKOFF_START;
                    let description = match &upstream.config().description {
                        Some(d) => d.clone(),
                        None => upstream.description().await.unwrap_or_default(),
                    };
                    let config = upstream.config();
                    let entry = ServerEntry {
                        id: id.clone(),
                        description: one_line(&description),
                        namespace: config.namespace().to_string(),
                        tags: config.tags.clone(),
                        group: config.group.clone(),
                        validation: config.validation,
                        features: upstream.features().await,
                        tools,
                    };
                    self.entries
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(id.clone(), entry);
                    self.dirty.notify_one();
                    true
                }
                Err(e) => {
                    tracing::warn!(upstream = %id, "discovery failed, retrying in {backoff:?}: {e}");
                    false
                }
            };
            if first {
                first = false;
                self.attempted.send_modify(|n| *n += 1);
            }
            let wait = if healthy {
                (interval > 0).then(|| Duration::from_secs(interval))
            } else {
                let wait = jittered(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
                Some(wait)
            };
            // Wait for a reason to list again.
            loop {
                tokio::select! {
                    () = sleep_or_forever(wait) => break,
                    () = refresh.notified() => break,
                    event = events.recv() => match event {
                        Ok(UpstreamEvent::ToolsChanged) => break,
                        Ok(UpstreamEvent::Disconnected) if healthy => {
                            // Reconnect after a short pause rather than on the next interval.
                            tokio::time::sleep(jittered(BACKOFF_START)).await;
                            break;
                        }
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                }
            }
        }
    }
}

async fn sleep_or_forever(wait: Option<Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// ±20 % jitter so many upstreams failing together do not retry in lockstep.
fn jittered(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.subsec_nanos());
    let factor = 0.8 + f64::from(nanos % 400) / 1000.0;
    d.mul_f64(factor)
}

/// First line of a description, whitespace collapsed, bounded.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let collapsed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}
