//! Session records in etcd (`/quiver/sessions/<id>`): what lets a 2025-era
//! MCP session (one opened by `initialize`, named by `Mcp-Session-Id`) be
//! served by any edge, and outlive the edge that opened it. A record holds
//! the tenant that opened the session and the client's `initialize`
//! parameters; an edge that is asked for a session it does not hold reads
//! the record, checks the caller's tenant against it, and hands the request
//! to the edge the record names as the session's holder, or, when that edge
//! is gone, takes the session up itself (replaying the handshake) and names
//! itself. Each record lives under an etcd lease of the session's idle
//! time, kept alive by the edges that serve it; a `DELETE` removes it, and
//! every edge watching the prefix closes its copy of the session.

use std::time::Duration;

use etcd_client::{Client, EventType, GetOptions, PutOptions};
use rmcp::model::InitializeRequestParams;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::membership;

/// The prefix of every session record.
pub const PREFIX: &str = "/quiver/sessions/";

/// One session's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The tenant that opened the session; only its credentials continue it.
    pub tenant: String,
    /// What the client sent in `initialize`, replayed where the session is
    /// taken up.
    pub initialize: InitializeRequestParams,
    /// The edge (node name) that serves the session: every other edge hands
    /// it the session's requests while it is in the fleet.
    #[serde(default)]
    pub holder: String,
    /// The resources the session subscribed to: an edge that takes the
    /// session up subscribes to them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
}

/// A record as read, with the etcd lease that keeps it.
#[derive(Debug, Clone)]
pub struct StoredSession {
    /// The record.
    pub record: SessionRecord,
    /// The lease it lives under.
    pub lease: i64,
}

/// Why a session record could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionRecordError {
    /// etcd could not be reached.
    #[error("etcd is unreachable: {0}")]
    Unreachable(#[from] membership::MembershipError),
    /// etcd refused the request.
    #[error("etcd refused the request: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// The stored record does not parse.
    #[error("the session record does not parse: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// The watch on the prefix ended or was cancelled by etcd.
    #[error("the watch on {PREFIX} ended: {0}")]
    WatchEnded(String),
}

/// Session records in the etcd at some endpoints.
pub struct SessionRecords {
    client: membership::LazyClient,
    /// How long a session lives without a request.
    idle: Duration,
}

impl SessionRecords {
    /// Records in the etcd at `endpoints`, each forgotten after `idle`
    /// without a request (rounded up to whole seconds).
    pub fn new(endpoints: Vec<String>, idle: Duration) -> SessionRecords {
        SessionRecords {
            client: membership::LazyClient::new(endpoints),
            idle,
        }
    }

    /// How long a session lives without a request.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    async fn client(&self) -> Result<Client, SessionRecordError> {
        Ok(self.client.get().await?)
    }

    /// Writes `record` as session `id`'s, under a new lease of the idle
    /// time; the lease.
    pub async fn put(&self, id: &str, record: &SessionRecord) -> Result<i64, SessionRecordError> {
        let mut client = self.client().await?;
        let ttl = i64::try_from(self.idle.as_secs().max(1)).unwrap_or(i64::MAX);
        let lease = client.lease_grant(ttl, None).await?.id();
        self.put_leased(id, record, lease).await?;
        Ok(lease)
    }

    /// Writes `record` as session `id`'s under its existing `lease`.
    pub async fn put_leased(
        &self,
        id: &str,
        record: &SessionRecord,
        lease: i64,
    ) -> Result<(), SessionRecordError> {
        let mut client = self.client().await?;
        let value = serde_json::to_vec(record)?;
        client
            .put(
                format!("{PREFIX}{id}"),
                value,
                Some(PutOptions::new().with_lease(lease)),
            )
            .await?;
        Ok(())
    }

    /// Session `id`'s record, if etcd holds one.
    pub async fn get(&self, id: &str) -> Result<Option<StoredSession>, SessionRecordError> {
        let mut client = self.client().await?;
        let found = client.get(format!("{PREFIX}{id}"), None).await?;
        match found.kvs().first() {
            Some(kv) => Ok(Some(StoredSession {
                record: serde_json::from_slice(kv.value())?,
                lease: kv.lease(),
            })),
            None => Ok(None),
        }
    }

    /// Removes session `id`'s record (the session was ended).
    pub async fn delete(&self, id: &str) -> Result<(), SessionRecordError> {
        let mut client = self.client().await?;
        client.delete(format!("{PREFIX}{id}"), None).await?;
        Ok(())
    }

    /// Restarts the idle time of the record under `lease`.
    pub async fn touch(&self, lease: i64) -> Result<(), SessionRecordError> {
        let mut client = self.client().await?;
        let (mut keeper, mut acks) = client.lease_keep_alive(lease).await?;
        keeper.keep_alive().await?;
        acks.message().await?;
        Ok(())
    }

    /// Calls `changed` with the id of every session whose record changes
    /// from now until `stop`: with its new record, or `None` when the record
    /// went (the session ended on any edge, or idled past its lease).
    /// Returns when the watch fails; the caller watches again.
    pub async fn watch(
        &self,
        changed: &(dyn Fn(&str, Option<SessionRecord>) + Send + Sync),
        stop: &CancellationToken,
    ) -> Result<(), SessionRecordError> {
        let mut client = self.client().await?;
        let now = client
            .get(
                PREFIX,
                Some(
                    GetOptions::new()
                        .with_prefix()
                        .with_keys_only()
                        .with_limit(1),
                ),
            )
            .await?;
        let revision = now.header().map_or(0, |h| h.revision());
        let mut watch = membership::watch_after(&mut client, PREFIX, revision).await?;
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                message = watch.message() => message?,
            };
            let Some(response) = message else {
                return Err(SessionRecordError::WatchEnded(
                    "etcd closed the stream".into(),
                ));
            };
            if response.canceled() {
                return Err(SessionRecordError::WatchEnded(
                    response.cancel_reason().to_string(),
                ));
            }
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                let Some(id) = kv.key_str().ok().and_then(|k| k.strip_prefix(PREFIX)) else {
                    continue;
                };
                match event.event_type() {
                    EventType::Delete => changed(id, None),
                    EventType::Put => match serde_json::from_slice(kv.value()) {
                        Ok(record) => changed(id, Some(record)),
                        Err(error) => {
                            tracing::warn!(id, %error, "a session record that does not parse")
                        }
                    },
                }
            }
        }
    }
}
