//! Routing across a fleet of remote executors: the edge's [`Dispatch`] and
//! [`Scripts`] when executors run as processes of their own.
//!
//! Each call and script goes to the executor with the fewest requests
//! outstanding (ties rotate), among those that are ready, hold the stub hash
//! this edge serves (any other hash is fenced: nothing is routed to it) and
//! whose circuit breaker is closed. A call or script moves to another
//! executor only when it was never sent (the executor could not be reached,
//! or refused it as busy). Once sent, it is never sent again: a script whose
//! executor is lost mid-run fails with an error saying its tool calls may
//! have run (invariant 4).
//!
//! A session's scripts stay on the executor that ran its last one while that
//! executor takes work, so the session's stash (held by the executor) is
//! there for the next script; when it leaves, the session moves on and its
//! stash starts empty.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use quiver_upstream::{CallOptions, CallSink, UpstreamError};
use quiver_view::{ToolCall, ToolView};
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use tokio_util::sync::CancellationToken;

use crate::{
    Dispatch, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts,
    remote::{ClientTls, HopError, RemoteExecutor},
};

/// First pause of an opened breaker; doubles while it keeps failing.
const BREAKER_FIRST: Duration = Duration::from_secs(1);
/// Longest pause of an opened breaker.
const BREAKER_LONGEST: Duration = Duration::from_secs(30);
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

/// Why an executor gets no work, as `quiver ctl` and `/status` show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemberState {
    /// Its name.
    pub node: String,
    /// Its address.
    pub url: String,
    /// `ok`, `fenced`, `not-ready` or `breaker-open`.
    pub state: &'static str,
    /// Requests this edge has outstanding on it.
    pub outstanding: usize,
    /// Its stub hash.
    pub stub_hash: String,
}

struct Member {
    info: ExecutorInfo,
    remote: RemoteExecutor,
    outstanding: AtomicUsize,
    breaker: Mutex<Breaker>,
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
    turn: AtomicUsize,
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
            affinity: Mutex::new(std::collections::HashMap::new()),
            canonical: Box::new(canonical),
            tls,
            turn: AtomicUsize::new(0),
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
                    breaker: Mutex::new(Breaker::default()),
                }),
                None => match RemoteExecutor::lazy(&info.url, self.tls.as_ref()) {
                    Ok(remote) => Arc::new(Member {
                        info,
                        remote,
                        outstanding: AtomicUsize::new(0),
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
        *members = next;
    }

    /// Every member and whether it gets work.
    pub fn states(&self) -> Vec<MemberState> {
        let canonical = (self.canonical)();
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        members
            .values()
            .map(|m| MemberState {
                node: m.info.node.clone(),
                url: m.info.url.clone(),
                state: state_of(m, &canonical),
                outstanding: m.outstanding.load(Ordering::Relaxed),
                stub_hash: m.info.stub_hash.clone(),
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
            .filter(|m| state_of(m, &canonical) == "ok")
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
    fn pick(&self, tried: &[String]) -> Result<Arc<Member>, String> {
        let canonical = (self.canonical)();
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let eligible: Vec<&Arc<Member>> = members
            .values()
            .filter(|m| state_of(m, &canonical) == "ok" && !tried.contains(&m.info.node))
            .collect();
        if eligible.is_empty() {
            return Err(if members.is_empty() {
                "no executor has joined the fleet".to_string()
            } else {
                let states: Vec<String> = members
                    .values()
                    .map(|m| format!("{} {}", m.info.node, state_of(m, &canonical)))
                    .collect();
                format!("no executor can take work ({})", states.join(", "))
            });
        }
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % eligible.len();
        let rotated = eligible[start..].iter().chain(eligible[..start].iter());
        let best = rotated
            .min_by_key(|m| m.outstanding.load(Ordering::Relaxed))
            .copied()
            .cloned();
        best.ok_or_else(|| "no executor can take work".to_string())
    }
}

fn state_of(member: &Member, canonical: &str) -> &'static str {
    if !member.info.ready {
        "not-ready"
    } else if member.info.stub_hash != canonical {
        "fenced"
    } else if !member
        .breaker
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .closed()
    {
        "breaker-open"
    } else {
        "ok"
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

impl Dispatch for ExecutorFleet {
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move {
            let server = call.server.clone();
            let mut tried = Vec::new();
            let mut last = String::new();
            while tried.len() < MAX_TRIES {
                let member = match self.pick(&tried) {
                    Ok(member) => member,
                    Err(why) => {
                        last = if last.is_empty() {
                            why
                        } else {
                            format!("{last}; {why}")
                        };
                        break;
                    }
                };
                tried.push(member.info.node.clone());
                let _counted = Outstanding::new(member.clone());
                match member
                    .remote
                    .try_call_tool(call.clone(), options.clone())
                    .await
                {
                    Err(HopError::Lost(why)) => {
                        record(&member, false);
                        return Err(UpstreamError::Remote {
                            id: server,
                            code: -32603,
                            message: format!(
                                "executor lost: `{}` stopped answering during the call ({why}); it was not retried, and it may have run",
                                member.info.node
                            ),
                            data: None,
                        });
                    }
                    Ok(answer) => {
                        record(&member, true);
                        return answer;
                    }
                    Err(HopError::NotSent(why)) => {
                        record(&member, false);
                        last = format!("executor `{}`: {why}", member.info.node);
                    }
                }
            }
            Err(UpstreamError::Unavailable {
                id: server,
                reason: format!("no executor took the call; nothing was sent ({last})"),
            })
        })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        Box::pin(async move {
            let mut tried = Vec::new();
            let mut last = String::new();
            while tried.len() < MAX_TRIES {
                let member = match self.pick(&tried) {
                    Ok(member) => member,
                    Err(why) => {
                        last = if last.is_empty() {
                            why
                        } else {
                            format!("{last}; {why}")
                        };
                        break;
                    }
                };
                tried.push(member.info.node.clone());
                let _counted = Outstanding::new(member.clone());
                match member
                    .remote
                    .try_request(server, request.clone(), options.clone())
                    .await
                {
                    Ok(answer) => {
                        record(&member, true);
                        return answer;
                    }
                    Err(HopError::Lost(why)) => {
                        record(&member, false);
                        return Err(UpstreamError::Remote {
                            id: server.to_string(),
                            code: -32603,
                            message: format!(
                                "executor lost: `{}` stopped answering during the request ({why}); it was not retried",
                                member.info.node
                            ),
                            data: None,
                        });
                    }
                    Err(HopError::NotSent(why)) => {
                        record(&member, false);
                        last = format!("executor `{}`: {why}", member.info.node);
                    }
                }
            }
            Err(UpstreamError::Unavailable {
                id: server.to_string(),
                reason: format!("no executor took the request; nothing was sent ({last})"),
            })
        })
    }
}

impl Scripts for ExecutorFleet {
    fn execute(
        &self,
        request: ExecuteRequest,
        view: Arc<ToolView>,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            let mut tried = Vec::new();
            let mut last = String::new();
            while tried.len() < MAX_TRIES {
                let sticky = self.sticky(&request.tenant, &request.session, &tried);
                let member = match sticky.map_or_else(|| self.pick(&tried), Ok) {
                    Ok(member) => member,
                    Err(why) => {
                        last = if last.is_empty() {
                            why
                        } else {
                            format!("{last}; {why}")
                        };
                        break;
                    }
                };
                tried.push(member.info.node.clone());
                self.remember(&request.tenant, &request.session, &member.info.node);
                let _counted = Outstanding::new(member.clone());
                let answer = member
                    .remote
                    .try_execute(request.clone(), view.clone(), cancel.clone(), sink.clone())
                    .await;
                match answer {
                    // Refused before running: another executor may take it.
                    Ok(Err(ExecuteError::Busy { reason })) => {
                        last = format!("executor `{}` is busy: {reason}", member.info.node);
                    }
                    Err(HopError::Lost(reason)) => {
                        record(&member, false);
                        return Err(ExecuteError::Failed {
                            reason: format!(
                                "executor lost: `{}` stopped answering while the script ran ({reason}); the script was not re-run, and the tool calls it made before that may have run",
                                member.info.node
                            ),
                        });
                    }
                    Ok(answer) => {
                        record(&member, true);
                        return answer;
                    }
                    Err(HopError::NotSent(why)) => {
                        record(&member, false);
                        last = format!("executor `{}`: {why}", member.info.node);
                    }
                }
            }
            Err(ExecuteError::Unreachable {
                reason: format!("no executor took the script; nothing ran ({last})"),
            })
        })
    }
}
