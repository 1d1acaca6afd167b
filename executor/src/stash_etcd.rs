//! Stashes kept in etcd ([`EtcdStash`]), so they outlive the executor that
//! wrote them: `quiver executor --etcd` replicates its stash store there.
//!
//! An entry lives at `/quiver/stash/<session, hex>/<key>` as
//! `{"value": …, "expires_ms": …}` (Unix milliseconds), attached to a lease of
//! its TTL so that etcd drops it when it expires. The session's name is
//! hex-encoded so that one session's prefix is never another's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client::{Client, GetOptions, PutOptions};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::stash::{ReplicaEntry, ReplicaSnapshot, StashReplica};

/// Where stashes live in etcd.
pub const PREFIX: &str = "/quiver/stash/";

/// Stashes in the etcd at some endpoints; connects at first use, and again
/// after a failed attempt to.
pub struct EtcdStash {
    endpoints: Vec<String>,
    client: tokio::sync::Mutex<Option<Client>>,
}

impl EtcdStash {
    /// Stashes in the etcd at `endpoints` (`host:port` or URLs).
    pub fn new(endpoints: Vec<String>) -> EtcdStash {
        EtcdStash {
            endpoints,
            client: tokio::sync::Mutex::new(None),
        }
    }

    async fn client(&self) -> Result<Client, String> {
        let mut held = self.client.lock().await;
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        let client = quiver_contract::membership::connect(&self.endpoints)
            .await
            .map_err(|e| format!("etcd: {e}"))?;
        *held = Some(client.clone());
        Ok(client)
    }
}

/// The prefix of `session`'s entries.
pub fn session_prefix(session: &str) -> String {
    format!("{PREFIX}{}/", hex::encode(session))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl StashReplica for EtcdStash {
    fn load<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<ReplicaSnapshot, String>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let prefix = session_prefix(session);
            let answer = client
                .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                .await
                .map_err(|e| format!("etcd: reading the stash: {e}"))?;
            let revision = answer.header().map_or(0, |h| h.revision());
            let now = now_ms();
            let mut entries = Vec::new();
            for kv in answer.kvs() {
                let Some(key) = kv.key().strip_prefix(prefix.as_bytes()) else {
                    continue;
                };
                let Ok(key) = String::from_utf8(key.to_vec()) else {
                    continue;
                };
                let Ok(mut stored) = serde_json::from_slice::<Value>(kv.value()) else {
                    continue;
                };
                let expires = stored["expires_ms"].as_u64().unwrap_or(0);
                if expires <= now {
                    continue;
                }
                entries.push(ReplicaEntry {
                    key,
                    value: stored["value"].take(),
                    ttl: Duration::from_millis(expires - now),
                });
            }
            Ok(ReplicaSnapshot { entries, revision })
        })
    }

    fn put<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        value: &'a Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<i64, String>> {
        Box::pin(async move {
            // etcd's leases count whole seconds; a value that is already
            // expired is simply not there.
            let secs = ttl.as_secs();
            if secs == 0 {
                return self.delete(session, key).await;
            }
            let mut client = self.client().await?;
            let lease = client
                .lease_grant(i64::try_from(secs).unwrap_or(i64::MAX), None)
                .await
                .map_err(|e| format!("etcd: granting the entry's lease: {e}"))?
                .id();
            let stored = json!({"value": value, "expires_ms": now_ms() + secs * 1_000});
            let answer = client
                .put(
                    format!("{}{key}", session_prefix(session)),
                    stored.to_string(),
                    Some(PutOptions::new().with_lease(lease)),
                )
                .await
                .map_err(|e| format!("etcd: writing the entry: {e}"))?;
            Ok(answer.header().map_or(0, |h| h.revision()))
        })
    }

    fn delete<'a>(&'a self, session: &'a str, key: &'a str) -> BoxFuture<'a, Result<i64, String>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let answer = client
                .delete(format!("{}{key}", session_prefix(session)), None)
                .await
                .map_err(|e| format!("etcd: removing the entry: {e}"))?;
            Ok(answer.header().map_or(0, |h| h.revision()))
        })
    }
}
