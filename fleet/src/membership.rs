//! Fleet membership in etcd: every edge and executor registers itself under
//! a lease, and edges watch the executors' records to route.
//!
//! A member's record lives at `/quiver/members/<role>/<node>`, attached to a
//! lease of [`LEASE_TTL_SECS`] that the member keeps alive every second. A
//! member that dies stops keeping it alive, and etcd deletes its record when
//! the lease runs out; a member that stops gracefully revokes its lease, and
//! the record goes at once. The record is rewritten whenever it changes (its
//! load, its manifest, its readiness while it drains).
//!
//! When etcd cannot be reached nothing fails: a registration retries with
//! back-off and registers afresh (a new lease) when etcd returns; a follower
//! keeps the membership it last saw (no lease can expire while etcd is
//! down, so that is still etcd's view) and reads everything again on return.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use etcd_client::{
    Client, ConnectOptions, EventType, GetOptions, PutOptions, WatchOptions, WatchResponse,
};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The lease of a member's record, in seconds: a member that died is gone
/// from the membership this long after its last keep-alive at most.
pub const LEASE_TTL_SECS: i64 = 3;
/// Where members' records live.
pub const PREFIX: &str = "/quiver/members/";
/// How often a registration keeps its lease alive.
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(1);
/// How often a registration looks for a changed record.
const RECORD_EVERY: Duration = Duration::from_millis(250);
/// Time allowed to connect to etcd, and for each request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest pause between attempts to reach etcd.
const LONGEST_BACKOFF: Duration = Duration::from_secs(2);

/// What a member says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRecord {
    /// Its unique name in the fleet.
    pub node: String,
    /// `executor` or `edge` (in JSON).
    pub role: quiver_proto::node_role::NodeRole,
    /// Executors: where they serve `quiver.v1.Executor`; edges: their MCP URL.
    pub address: String,
    /// Most requests (executors: scripts) it runs at once.
    pub capacity: u32,
    /// Requests it runs now.
    pub load: u32,
    /// The manifest version it holds.
    pub manifest_version: u64,
    /// The stub hash it computed for that manifest.
    pub stub_hash: String,
    /// Whether it takes work (false while it starts or drains).
    pub ready: bool,
}

impl MemberRecord {
    /// Its key in etcd.
    pub fn key(&self) -> String {
        format!("{PREFIX}{}/{}", self.role, self.node)
    }
}

/// Why etcd did not do what membership asked of it. Registrations and
/// followers retry on it; one-off reads ([`members`]) return it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MembershipError {
    /// etcd could not be reached at any endpoint: check the endpoints and
    /// that etcd runs.
    #[error("connecting: {0}")]
    Connect(#[source] etcd_client::Error),
    /// A request to etcd failed.
    #[error("{doing}: {source}")]
    Request {
        /// What was asked (`granting a lease`, `reading /quiver/members/`).
        doing: String,
        /// etcd's error.
        source: etcd_client::Error,
    },
    /// etcd did not acknowledge a keep-alive in time.
    #[error("keep-alive: no answer")]
    KeepAliveUnanswered,
    /// etcd closed the keep-alive stream.
    #[error("keep-alive: the stream ended")]
    KeepAliveEnded,
    /// The member's lease ran out before it was kept alive.
    #[error("the lease expired")]
    LeaseExpired,
    /// etcd closed the watch.
    #[error("the watch ended")]
    WatchEnded,
    /// etcd cancelled the watch (compacted past it, or restarted).
    #[error("the watch was cancelled ({reason})")]
    WatchCancelled {
        /// etcd's reason.
        reason: String,
    },
    /// A member's record could not be encoded.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
}

impl MembershipError {
    /// A request that failed while `doing` something.
    fn request(doing: impl Into<String>) -> impl FnOnce(etcd_client::Error) -> MembershipError {
        let doing = doing.into();
        move |source| MembershipError::Request { doing, source }
    }
}

/// Whether etcd answered lately, for `/status`.
#[derive(Debug, Clone, Serialize)]
pub struct EtcdStatus {
    /// The endpoints used.
    pub endpoints: Vec<String>,
    /// Whether the last attempt reached etcd.
    pub connected: bool,
    /// Milliseconds since etcd last answered (absent: never).
    pub last_answer_ms: Option<u64>,
    /// The last error, while disconnected.
    pub error: Option<String>,
}

#[derive(Default)]
struct Contact {
    connected: bool,
    last_answer: Option<Instant>,
    error: Option<String>,
}

/// Shared record of whether etcd answers.
#[derive(Clone)]
struct ContactLog {
    endpoints: Vec<String>,
    state: Arc<Mutex<Contact>>,
}

impl ContactLog {
    fn new(endpoints: &[String]) -> ContactLog {
        ContactLog {
            endpoints: endpoints.to_vec(),
            state: Arc::default(),
        }
    }

    fn answered(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if !state.connected {
            tracing::info!(endpoints = ?self.endpoints, "etcd reached");
        }
        *state = Contact {
            connected: true,
            last_answer: Some(Instant::now()),
            error: None,
        };
    }

    fn failed(&self, error: &MembershipError) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.connected || state.error.is_none() {
            tracing::warn!(endpoints = ?self.endpoints, "etcd unreachable (retrying): {error}");
        }
        state.connected = false;
        state.error = Some(error.to_string());
    }

    fn status(&self) -> EtcdStatus {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        EtcdStatus {
            endpoints: self.endpoints.clone(),
            connected: state.connected,
            last_answer_ms: state
                .last_answer
                .map(|at| u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX)),
            error: state.error.clone(),
        }
    }
}

/// How often an idle-looking connection to etcd is pinged (HTTP/2 PING),
/// and how long an answer may take before the connection counts as dead.
/// etcd's servers refuse pings more often than `--grpc-keepalive-min-time`
/// (5 s by default, in 3.4 and 3.5): they answer too-frequent pings with
/// GOAWAY `too_many_pings` and close the connection, which broke every
/// watch every 4 to 7 s when this was 1 s. Pings go only while a call or a
/// watch is open, as etcd's enforcement (`PermitWithoutStream: false`)
/// also wants.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// See [`KEEP_ALIVE_INTERVAL`].
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A client of the etcd at some endpoints, connected on first use and then
/// shared (etcd's client multiplexes): what the session records, the task
/// records and the executors' stash replica hold.
pub struct LazyClient {
    endpoints: Vec<String>,
    client: tokio::sync::Mutex<Option<Client>>,
}

impl LazyClient {
    /// A client of the etcd at `endpoints`, not connected yet.
    pub fn new(endpoints: Vec<String>) -> LazyClient {
        LazyClient {
            endpoints,
            client: tokio::sync::Mutex::new(None),
        }
    }

    /// The client, connecting it ([`connect`]) if no connection succeeded
    /// yet.
    pub async fn get(&self) -> Result<Client, MembershipError> {
        let mut held = self.client.lock().await;
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        let client = connect(&self.endpoints).await?;
        *held = Some(client.clone());
        Ok(client)
    }
}

/// A client of the etcd at `endpoints` (`host:port` or URLs), with this
/// module's timeouts: 2 s to connect and per request, and keep-alive pings
/// etcd accepts ([`KEEP_ALIVE_INTERVAL`]).
pub async fn connect(endpoints: &[String]) -> Result<Client, MembershipError> {
    let options = ConnectOptions::new()
        .with_connect_timeout(REQUEST_TIMEOUT)
        .with_timeout(REQUEST_TIMEOUT)
        .with_keep_alive(KEEP_ALIVE_INTERVAL, KEEP_ALIVE_TIMEOUT)
        .with_keep_alive_while_idle(false);
    let urls: Vec<String> = endpoints
        .iter()
        .map(|e| {
            if e.contains("://") {
                e.clone()
            } else {
                format!("http://{e}")
            }
        })
        .collect();
    Client::connect(urls, Some(options))
        .await
        .map_err(MembershipError::Connect)
}

/// Waits `pause` (doubling it for next time) unless `stop` comes first;
/// false when stopped.
async fn back_off(pause: &mut Duration, stop: &CancellationToken) -> bool {
    let wait = *pause;
    *pause = (*pause * 2).min(LONGEST_BACKOFF);
    tokio::select! {
        () = tokio::time::sleep(wait) => true,
        () = stop.cancelled() => false,
    }
}

/// A member's registration; [`Registration::deregister`] ends it.
pub struct Registration {
    stop: CancellationToken,
    task: JoinHandle<()>,
    contact: ContactLog,
}

impl Registration {
    /// Whether etcd answers this registration.
    pub fn status(&self) -> EtcdStatus {
        self.contact.status()
    }

    /// Removes the record at once (revokes its lease) and stops.
    pub async fn deregister(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Registers the member `record` describes (asked again every 250 ms, and
/// written when it changed) under a lease at `endpoints`, until
/// [`Registration::deregister`]. Never fails: while etcd is unreachable it
/// retries.
pub fn register(
    endpoints: Vec<String>,
    record: impl Fn() -> MemberRecord + Send + Sync + 'static,
) -> Registration {
    let stop = CancellationToken::new();
    let contact = ContactLog::new(&endpoints);
    let task = tokio::spawn(keep_registered(
        endpoints,
        Box::new(record),
        stop.clone(),
        contact.clone(),
    ));
    Registration {
        stop,
        task,
        contact,
    }
}

type RecordFn = Box<dyn Fn() -> MemberRecord + Send + Sync>;

async fn keep_registered(
    endpoints: Vec<String>,
    record: RecordFn,
    stop: CancellationToken,
    contact: ContactLog,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        match registered_once(&endpoints, &record, &stop, &contact).await {
            Ok(()) => return,
            Err(e) => contact.failed(&e),
        }
        if !back_off(&mut pause, &stop).await {
            return;
        }
    }
}

/// One registration: a lease, the record under it, kept alive and current
/// until `stop` (then revoked: Ok) or until etcd fails (Err).
async fn registered_once(
    endpoints: &[String],
    record: &RecordFn,
    stop: &CancellationToken,
    contact: &ContactLog,
) -> Result<(), MembershipError> {
    let mut client = connect(endpoints).await?;
    let lease = client
        .lease_grant(LEASE_TTL_SECS, None)
        .await
        .map_err(MembershipError::request("granting a lease"))?
        .id();
    let (mut keeper, mut acks) = client
        .lease_keep_alive(lease)
        .await
        .map_err(MembershipError::request("keeping the lease alive"))?;
    let mut written = record();
    let key = written.key();
    put(&mut client, &key, &written, lease).await?;
    contact.answered();
    tracing::info!(%key, lease, "registered in etcd");
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE_EVERY);
    let mut look = tokio::time::interval(RECORD_EVERY);
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                // Gone at once, rather than when the lease runs out.
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, client.lease_revoke(lease)).await;
                tracing::info!(%key, "deregistered from etcd");
                return Ok(());
            }
            _ = keep_alive.tick() => {
                keeper.keep_alive().await.map_err(MembershipError::request("keep-alive"))?;
                let ack = tokio::time::timeout(REQUEST_TIMEOUT, acks.message())
                    .await
                    .map_err(|_| MembershipError::KeepAliveUnanswered)?
                    .map_err(MembershipError::request("keep-alive"))?
                    .ok_or(MembershipError::KeepAliveEnded)?;
                if ack.ttl() <= 0 {
                    return Err(MembershipError::LeaseExpired);
                }
                contact.answered();
            }
            _ = look.tick() => {
                let now = record();
                if now != written {
                    put(&mut client, &key, &now, lease).await?;
                    written = now;
                }
            }
        }
    }
}

async fn put(
    client: &mut Client,
    key: &str,
    record: &MemberRecord,
    lease: i64,
) -> Result<(), MembershipError> {
    let value = serde_json::to_vec(record)?;
    client
        .put(key, value, Some(PutOptions::new().with_lease(lease)))
        .await
        .map_err(MembershipError::request(format!("writing {key}")))?;
    Ok(())
}

/// Follows the members' records at `endpoints`.
pub struct Follower {
    contact: ContactLog,
}

impl Follower {
    /// Whether etcd answers this follower.
    pub fn status(&self) -> EtcdStatus {
        self.contact.status()
    }
}

/// Calls `on_change` with every member's record (all roles) whenever the
/// membership in etcd changes, until `shutdown`. While etcd is unreachable
/// `on_change` is not called: the last membership stands.
pub fn follow(
    endpoints: Vec<String>,
    on_change: impl Fn(Vec<MemberRecord>) + Send + Sync + 'static,
    shutdown: CancellationToken,
) -> Follower {
    let contact = ContactLog::new(&endpoints);
    let log = contact.clone();
    tokio::spawn(async move {
        let mut pause = Duration::from_millis(100);
        loop {
            match followed_once(&endpoints, &on_change, &shutdown, &log).await {
                Ok(()) => return,
                Err(e) => log.failed(&e),
            }
            if !back_off(&mut pause, &shutdown).await {
                return;
            }
        }
    });
    Follower { contact }
}

/// Every member's record in the etcd at `endpoints` now (one read).
pub async fn members(endpoints: &[String]) -> Result<Vec<MemberRecord>, MembershipError> {
    let mut client = connect(endpoints).await?;
    let all = client
        .get(PREFIX, Some(GetOptions::new().with_prefix()))
        .await
        .map_err(MembershipError::request(format!("reading {PREFIX}")))?;
    Ok(all
        .kvs()
        .iter()
        .filter_map(|kv| parse(kv.key(), kv.value()))
        .collect())
}

async fn followed_once(
    endpoints: &[String],
    on_change: &(dyn Fn(Vec<MemberRecord>) + Send + Sync),
    shutdown: &CancellationToken,
    contact: &ContactLog,
) -> Result<(), MembershipError> {
    let mut client = connect(endpoints).await?;
    let all = client
        .get(PREFIX, Some(GetOptions::new().with_prefix()))
        .await
        .map_err(MembershipError::request(format!("reading {PREFIX}")))?;
    let revision = all.header().map_or(0, |h| h.revision());
    let mut members: BTreeMap<Vec<u8>, MemberRecord> = BTreeMap::new();
    for kv in all.kvs() {
        if let Some(record) = parse(kv.key(), kv.value()) {
            members.insert(kv.key().to_vec(), record);
        }
    }
    on_change(members.values().cloned().collect());
    contact.answered();
    let mut watch = watch_after(&mut client, PREFIX, revision)
        .await
        .map_err(MembershipError::request(format!("watching {PREFIX}")))?;
    loop {
        let message = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            message = watch.message() => message,
        };
        let response: WatchResponse = message
            .map_err(MembershipError::request("watch"))?
            .ok_or(MembershipError::WatchEnded)?;
        if response.canceled() {
            // Compacted past our revision, or etcd restarted: read it all again.
            return Err(MembershipError::WatchCancelled {
                reason: response.cancel_reason().to_string(),
            });
        }
        contact.answered();
        if response.events().is_empty() {
            continue;
        }
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            match event.event_type() {
                EventType::Put => {
                    if let Some(record) = parse(kv.key(), kv.value()) {
                        members.insert(kv.key().to_vec(), record);
                    }
                }
                EventType::Delete => {
                    members.remove(kv.key());
                }
            }
        }
        on_change(members.values().cloned().collect());
    }
}

fn parse(key: &[u8], value: &[u8]) -> Option<MemberRecord> {
    match serde_json::from_slice(value) {
        Ok(record) => Some(record),
        Err(e) => {
            tracing::warn!(key = %String::from_utf8_lossy(key), "ignoring a member record that does not parse: {e}");
            None
        }
    }
}

/// A watch of every key under `prefix` that changes after `revision`.
pub(crate) async fn watch_after(
    client: &mut Client,
    prefix: &str,
    revision: i64,
) -> Result<etcd_client::WatchStream, etcd_client::Error> {
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(revision + 1);
    client.watch(prefix, Some(options)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_lives_under_its_role_and_name() {
        let record = MemberRecord {
            node: "executor-1".into(),
            role: quiver_proto::node_role::NodeRole::Executor,
            address: "http://10.0.0.5:7070".into(),
            capacity: 8,
            load: 0,
            manifest_version: 3,
            stub_hash: "ab".into(),
            ready: true,
        };
        assert_eq!(record.key(), "/quiver/members/executor/executor-1");
        let round: MemberRecord =
            serde_json::from_slice(&serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(round, record);
    }

    #[test]
    fn a_record_that_does_not_parse_is_skipped() {
        assert!(parse(b"/quiver/members/x", b"{not json").is_none());
    }
}
