//! The sessions of 2025-era clients (opened by `initialize`, named by
//! `Mcp-Session-Id`) as the edge keeps them: rmcp's in-memory sessions,
//! wrapped so that
//! - ending a session (`DELETE`, on this edge or any other) stops its
//!   requests at once: each request's cancellation is tied to its session,
//!   where rmcp alone lets handlers drain for seconds;
//! - with etcd (`--etcd`), any edge serves any session: the edge that opens
//!   a session writes its record (tenant, `initialize` parameters, holder,
//!   subscriptions: [`quiver_fleet::session_records`]); another edge
//!   asked for it refuses a caller of another tenant exactly as an unknown
//!   session and hands the request to the holder, or, with the holder gone,
//!   takes the session up (rmcp's restore replays the handshake). Records
//!   expire after the idle time unless a request touches them.
//!
//! Without etcd a session lives on the edge that opened it, as before.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    extract::{Request, State},
    http::StatusCode,
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures::Stream;
use quiver_fleet::session_records::{SessionRecord, SessionRecords, StoredSession};
use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionRestoreMarker,
        SessionState, SessionStore, SessionStoreError, local::LocalSessionManager,
    },
};
use tokio_util::sync::CancellationToken;

use crate::{auth::Principal, peers::EdgePeers};

/// How many events of each stream a session keeps for a client that
/// reconnects with `Last-Event-ID` (rmcp's default is 16).
pub const REPLAY_EVENTS: usize = 64;

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// What this edge knows of one session.
struct Held {
    /// The tenant that opened it, once known.
    tenant: Option<String>,
    /// Cancelled when the session ends: its requests stop.
    ended: CancellationToken,
    /// The etcd lease of its record, when it has one.
    lease: Option<i64>,
    /// When this edge last restarted the record's idle time.
    touched: Instant,
    /// The session's record as this edge last wrote or read it.
    record: Option<SessionRecord>,
}

impl Held {
    fn new() -> Held {
        Held {
            tenant: None,
            ended: CancellationToken::new(),
            lease: None,
            touched: Instant::now(),
            record: None,
        }
    }
}

/// The sessions this edge knows, by id: shared by the session manager,
/// the request layer and every session handler (through the gateway).
///
/// Only a session this edge opened (`initialize`) or took up (its record
/// read from etcd) has an entry: an id a request merely names never gets
/// one, so a client cannot grow this table by inventing ids.
#[derive(Default)]
pub struct SessionRegistry {
    held: Mutex<Sessions>,
}

/// The sessions, and how many each tenant has.
#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Held>,
    per_tenant: HashMap<String, usize>,
}

impl Sessions {
    fn get(&self, id: &str) -> Option<&Held> {
        self.by_id.get(id)
    }

    fn remove(&mut self, id: &str) -> Option<Held> {
        let held = self.by_id.remove(id)?;
        if let Some(tenant) = &held.tenant {
            self.uncount(tenant);
        }
        Some(held)
    }

    fn uncount(&mut self, tenant: &str) {
        if let Some(n) = self.per_tenant.get_mut(tenant) {
            *n -= 1;
            if *n == 0 {
                self.per_tenant.remove(tenant);
            }
        }
    }

    /// Session `id` belongs to `tenant` (counted once per session).
    fn set_tenant(&mut self, id: &str, tenant: Option<String>) {
        let Some(held) = self.by_id.get_mut(id) else {
            return;
        };
        let before = std::mem::replace(&mut held.tenant, tenant.clone());
        if before == tenant {
            return;
        }
        if let Some(before) = before {
            self.uncount(&before);
        }
        if let Some(tenant) = tenant {
            *self.per_tenant.entry(tenant).or_default() += 1;
        }
    }
}

impl SessionRegistry {
    /// Runs `f` on session `id`'s entry, made now if there is none: only
    /// for a session that exists (opened here, or its record read).
    fn enter<T>(&self, id: &str, f: impl FnOnce(&mut Held) -> T) -> T {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        f(held.by_id.entry(id.to_string()).or_insert_with(Held::new))
    }

    /// Runs `f` on session `id`'s entry, if it has one.
    fn existing<T>(&self, id: &str, f: impl FnOnce(&mut Held) -> T) -> Option<T> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.by_id.get_mut(id).map(f)
    }

    /// Session `id` (made now if this edge did not know it) belongs to `tenant`.
    fn enter_for(&self, id: &str, tenant: Option<String>) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.by_id.entry(id.to_string()).or_insert_with(Held::new);
        held.set_tenant(id, tenant);
    }

    /// The token cancelled when session `id` ends, if this edge knows it.
    pub(crate) fn ended(&self, id: &str) -> Option<CancellationToken> {
        self.existing(id, |held| held.ended.clone())
    }

    /// Sessions this edge knows.
    pub fn len(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_id
            .len()
    }

    /// Whether this edge knows no session.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sessions this edge knows of tenant `tenant`.
    fn of_tenant(&self, tenant: &str) -> usize {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.per_tenant.get(tenant).copied().unwrap_or(0)
    }

    /// Ends session `id` on this edge: every request of it is cancelled.
    fn end(&self, id: &str) {
        let gone = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(held) = gone {
            held.ended.cancel();
        }
    }

    /// The tenant session `id` belongs to, if this edge knows it.
    fn tenant(&self, id: &str) -> Option<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(id).and_then(|h| h.tenant.clone())
    }

    /// Session `id`'s record and lease as this edge last wrote or read them
    /// (kept current by the watch on the records).
    fn cached(&self, id: &str) -> Option<StoredSession> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let held = held.get(id)?;
        Some(StoredSession {
            record: held.record.clone()?,
            lease: held.lease?,
        })
    }

    /// Remembers session `id`'s record as read or written.
    fn cache(&self, id: &str, stored: &StoredSession) {
        self.enter_for(id, Some(stored.record.tenant.clone()));
        self.enter(id, |held| {
            held.lease = Some(stored.lease);
            held.record = Some(stored.record.clone());
        });
    }

    /// Replaces the remembered record of session `id`, if one is.
    fn recache(&self, id: &str, record: SessionRecord) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = held.by_id.get_mut(id)
            && held.record.is_some()
        {
            held.record = Some(record);
        }
    }

    /// The resources session `id` subscribed to, as its record says.
    pub(crate) fn subscriptions(&self, id: &str) -> Vec<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(id)
            .and_then(|h| h.record.as_ref())
            .map(|r| r.subscriptions.clone())
            .unwrap_or_default()
    }

    /// Notes in session `id`'s record that it subscribed to `uri` (or, with
    /// `subscribed` false, no longer does), so that an edge taking the
    /// session up subscribes again.
    pub(crate) async fn note_subscription(
        &self,
        records: Option<Arc<SessionRecords>>,
        id: &str,
        uri: &str,
        subscribed: bool,
    ) {
        let Some(records) = records else {
            return;
        };
        let changed = self
            .existing(id, |held| {
                let record = held.record.as_mut()?;
                let had = record.subscriptions.iter().any(|u| u == uri);
                match (subscribed, had) {
                    (true, false) => record.subscriptions.push(uri.to_string()),
                    (false, true) => record.subscriptions.retain(|u| u != uri),
                    _ => return None,
                }
                Some((record.clone(), held.lease?))
            })
            .flatten();
        if let Some((record, lease)) = changed
            && let Err(error) = records.put_leased(id, &record, lease).await
        {
            tracing::warn!(%error, "the session's subscriptions were not recorded");
        }
    }
}

/// The most sessions an edge holds, in all and per tenant: an `initialize`
/// past either is refused (503, retry later) and nothing is allocated for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions of every tenant together.
    pub max: usize,
    /// Sessions of one tenant (anonymous callers are one tenant).
    pub per_tenant: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max: 10_000,
            per_tenant: 1_000,
        }
    }
}

/// rmcp's session manager with the edge's ends and, when configured, the
/// fleet's records.
pub struct EdgeSessions {
    local: LocalSessionManager,
    registry: Arc<SessionRegistry>,
    records: Option<Arc<SessionRecords>>,
    /// The fleet's other edges, that hold the sessions they opened or took up.
    peers: Option<Arc<EdgePeers>>,
    /// The largest request body handed to another edge.
    max_body: usize,
    limits: SessionLimits,
}

impl EdgeSessions {
    /// Sessions of this edge, known to `registry`, recorded in `records`,
    /// handed to the edges among `peers` that hold them.
    pub fn new(
        registry: Arc<SessionRegistry>,
        records: Option<Arc<SessionRecords>>,
        peers: Option<Arc<EdgePeers>>,
        max_body: usize,
        limits: SessionLimits,
    ) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.channel_capacity = REPLAY_EVENTS;
        let counted = Arc::downgrade(&registry);
        quiver_telemetry::tables::watch("edge.sessions", limits.max, move || {
            counted.upgrade().map(|r| r.len())
        });
        EdgeSessions {
            local,
            registry,
            records,
            peers,
            max_body,
            limits,
        }
    }

    /// Whether a new session of `tenant` would pass the edge's limits.
    fn has_room(&self, tenant: Option<&str>) -> bool {
        self.registry.len() < self.limits.max
            && tenant.is_none_or(|t| self.registry.of_tenant(t) < self.limits.per_tenant)
    }

    /// The store rmcp restores sessions from, when sessions are recorded.
    pub fn store(&self) -> Option<Arc<dyn SessionStore>> {
        self.records.as_ref().map(|records| {
            Arc::new(RecordStore {
                records: records.clone(),
                registry: self.registry.clone(),
            }) as Arc<dyn SessionStore>
        })
    }

    /// This edge's node name, as records name holders.
    fn me(&self) -> &str {
        self.peers.as_ref().map_or("", |p| p.node())
    }

    /// Closes this edge's copy of every session whose record goes (ended
    /// on another edge, or idle past its lease) or names another holder (it
    /// took the session up while this edge could not be reached), until
    /// `stop`.
    pub fn follow_records(self: &Arc<Self>, stop: CancellationToken) {
        let Some(records) = self.records.clone() else {
            return;
        };
        let sessions = self.clone();
        tokio::spawn(async move {
            let changed = {
                let sessions = sessions.clone();
                move |id: &str, record: Option<SessionRecord>| {
                    if let Some(record) = &record
                        && record.holder == sessions.me()
                    {
                        return;
                    }
                    let sessions = sessions.clone();
                    let id = SessionId::from(id.to_string());
                    tokio::spawn(async move {
                        match record {
                            // Held here: another edge took it up; else remember where.
                            Some(record) if !sessions.holds(&id).await => {
                                sessions.registry.recache(&id, record);
                                return;
                            }
                            _ => {}
                        }
                        sessions.registry.end(&id);
                        let _ = sessions.local.close_session(&id).await;
                    });
                }
            };
            while !stop.is_cancelled() {
                if let Err(error) = records.watch(&changed, &stop).await {
                    tracing::warn!(%error, "watching session records; watching again in 1 s");
                    tokio::select! {
                        () = stop.cancelled() => {}
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        });
    }

    /// Whether this edge holds session `id` in memory.
    async fn holds(&self, id: &str) -> bool {
        self.local
            .sessions
            .read()
            .await
            .contains_key(&SessionId::from(id.to_string()))
    }

    /// Restarts the idle time of session `id`'s record, at most once per
    /// quarter of it.
    fn touch(&self, id: &str) {
        let Some(records) = self.records.clone() else {
            return;
        };
        let every = records.idle() / 4;
        let lease = self
            .registry
            .existing(id, |held| {
                if held.touched.elapsed() < every {
                    return None;
                }
                held.touched = Instant::now();
                held.lease
            })
            .flatten();
        if let Some(lease) = lease {
            tokio::spawn(async move {
                if let Err(error) = records.touch(lease).await {
                    tracing::warn!(%error, "restarting a session record's idle time");
                }
            });
        }
    }
}

/// The tenant of an `initialize` and its parameters.
fn initialize_of(message: &ClientJsonRpcMessage) -> Option<(Option<String>, SessionRecordParts)> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::InitializeRequest(initialize) = &request.request else {
        return None;
    };
    let extensions = &initialize.extensions;
    let tenant = extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .map(|principal| principal.tenant.to_string());
    Some((
        tenant,
        SessionRecordParts {
            params: initialize.params.clone(),
            restored: extensions.get::<SessionRestoreMarker>().is_some(),
        },
    ))
}

/// What an `initialize` says for the record.
struct SessionRecordParts {
    params: rmcp::model::InitializeRequestParams,
    /// A replay of the handshake for a restore, not a client's.
    restored: bool,
}

impl SessionManager for EdgeSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.local.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let initialize = initialize_of(&message);
        let answer = self.local.initialize_session(id, message).await?;
        let Some((tenant, parts)) = initialize else {
            return Ok(answer);
        };
        self.registry.enter_for(id, tenant.clone());
        if let (Some(records), Some(tenant), false) = (&self.records, tenant, parts.restored) {
            let record = SessionRecord {
                tenant,
                initialize: parts.params,
                holder: self.me().to_string(),
                subscriptions: Vec::new(),
            };
            match records.put(id, &record).await {
                Ok(lease) => {
                    self.registry.existing(id, |held| {
                        held.lease = Some(lease);
                        held.touched = Instant::now();
                        held.record = Some(record);
                    });
                }
                Err(error) => tracing::warn!(
                    %error,
                    "the session's record was not written: only this edge can serve it"
                ),
            }
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.registry.end(id);
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        <LocalSessionManager as SessionManager>::create_stream(&self.local, id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        <LocalSessionManager as SessionManager>::create_standalone_stream(&self.local, id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let replay =
            <LocalSessionManager as SessionManager>::resume(&self.local, id, last_event_id.clone())
                .await?;
        // rmcp replays the standalone stream from the client's last event
        // itself: the client has that one.
        Ok(futures::StreamExt::filter(replay, move |event| {
            std::future::ready(event.event_id.as_deref() != Some(last_event_id.as_str()))
        }))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.local.restore_session(id).await
    }
}

/// The fleet's session records as rmcp's restore reads them. The record is
/// written by [`EdgeSessions`] (which knows the tenant), not here.
struct RecordStore {
    records: Arc<SessionRecords>,
    registry: Arc<SessionRegistry>,
}

#[async_trait::async_trait]
impl SessionStore for RecordStore {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        // The request layer has just read (or rewritten) it.
        let stored = match self.registry.cached(id) {
            Some(stored) => Some(stored),
            None => self.records.get(id).await?,
        };
        Ok(stored.map(|stored| {
            self.registry.cache(id, &stored);
            SessionState::new(stored.record.initialize)
        }))
    }

    async fn store(&self, _id: &str, _state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        Ok(self.records.delete(id).await?)
    }
}

/// The answer to a request naming a session this edge cannot serve: the
/// one rmcp gives for an unknown session.
/// Past the session limits: an `initialize` is refused (503, nothing
/// allocated); any other request (a stateless one) goes on.
async fn refuse_initialize(sessions: &EdgeSessions, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, sessions.max_body).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        )
            .into_response();
    };
    let initialize = serde_json::from_slice::<serde_json::Value>(&body).is_ok_and(|message| {
        let is_initialize = |m: &serde_json::Value| m["method"] == "initialize";
        match &message {
            serde_json::Value::Array(batch) => batch.iter().any(is_initialize),
            single => is_initialize(single),
        }
    });
    if !initialize {
        return next
            .run(Request::from_parts(parts, axum::body::Body::from(body)))
            .await;
    }
    tracing::warn!(
        sessions = sessions.registry.len(),
        "an initialize was refused: the edge holds its most sessions"
    );
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [("retry-after", "5"), ("content-type", "application/json")],
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": -32000,
                "message": format!(
                    "this edge holds its most sessions ({} in all, {} per tenant); end idle sessions with DELETE, use the stateless protocol revision, or retry later",
                    sessions.limits.max, sessions.limits.per_tenant
                ),
            },
        })
        .to_string(),
    )
        .into_response()
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The request layer in front of the sessions. A request naming a session
/// of another tenant is answered exactly as one naming no session (404),
/// whichever edge holds it. With records: a session this edge does not hold
/// is handed to the edge that does (the whole HTTP request, its answer
/// streamed back), so that everything the server sends the session goes
/// out through one edge; when that edge is gone or cannot be reached, this
/// edge takes the session up and names itself its holder. A request to a
/// held session restarts its record's idle time.
pub async fn check_session(
    State(sessions): State<Arc<EdgeSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let caller = request
        .extensions()
        .get::<Principal>()
        .map(|p| p.tenant.to_string());
    let Some(id) = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        if request.method() == axum::http::Method::POST && !sessions.has_room(caller.as_deref()) {
            return refuse_initialize(&sessions, request, next).await;
        }
        return next.run(request).await;
    };
    let someone_else = |owner: &str| caller.as_deref().is_some_and(|c| c != owner);
    if let Some(owner) = sessions.registry.tenant(&id)
        && sessions.holds(&id).await
    {
        if someone_else(&owner) {
            return not_found();
        }
        sessions.touch(&id);
        return next.run(request).await;
    }
    let Some(records) = sessions.records.clone() else {
        return next.run(request).await;
    };
    // Where the session is held: as this edge last read it (the watch keeps
    // that current), else as etcd says.
    let cached = sessions.registry.cached(&id);
    let read = match cached {
        Some(stored) => Ok(Some(stored)),
        None => records.get(&id).await,
    };
    let mut stored = match read {
        Ok(Some(stored)) => stored,
        Ok(None) => return next.run(request).await,
        Err(error) => {
            tracing::warn!(%error, "reading a session record");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [("retry-after", "1")],
                "the session store (etcd) is unreachable; retry shortly",
            )
                .into_response();
        }
    };
    if someone_else(&stored.record.tenant) {
        return not_found();
    }
    let mut request = request;
    let holder = stored.record.holder.clone();
    let forwarded = request.headers().contains_key(crate::peers::FORWARDED_BY);
    if holder != sessions.me()
        && !forwarded
        && let Some(peers) = &sessions.peers
        && let Some(base) = peers.url_of(&holder)
    {
        let (parts, body) = request.into_parts();
        let Ok(body) = axum::body::to_bytes(body, sessions.max_body).await else {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            )
                .into_response();
        };
        match peers.try_forward(&base, parts.clone(), body.clone()).await {
            Ok(answer) => return answer,
            Err(error) => {
                tracing::warn!(%error, holder, "the session's edge cannot be reached; taking the session up here");
                request = Request::from_parts(parts, axum::body::Body::from(body));
            }
        }
    }
    if stored.record.holder != sessions.me() {
        stored.record.holder = sessions.me().to_string();
        match records.put(&id, &stored.record).await {
            Ok(lease) => stored.lease = lease,
            Err(error) => tracing::warn!(%error, "naming this edge the session's holder"),
        }
    }
    // rmcp's restore reads it from here (`RecordStore::load`).
    sessions.registry.cache(&id, &stored);
    next.run(request).await
}

/// The session a request names (its `Mcp-Session-Id`), if any.
pub(crate) fn session_of(context: &rmcp::service::RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get(SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
