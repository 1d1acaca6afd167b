//! Discovery: lists every upstream's tools at start, on `tools/list_changed`, on
//! an interval and on demand, and hands each result to a [`DiscoverySink`]: the
//! local manifest store, or (on the control-plane leader) a replicated command.
//! An upstream that cannot be reached is retried with backoff and keeps its last
//! known tools; it never holds up the others. At most
//! [`MAX_CONCURRENT_ATTEMPTS`] upstreams are listed at once (each attempt may
//! start a process or open a connection); the rest wait their turn, first
//! come first served. The set of upstreams can change while it runs
//! ([`Discovery::sync`]).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use opentelemetry::{KeyValue, metrics::ObservableGauge};

use quiver_proto::manifest::ServerEntry;
use quiver_upstream::{Upstream, UpstreamConfig, UpstreamEvent, UpstreamSet, UpstreamState};
use tokio::sync::{Notify, Semaphore, broadcast, watch};
use tokio_util::sync::CancellationToken;

const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Most upstreams discovery lists at once. Listing an upstream that is not
/// connected starts its process or opens its connection; a thousand failing
/// upstreams retried together would otherwise starve the node.
pub const MAX_CONCURRENT_ATTEMPTS: usize = 32;

/// Where discovery results go.
pub trait DiscoverySink: Send + Sync + 'static {
    /// One upstream's current tools and metadata, screened (see
    /// [`quiver_screen::screen_entry`]).
    fn discovered(&self, entry: ServerEntry);
    /// The tools discovery knows of, for screening a new entry's references
    /// to other servers' tools.
    fn catalogue(&self) -> quiver_screen::Catalogue {
        quiver_screen::Catalogue::default()
    }
    /// An upstream left the set.
    fn removed(&self, _id: &str) {}
}

struct Watched {
    stop: CancellationToken,
    refresh: Arc<Notify>,
}

/// Runs discovery for a changing set of upstreams.
pub struct Discovery {
    upstreams: Arc<UpstreamSet>,
    sink: Arc<dyn DiscoverySink>,
    watched: Mutex<BTreeMap<String, Watched>>,
    attempted: watch::Sender<BTreeSet<String>>,
    shutdown: CancellationToken,
    attempts: Attempts,
    /// What `/metrics` reads of the attempts (kept to stay registered).
    _gauge: ObservableGauge<u64>,
}

/// The listings discovery runs at once, and those waiting for a turn.
struct Attempts {
    turns: Semaphore,
    limit: usize,
    waiting: AtomicUsize,
    /// The most that ever ran at once.
    peak: AtomicUsize,
}

impl Attempts {
    fn new(limit: usize) -> Attempts {
        Attempts {
            turns: Semaphore::new(limit),
            limit,
            waiting: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Listings running now.
    fn running(&self) -> usize {
        self.limit - self.turns.available_permits()
    }
}

/// How many upstream listings discovery runs and holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptStats {
    /// Listings running now.
    pub running: usize,
    /// Listings waiting for a turn.
    pub waiting: usize,
    /// The most that ever ran at once.
    pub peak: usize,
    /// The most that may run at once.
    pub limit: usize,
}

impl Discovery {
    /// Discovery over `upstreams` (which [`Discovery::sync`] keeps in step);
    /// everything stops when `shutdown` is cancelled.
    pub fn new(
        upstreams: Arc<UpstreamSet>,
        sink: Arc<dyn DiscoverySink>,
        shutdown: CancellationToken,
    ) -> Arc<Discovery> {
        Discovery::with_limit(upstreams, sink, shutdown, MAX_CONCURRENT_ATTEMPTS)
    }

    /// Like [`Discovery::new`], listing at most `limit` upstreams at once
    /// (at least one).
    pub fn with_limit(
        upstreams: Arc<UpstreamSet>,
        sink: Arc<dyn DiscoverySink>,
        shutdown: CancellationToken,
        limit: usize,
    ) -> Arc<Discovery> {
        let (attempted, _) = watch::channel(BTreeSet::new());
        Arc::new_cyclic(|weak| Discovery {
            upstreams,
            sink,
            watched: Mutex::new(BTreeMap::new()),
            attempted,
            shutdown,
            attempts: Attempts::new(limit.max(1)),
            _gauge: attempts_gauge(weak.clone()),
        })
    }

    /// The listings running and waiting now, and the most that ran at once.
    pub fn attempts(&self) -> AttemptStats {
        AttemptStats {
            running: self.attempts.running(),
            waiting: self.attempts.waiting.load(Ordering::Relaxed),
            peak: self.attempts.peak.load(Ordering::Relaxed),
            limit: self.attempts.limit,
        }
    }

    /// Lists `upstream`'s tools in its turn.
    async fn list_in_turn(
        &self,
        upstream: &Arc<Upstream>,
    ) -> Result<Vec<quiver_proto::ToolDef>, quiver_upstream::UpstreamError> {
        let attempts = &self.attempts;
        attempts.waiting.fetch_add(1, Ordering::Relaxed);
        let turn = attempts.turns.acquire().await;
        attempts.waiting.fetch_sub(1, Ordering::Relaxed);
        attempts
            .peak
            .fetch_max(attempts.running(), Ordering::Relaxed);
        let listed = upstream.list_tools().await;
        drop(turn);
        listed
    }

    /// Discovery over a fixed set, started at once.
    pub fn spawn(
        upstreams: Arc<UpstreamSet>,
        sink: Arc<dyn DiscoverySink>,
        shutdown: CancellationToken,
    ) -> Arc<Discovery> {
        let discovery = Discovery::new(upstreams, sink, shutdown);
        discovery.watch_new();
        discovery
    }

    /// Makes the set exactly `configs`: new upstreams are connected and listed,
    /// removed ones are closed, changed ones are reconnected.
    pub async fn sync(self: &Arc<Self>, configs: Vec<UpstreamConfig>) {
        let removed = self.upstreams.reconcile(configs);
        for upstream in &removed {
            let id = upstream.id().to_string();
            if let Some(w) = self.lock().remove(&id) {
                w.stop.cancel();
            }
            self.attempted.send_modify(|a| {
                a.remove(&id);
            });
            upstream.shutdown().await;
            if !self.upstreams.contains(&id) {
                self.sink.removed(&id);
            }
        }
        self.watch_new();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Watched>> {
        self.watched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a task for every upstream of the set that has none.
    fn watch_new(self: &Arc<Self>) {
        for upstream in self.upstreams.all() {
            let id = upstream.id().to_string();
            let mut watched = self.lock();
            if watched.contains_key(&id) {
                continue;
            }
            let stop = self.shutdown.child_token();
            let refresh = Arc::new(Notify::new());
            watched.insert(
                id,
                Watched {
                    stop: stop.clone(),
                    refresh: refresh.clone(),
                },
            );
            drop(watched);
            let d = self.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = d.watch_upstream(upstream, refresh) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
    }

    /// Resolves once every upstream of the set has been tried at least once.
    pub async fn first_round(&self) {
        self.first_round_of(&self.upstreams.ids()).await;
    }

    /// Resolves once each of `ids` has been tried at least once (they may join
    /// the set later).
    pub async fn first_round_of(&self, ids: &[String]) {
        let mut rx = self.attempted.subscribe();
        let _ = rx
            .wait_for(|done| ids.iter().all(|id| done.contains(id)))
            .await;
    }

    /// Asks for an immediate re-list of one upstream, or of all.
    pub fn refresh(&self, id: Option<&str>) -> Result<(), quiver_upstream::UpstreamError> {
        let watched = self.lock();
        match id {
            Some(id) => {
                watched
                    .get(id)
                    .ok_or_else(|| quiver_upstream::UpstreamError::Unknown(id.to_string()))?
                    .refresh
                    .notify_one();
            }
            None => watched.values().for_each(|w| w.refresh.notify_one()),
        }
        Ok(())
    }

    /// Connection state of every upstream, by id.
    pub fn statuses(&self) -> BTreeMap<String, UpstreamState> {
        self.upstreams
            .statuses()
            .into_iter()
            .map(|s| (s.id, s.state))
            .collect()
    }

    async fn watch_upstream(&self, upstream: Arc<Upstream>, refresh: Arc<Notify>) {
        let id = upstream.id().to_string();
        let mut events = upstream.subscribe();
        let interval = upstream.config().refresh_interval_secs;
        let mut backoff = BACKOFF_START;
        let mut first = true;
        loop {
            let healthy = match self.list_in_turn(&upstream).await {
                Ok(tools) => {
                    backoff = BACKOFF_START;
                    let description = match &upstream.config().description {
                        Some(d) => d.clone(),
                        None => upstream.description().await.unwrap_or_default(),
                    };
                    let config = upstream.config();
                    let mut entry = ServerEntry {
                        id: id.clone(),
                        description: one_line(&description),
                        namespace: config.namespace().to_string(),
                        tags: config.tags.clone(),
                        group: config.group.clone(),
                        validation: config.validation,
                        features: upstream.features().await,
                        tools,
                        findings: Default::default(),
                    };
                    quiver_screen::screen_entry(&mut entry, &self.sink.catalogue());
                    self.sink.discovered(entry);
                    true
                }
                Err(e) => {
                    tracing::warn!(upstream = %id, "discovery failed, retrying in {backoff:?}: {e}");
                    false
                }
            };
            if first {
                first = false;
                self.attempted.send_modify(|a| {
                    a.insert(id.clone());
                });
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
                        Ok(UpstreamEvent::ToolsChanged | UpstreamEvent::CredentialsChanged) => break,
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

/// `quiver_discovery_attempts{state="running"|"waiting"}`, read from
/// `discovery` at each scrape.
fn attempts_gauge(discovery: Weak<Discovery>) -> ObservableGauge<u64> {
    quiver_telemetry::metrics::meter()
        .u64_observable_gauge(quiver_telemetry::instruments::names::DISCOVERY_ATTEMPTS)
        .with_description("Upstream listings discovery runs, and those waiting for a turn")
        .with_callback(move |observer| {
            if let Some(discovery) = discovery.upgrade() {
                let stats = discovery.attempts();
                observer.observe(stats.running as u64, &[KeyValue::new("state", "running")]);
                observer.observe(stats.waiting as u64, &[KeyValue::new("state", "waiting")]);
            }
        })
        .build()
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
