//! Routing across a fleet of remote executors: the edge's [`Dispatch`] and
//! [`Scripts`] when executors run as processes of their own.
//!
//! Each call and script goes to the executor with the fewest requests
//! outstanding, among those that are ready, hold the stub hash
//! this edge serves (any other hash is fenced: nothing is routed to it) and
//! whose circuit breaker is closed. A call or script moves to another
//! executor only when it was never sent (the executor could not be reached,
//! or refused it as busy). Once sent, it is never sent again: a script whose
//! executor is lost mid-run fails with an error saying its tool calls may
//! have run (invariant 4). Ties go to the executor that finished a request
//! most recently: its threads are awake, so at low load the hop saves the
//! wakeup of an idle process (~0.3 ms on loopback; `quiver bench fleet`).
//!
//! A session's scripts stay on the executor that ran its last one while that
//! executor takes work, so the session's stash is at hand for the next
//! script; when it leaves, the session moves on, and its stash comes along
//! only if the executors keep stashes in etcd (`quiver executor --etcd`).

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use quiver_upstream::{CallOptions, CallSink, ResourceUpdate, UpstreamError};
use quiver_view::ToolCall;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use tokio_util::sync::CancellationToken;

use quiver_contract::{Dispatch, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts};

use crate::remote::{ClientTls, HopError, RemoteExecutor};

/// First pause of an opened breaker; doubles while it keeps failing.
const BREAKER_FIRST: Duration = Duration::from_secs(1);
/// Longest pause of an opened breaker.
const BREAKER_LONGEST: Duration = Duration::from_secs(30);
/// The affinity "tenant" under which a server's resource subscriptions stay
/// on one executor (no tenant is named with a NUL).
const SUBSCRIPTIONS: &str = "\u{0}subscriptions";
/// The pause before a broken watch of an executor's resource updates is
/// opened again.
const REWATCH_AFTER: Duration = Duration::from_secs(1);
/// Sessions whose executor the fleet remembers; past this the oldest half
/// is forgotten (those sessions pick afresh).
const MAX_AFFINITIES: usize = 100_000;

/// One executor as the membership source reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorInfo {
    /// Its unique name in the fleet.
    pub node: String,
    /// Where it serves `quiver.v1.Executor` (`http://host:port`).
    pub url: String,
    /// The stub hash it computed for the manifest it holds.
    pub stub_hash: String,
    /// Whether it takes work (false while it starts or drains).
    pub ready: bool,
}

impl ExecutorInfo {
    /// The executors among members' records in etcd.
    pub fn from_records(records: &[crate::membership::MemberRecord]) -> Vec<ExecutorInfo> {
        records
            .iter()
            .filter(|r| {
                r.role == quiver_proto::node_role::NodeRole::Executor && !r.address.is_empty()
            })
            .map(|r| ExecutorInfo {
                node: r.node.clone(),
                url: r.address.clone(),
                stub_hash: r.stub_hash.clone(),
                ready: r.ready,
            })
            .collect()
    }
}

/// Whether an executor gets work from this edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoutingState {
    /// It takes work.
    Ok,
    /// Its `/readyz` says it is not ready.
    NotReady,
    /// Its stub hash is not the canonical one: it runs another manifest.
    Fenced,
    /// Calls to it failed in a row; it is left alone until the breaker
    /// lets a trial through.
    BreakerOpen,
}

impl RoutingState {
    /// Its name, as `/status` and `quiver ctl` show it.
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingState::Ok => "ok",
            RoutingState::NotReady => "not-ready",
            RoutingState::Fenced => "fenced",
            RoutingState::BreakerOpen => "breaker-open",
        }
    }
}

impl std::fmt::Display for RoutingState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an executor gets no work, as `quiver ctl` and `/status` show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemberState {
    /// Its name.
    pub node: String,
    /// Its address.
    pub url: String,
    /// Whether it gets work, and why not (`ok`, `fenced`, `not-ready` or
    /// `breaker-open` in JSON).
    pub state: RoutingState,
    /// Requests this edge has outstanding on it.
    pub outstanding: usize,
    /// Its stub hash.
    pub stub_hash: String,
    /// Whether this edge hears its upstreams' resource updates now (its
    /// watch of them is open).
    pub watching_updates: bool,
}

struct Member {
    info: ExecutorInfo,
    remote: RemoteExecutor,
    outstanding: AtomicUsize,
    /// When it last finished a request (nanoseconds since [`EPOCH`]).
    last_done: std::sync::atomic::AtomicU64,
    breaker: Mutex<Breaker>,
}

/// The zero of [`Member::last_done`].
static EPOCH: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// Nanoseconds since [`EPOCH`].
fn since_epoch() -> u64 {
    u64::try_from(EPOCH.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Default)]
struct Breaker {
    open_until: Option<Instant>,
    pause: Duration,
}

impl Breaker {
    fn closed(&self) -> bool {
        self.open_until.is_none_or(|until| Instant::now() >= until)
    }

    fn failed(&mut self) {
        self.pause = if self.pause.is_zero() {
            BREAKER_FIRST
        } else {
            (self.pause * 2).min(BREAKER_LONGEST)
        };
        self.open_until = Some(Instant::now() + self.pause);
    }

    fn succeeded(&mut self) {
        *self = Breaker::default();
    }
}

/// Counts a request as outstanding on a member while it lives.
struct Outstanding(Arc<Member>);

impl Outstanding {
    fn new(member: Arc<Member>) -> Outstanding {
        member.outstanding.fetch_add(1, Ordering::Relaxed);
        Outstanding(member)
    }
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.outstanding.fetch_sub(1, Ordering::Relaxed);
        self.0.last_done.store(since_epoch(), Ordering::Relaxed);
    }
}

/// The executors an edge routes to.
pub struct ExecutorFleet {
    members: Mutex<BTreeMap<String, Arc<Member>>>,
    /// (tenant, session) → the executor that ran its last script, and when.
    affinity: Mutex<std::collections::HashMap<(String, String), (String, Instant)>>,
    /// The stub hash of the manifest this edge serves.
    canonical: Box<dyn Fn() -> String + Send + Sync>,
    tls: Option<ClientTls>,
    /// The resource updates every member's upstream connections hear.
    updates: tokio::sync::broadcast::Sender<ResourceUpdate>,
    /// Node → the address its updates are watched at, what stops that, and
    /// whether the watch is open.
    watching: Mutex<std::collections::HashMap<String, Watch>>,
    /// Set once the membership source has answered.
    known: tokio::sync::watch::Sender<bool>,
}

/// The watch of one member's resource updates.
struct Watch {
    url: String,
    stop: CancellationToken,
    open: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for ExecutorFleet {
    fn drop(&mut self) {
        let watching = self.watching.get_mut().unwrap_or_else(|p| p.into_inner());
        for watch in watching.values() {
            watch.stop.cancel();
        }
    }
}

impl ExecutorFleet {
    /// An empty fleet whose executors must hold the stub hash `canonical`
    /// returns (the edge's own, for the manifest it serves).
    pub fn new(
        canonical: impl Fn() -> String + Send + Sync + 'static,
        tls: Option<ClientTls>,
    ) -> ExecutorFleet {
        ExecutorFleet {
            members: Mutex::new(BTreeMap::new()),
            known: tokio::sync::watch::channel(false).0,
            affinity: Mutex::new(std::collections::HashMap::new()),
            canonical: Box::new(canonical),
            tls,
            updates: tokio::sync::broadcast::channel(256).0,
            watching: Mutex::default(),
        }
    }

    /// Replaces the membership with `executors`. A member whose address is
    /// unchanged keeps its connection, count and breaker; one that left is
    /// forgotten (what it runs finishes on the connection it has).
    pub fn update(&self, executors: Vec<ExecutorInfo>) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = BTreeMap::new();
        for info in executors {
            let kept = members
                .remove(&info.node)
                .filter(|member| member.info.url == info.url);
            let member = match kept {
                Some(member) if member.info == info => member,
                Some(member) => Arc::new(Member {
                    info,
                    remote: member.remote.clone(),
                    outstanding: AtomicUsize::new(member.outstanding.load(Ordering::Relaxed)),
                    last_done: member.last_done.load(Ordering::Relaxed).into(),
                    breaker: Mutex::new(Breaker::default()),
                }),
                None => match RemoteExecutor::lazy(&info.url, self.tls.as_ref()) {
                    Ok(remote) => Arc::new(Member {
                        info,
                        remote,
                        outstanding: AtomicUsize::new(0),
                        last_done: 0.into(),
                        breaker: Mutex::new(Breaker::default()),
                    }),
                    Err(e) => {
                        tracing::warn!(node = %info.node, url = %info.url, "not routing to an executor: {e}");
                        continue;
                    }
                },
            };
            next.insert(member.info.node.clone(), member);
        }
        self.watch_updates(&next);
        *members = next;
        self.known.send_replace(true);
    }

    /// Returns once the membership source has answered (the first
    /// [`ExecutorFleet::update`]): an edge waits for it before serving, or
    /// its first requests would find no executor.
    pub async fn membership_known(&self) {
        let mut known = self.known.subscribe();
        let _ = known.wait_for(|known| *known).await;
    }

    /// Keeps one watch of resource updates open to each of `members` (a
    /// new address gets a new one; a member that left, none), feeding
    /// [`Dispatch::resource_updates`]. Outside a Tokio runtime, none.
    fn watch_updates(&self, members: &BTreeMap<String, Arc<Member>>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut watching = self.watching.lock().unwrap_or_else(|p| p.into_inner());
        watching.retain(|node, watch| {
            let keep = members.get(node).is_some_and(|m| m.info.url == watch.url);
            if !keep {
                watch.stop.cancel();
            }
            keep
        });
        for (node, member) in members {
            if watching.contains_key(node) {
                continue;
            }
            let watch = Watch {
                url: member.info.url.clone(),
                stop: CancellationToken::new(),
                open: Arc::default(),
            };
            let (stop, open) = (watch.stop.clone(), watch.open.clone());
            watching.insert(node.clone(), watch);
            let (remote, updates, node) =
                (member.remote.clone(), self.updates.clone(), node.clone());
            runtime.spawn(async move {
                tokio::select! {
                    () = relay_updates(&remote, &updates, &node, &open) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
    }

    /// Every member and whether it gets work.
    pub fn states(&self) -> Vec<MemberState> {
        let canonical = (self.canonical)();
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let watching = self.watching.lock().unwrap_or_else(|p| p.into_inner());
        members
            .values()
            .map(|m| MemberState {
                node: m.info.node.clone(),
                url: m.info.url.clone(),
                state: state_of(m, &canonical),
                outstanding: m.outstanding.load(Ordering::Relaxed),
                stub_hash: m.info.stub_hash.clone(),
                watching_updates: watching
                    .get(&m.info.node)
                    .is_some_and(|w| w.open.load(Ordering::Relaxed)),
            })
            .collect()
    }

    /// The executor that ran `session`'s last script, if it still takes work.
    fn sticky(&self, tenant: &str, session: &str, tried: &[String]) -> Option<Arc<Member>> {
        let key = (tenant.to_string(), session.to_string());
        let node = self
            .affinity
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .map(|(node, _)| node.clone())?;
        if tried.contains(&node) {
            return None;
        }
        let canonical = (self.canonical)();
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        members
            .get(&node)
            .filter(|m| state_of(m, &canonical) == RoutingState::Ok)
            .cloned()
    }

    /// Remembers that `node` ran `session`'s script.
    fn remember(&self, tenant: &str, session: &str, node: &str) {
        let mut affinity = self.affinity.lock().unwrap_or_else(|p| p.into_inner());
        if affinity.len() >= MAX_AFFINITIES {
            let mut ages: Vec<Instant> = affinity.values().map(|(_, at)| *at).collect();
            ages.sort();
            let cut = ages[ages.len() / 2];
            affinity.retain(|_, (_, at)| *at > cut);
        }
        affinity.insert(
            (tenant.to_string(), session.to_string()),
            (node.to_string(), Instant::now()),
        );
    }

    /// The member with the fewest outstanding requests among those that get
    /// work, skipping `tried`; why there is none otherwise.
    fn pick(&self, tried: &[String]) -> Result<Arc<Member>, NoExecutor> {
        let canonical = (self.canonical)();
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let eligible: Vec<&Arc<Member>> = members
            .values()
            .filter(|m| {
                state_of(m, &canonical) == RoutingState::Ok && !tried.contains(&m.info.node)
            })
            .collect();
        if eligible.is_empty() {
            return Err(if members.is_empty() {
                NoExecutor::EmptyFleet
            } else {
                let states: Vec<String> = members
                    .values()
                    .map(|m| format!("{} {}", m.info.node, state_of(m, &canonical)))
                    .collect();
                NoExecutor::AllUnavailable {
                    states: states.join(", "),
                }
            });
        }
        let best = eligible
            .iter()
            .min_by_key(|m| {
                (
                    m.outstanding.load(Ordering::Relaxed),
                    std::cmp::Reverse(m.last_done.load(Ordering::Relaxed)),
                )
            })
            .copied()
            .cloned();
        best.ok_or(NoExecutor::NothingLeft)
    }
}

/// Why no executor was picked for a request.
#[derive(Debug, thiserror::Error)]
enum NoExecutor {
    /// The fleet is empty.
    #[error("no executor has joined the fleet")]
    EmptyFleet,
    /// Every member is tried, not ready, fenced or behind an open breaker.
    #[error("no executor can take work ({states})")]
    AllUnavailable {
        /// Each member and its state.
        states: String,
    },
    /// None was left to pick.
    #[error("no executor can take work")]
    NothingLeft,
}

fn state_of(member: &Member, canonical: &str) -> RoutingState {
    if !member.info.ready {
        RoutingState::NotReady
    } else if member.info.stub_hash != canonical {
        RoutingState::Fenced
    } else if !member
        .breaker
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .closed()
    {
        RoutingState::BreakerOpen
    } else {
        RoutingState::Ok
    }
}

fn record(member: &Member, healthy: bool) {
    let mut breaker = member.breaker.lock().unwrap_or_else(|p| p.into_inner());
    if healthy {
        breaker.succeeded();
    } else {
        breaker.failed();
    }
}

/// Most executors one request tries before giving up (each never got it).
const MAX_TRIES: usize = 3;

/// How one executor took a request.
enum Attempt<T> {
    /// It answered (an error included): done.
    Answer(T),
    /// It refused before running anything: another may take it.
    Busy(String),
    /// It never got the request: another may take it.
    NotSent(String),
    /// The connection broke after the request was sent: it may have run.
    Lost(String),
}

impl<T> From<Result<T, HopError>> for Attempt<T> {
    fn from(hop: Result<T, HopError>) -> Attempt<T> {
        match hop {
            Ok(answer) => Attempt::Answer(answer),
            Err(HopError::NotSent(why)) => Attempt::NotSent(why),
            Err(HopError::Lost(why)) => Attempt::Lost(why),
        }
    }
}

/// How a routed request ended.
enum Routed<T> {
    Answer(T),
    /// Its executor (named) was lost after it was sent.
    Lost(String, String),
    /// No executor took it; why each did not.
    NoneTook(String),
}

impl ExecutorFleet {
    /// Sends a request to one executor after another until one answers or
    /// loses it, trying the next only when the last never got it (at most
    /// [`MAX_TRIES`]). With `session`, it goes to that session's executor
    /// first and the one that takes it is remembered.
    async fn route<T, F, Fut>(&self, session: Option<(&str, &str)>, mut attempt: F) -> Routed<T>
    where
        F: FnMut(Arc<Member>) -> Fut,
        Fut: std::future::Future<Output = Attempt<T>>,
    {
        let mut tried = Vec::new();
        let mut last = String::new();
        while tried.len() < MAX_TRIES {
            let sticky = session.and_then(|(tenant, id)| self.sticky(tenant, id, &tried));
            let member = match sticky.map_or_else(|| self.pick(&tried), Ok) {
                Ok(member) => member,
                Err(why) => {
                    last = if last.is_empty() {
                        why.to_string()
                    } else {
                        format!("{last}; {why}")
                    };
                    break;
                }
            };
            let node = member.info.node.clone();
            tried.push(node.clone());
            if let Some((tenant, id)) = session {
                self.remember(tenant, id, &node);
            }
            let _counted = Outstanding::new(member.clone());
            match attempt(member.clone()).await {
                Attempt::Answer(answer) => {
                    record(&member, true);
                    return Routed::Answer(answer);
                }
                Attempt::Busy(why) => last = format!("executor `{node}` is busy: {why}"),
                Attempt::NotSent(why) => {
                    record(&member, false);
                    last = format!("executor `{node}`: {why}");
                }
                Attempt::Lost(why) => {
                    record(&member, false);
                    return Routed::Lost(node, why);
                }
            }
        }
        Routed::NoneTook(last)
    }
}

impl Dispatch for ExecutorFleet {
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move {
            let routed = self
                .route(None, |member| {
                    let (call, options) = (call.clone(), options.clone());
                    async move { member.remote.try_call_tool(call, options).await.into() }
                })
                .await;
            match routed {
                Routed::Answer(answer) => answer,
                Routed::Lost(node, why) => Err(UpstreamError::Remote {
                    id: call.server,
                    code: -32603,
                    message: format!(
                        "executor lost: `{node}` stopped answering during the call ({why}); it was not retried, and it may have run"
                    ),
                    data: None,
                }),
                Routed::NoneTook(last) => Err(UpstreamError::Unavailable {
                    id: call.server,
                    reason: format!("no executor took the call; nothing was sent ({last})"),
                }),
            }
        })
    }

    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<ResourceUpdate>> {
        Some(self.updates.subscribe())
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        // A server's subscriptions are kept on one executor, whose upstream
        // connection then holds them all (and is asked to let go of them).
        let subscription = matches!(
            request,
            ClientRequest::SubscribeRequest(_) | ClientRequest::UnsubscribeRequest(_)
        )
        .then_some((SUBSCRIPTIONS, server));
        Box::pin(async move {
            let routed = self
                .route(subscription, |member| {
                    let (request, options) = (request.clone(), options.clone());
                    async move {
                        member
                            .remote
                            .try_request(server, request, options)
                            .await
                            .into()
                    }
                })
                .await;
            match routed {
                Routed::Answer(answer) => answer,
                Routed::Lost(node, why) => Err(UpstreamError::Remote {
                    id: server.to_string(),
                    code: -32603,
                    message: format!(
                        "executor lost: `{node}` stopped answering during the request ({why}); it was not retried"
                    ),
                    data: None,
                }),
                Routed::NoneTook(last) => Err(UpstreamError::Unavailable {
                    id: server.to_string(),
                    reason: format!("no executor took the request; nothing was sent ({last})"),
                }),
            }
        })
    }
}

/// Relays the resource updates `remote` hears into `updates`, watching
/// again after the stream breaks, until an executor that cannot report them
/// says so.
async fn relay_updates(
    remote: &RemoteExecutor,
    updates: &tokio::sync::broadcast::Sender<ResourceUpdate>,
    node: &str,
    open: &std::sync::atomic::AtomicBool,
) {
    loop {
        match remote.watch_resource_updates().await {
            Ok(mut stream) => {
                open.store(true, Ordering::Relaxed);
                while let Ok(Some(update)) = stream.message().await {
                    let _ = updates.send(ResourceUpdate {
                        server: update.server,
                        uri: update.uri,
                    });
                }
                open.store(false, Ordering::Relaxed);
            }
            Err(status) if status.code() == tonic::Code::Unimplemented => {
                tracing::debug!(node, "the executor reports no resource updates");
                return;
            }
            Err(_) => {}
        }
        tokio::time::sleep(REWATCH_AFTER).await;
    }
}

impl Scripts for ExecutorFleet {
    fn execute(
        &self,
        request: ExecuteRequest,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            let session = (request.tenant.as_str(), request.session.as_str());
            let routed = self
                .route(Some(session), |member| {
                    let (request, cancel, sink) = (request.clone(), cancel.clone(), sink.clone());
                    async move {
                        match member.remote.try_execute(request, cancel, sink).await {
                            // Refused before running: another executor may take it.
                            Ok(Err(ExecuteError::Busy { reason })) => Attempt::Busy(reason),
                            other => other.into(),
                        }
                    }
                })
                .await;
            match routed {
                Routed::Answer(answer) => answer,
                Routed::Lost(node, reason) => Err(ExecuteError::Failed {
                    reason: format!(
                        "executor lost: `{node}` stopped answering while the script ran ({reason}); the script was not re-run, and the tool calls it made before that may have run"
                    ),
                }),
                Routed::NoneTook(last) => Err(ExecuteError::Unreachable {
                    reason: format!("no executor took the script; nothing ran ({last})"),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(fleet: &ExecutorFleet, node: &str) -> Arc<Member> {
        fleet.members.lock().unwrap()[node].clone()
    }

    #[tokio::test]
    async fn ties_go_to_the_executor_that_finished_last_and_load_spreads() {
        let fleet = ExecutorFleet::new(|| "hash".to_string(), None);
        let info = |node: &str, port: u16| ExecutorInfo {
            node: node.to_string(),
            url: format!("http://127.0.0.1:{port}"),
            stub_hash: "hash".to_string(),
            ready: true,
        };
        fleet.update(vec![info("a", 1), info("b", 2)]);
        let picked = |tried: &[String]| fleet.pick(tried).unwrap().info.node.clone();

        // b finished a request last: it takes the next one.
        drop(Outstanding::new(member(&fleet, "b")));
        assert_eq!(picked(&[]), "b");
        // Busy, it is passed over for the idle one.
        let busy = Outstanding::new(member(&fleet, "b"));
        assert_eq!(picked(&[]), "a");
        // Both busy: the one that finished last again.
        let also_busy = Outstanding::new(member(&fleet, "a"));
        drop(busy);
        assert_eq!(picked(&[]), "b");
        drop(also_busy);
        assert_eq!(picked(&[]), "a", "a finished last");
        // One already tried is never picked again.
        assert_eq!(picked(&["a".to_string()]), "b");
    }
}
