//! Stashes kept in etcd ([`EtcdStash`]), so they outlive the executor that
//! wrote them: `quiver executor --etcd` replicates its stash store there.
//!
//! An entry lives at `/quiver/stash/<session, hex>/<key>` as
//! `{"value": …, "expires_ms": …}` (Unix milliseconds), attached to a lease of
//! its TTL so that etcd drops it when it expires. The session's name is
//! hex-encoded so that one session's prefix is never another's.
//!
//! Tenants' stash quotas hold across the fleet. Beside each entry, under the
//! same lease, `/quiver/stash-size/<tenant, hex>/<session, hex>/<key>` holds
//! its size, so a tenant's holding is one range read; and every write that
//! could grow a tenant's holding bumps `/quiver/stash-epoch/<tenant, hex>` in
//! the same transaction, on condition that the epoch is the one its quota
//! check read. Two executors writing for one tenant at once therefore cannot
//! both pass the check on the same figures: one retries on fresh ones. An
//! executor remembers the last figures it read or wrote, so a write reads
//! the tenant's holding again only when another executor grew it or when
//! the remembered figures (which deletes and expiry only make larger than
//! the truth) would refuse it.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::{
    stash::{
        ReplicaEntry, ReplicaError, ReplicaSnapshot, ReplicaUnavailable, StashError, StashReplica,
        tenant_of,
    },
    stash_ledger::StashAmount,
};

/// The replica, as errors name it.
const REPLICA: &str = "etcd";

/// A request to etcd that failed while `doing` something.
fn failed(doing: &'static str) -> impl FnOnce(etcd_client::Error) -> ReplicaUnavailable {
    move |e| ReplicaUnavailable::Failed {
        replica: REPLICA,
        doing,
        source: e.into(),
    }
}

/// Where stashes live in etcd.
pub const PREFIX: &str = "/quiver/stash/";

/// Where entries' sizes live, by tenant.
pub const SIZE_PREFIX: &str = "/quiver/stash-size/";

/// Where each tenant's write epoch lives.
pub const EPOCH_PREFIX: &str = "/quiver/stash-epoch/";

/// Attempts at a write whose quota check another executor's write overtook.
const WRITE_ATTEMPTS: usize = 8;

/// A tenant's holding across the fleet as last read or written here.
#[derive(Debug, Clone, Copy, Default)]
struct FleetHolding {
    held: StashAmount,
    /// The epoch key's mod revision the figures go with (0: no epoch yet).
    epoch: i64,
}

/// Stashes in the etcd at some endpoints; connects at first use, and again
/// after a failed attempt to.
pub struct EtcdStash {
    client: quiver_fleet::membership::LazyClient,
    holdings: Mutex<HashMap<String, FleetHolding>>,
}

impl EtcdStash {
    /// Stashes in the etcd at `endpoints` (`host:port` or URLs).
    pub fn new(endpoints: Vec<String>) -> EtcdStash {
        EtcdStash {
            client: quiver_fleet::membership::LazyClient::new(endpoints),
            holdings: Mutex::new(HashMap::new()),
        }
    }

    fn remembered(&self, tenant: &str) -> Option<FleetHolding> {
        self.holdings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tenant)
            .copied()
    }

    fn remember(&self, tenant: &str, holding: Option<FleetHolding>) {
        let mut holdings = self.holdings.lock().unwrap_or_else(|p| p.into_inner());
        match holding {
            Some(h) => holdings.insert(tenant.to_string(), h),
            None => holdings.remove(tenant),
        };
    }

    /// The tenant's holding as etcd has it now, and the size of `entry`
    /// (its size key) if it exists. The epoch is read first: a write landing
    /// between the two reads makes the figures newer than the epoch, and the
    /// write they check is then retried, never let through on old figures.
    async fn read_holding(
        &self,
        client: &mut Client,
        tenant: &str,
        entry: &str,
    ) -> Result<(FleetHolding, Option<usize>), ReplicaUnavailable> {
        let epoch = client
            .get(epoch_key(tenant), None)
            .await
            .map_err(failed("reading the tenant's stash epoch"))?
            .kvs()
            .first()
            .map_or(0, |kv| kv.mod_revision());
        let prefix = tenant_size_prefix(tenant);
        let sizes = client
            .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(failed("reading the tenant's stash sizes"))?;
        let mut held = StashAmount::default();
        let mut existing = None;
        for kv in sizes.kvs() {
            let bytes = std::str::from_utf8(kv.value())
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            held = StashAmount::new(held.bytes + bytes, held.keys + 1);
            if kv.key() == entry.as_bytes() {
                existing = Some(bytes);
            }
        }
        Ok((FleetHolding { held, epoch }, existing))
    }

    async fn client(&self) -> Result<Client, ReplicaUnavailable> {
        self.client
            .get()
            .await
            .map_err(|e| ReplicaUnavailable::Unreachable {
                replica: REPLICA,
                source: e.into(),
            })
    }
}

/// The prefix of `session`'s entries.
pub fn session_prefix(session: &str) -> String {
    format!("{PREFIX}{}/", hex::encode(session))
}

/// The prefix of the size keys of `tenant`'s entries.
fn tenant_size_prefix(tenant: &str) -> String {
    format!("{SIZE_PREFIX}{}/", hex::encode(tenant))
}

/// The size key of `session`'s entry `key`.
fn size_key(session: &str, key: &str) -> String {
    format!(
        "{}{}/{key}",
        tenant_size_prefix(tenant_of(session)),
        hex::encode(session)
    )
}

/// The epoch key of `tenant`.
fn epoch_key(tenant: &str) -> String {
    format!("{EPOCH_PREFIX}{}", hex::encode(tenant))
}

/// Whether `held` grown by `grow` stays within `quota`; else the refusal.
fn within(
    tenant: &str,
    held: StashAmount,
    grow: StashAmount,
    quota: StashAmount,
) -> Result<(), StashError> {
    let scope = "across the fleet";
    if grow.bytes > 0 && held.bytes + grow.bytes > quota.bytes {
        return Err(StashError::TenantBytes {
            tenant: tenant.to_string(),
            max: quota.bytes,
            scope,
        });
    }
    if grow.keys > 0 && held.keys + grow.keys > quota.keys {
        return Err(StashError::TenantKeys {
            tenant: tenant.to_string(),
            max: quota.keys,
            scope,
        });
    }
    Ok(())
}

use quiver_proto::clock::now_ms;

impl StashReplica for EtcdStash {
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<ReplicaSnapshot, ReplicaUnavailable>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let prefix = session_prefix(session);
            let answer = client
                .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                .await
                .map_err(failed("reading the stash"))?;
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
        quota: StashAmount,
    ) -> BoxFuture<'a, Result<i64, ReplicaError>> {
        Box::pin(async move {
            // etcd's leases count whole seconds; a value that is already
            // expired is simply not there.
            let secs = ttl.as_secs();
            if secs == 0 {
                return Ok(self.delete(session, key).await?);
            }
            let tenant = tenant_of(session);
            let bytes = key.len() + value.to_string().len();
            let entry_key = format!("{}{key}", session_prefix(session));
            let size_key = size_key(session, key);
            let mut client = self.client().await?;
            let lease = client
                .lease_grant(i64::try_from(secs).unwrap_or(i64::MAX), None)
                .await
                .map_err(failed("granting the entry's lease"))?
                .id();
            let stored = json!({"value": value, "expires_ms": now_ms() + secs * 1_000});
            for _ in 0..WRITE_ATTEMPTS {
                // Remembered figures assume the key is new (the most it can
                // grow); a refusal on them is checked on fresh ones.
                let remembered = self.remembered(tenant);
                let worst = StashAmount::new(bytes, 1);
                let (holding, grow) = match remembered {
                    Some(h) if within(tenant, h.held, worst, quota).is_ok() => (h, worst),
                    _ => {
                        let (h, existing) =
                            self.read_holding(&mut client, tenant, &size_key).await?;
                        let grow = StashAmount::new(
                            bytes.saturating_sub(existing.unwrap_or(0)),
                            usize::from(existing.is_none()),
                        );
                        self.remember(tenant, Some(h));
                        within(tenant, h.held, grow, quota).map_err(ReplicaError::Refused)?;
                        (h, grow)
                    }
                };
                let unchanged = if holding.epoch == 0 {
                    Compare::version(epoch_key(tenant), CompareOp::Equal, 0)
                } else {
                    Compare::mod_revision(epoch_key(tenant), CompareOp::Equal, holding.epoch)
                };
                let with_lease = || Some(PutOptions::new().with_lease(lease));
                let txn = Txn::new().when([unchanged]).and_then([
                    TxnOp::put(entry_key.as_str(), stored.to_string(), with_lease()),
                    TxnOp::put(size_key.as_str(), bytes.to_string(), with_lease()),
                    TxnOp::put(epoch_key(tenant), "", None),
                ]);
                let answer = client.txn(txn).await.map_err(failed("writing the entry"))?;
                let revision = answer.header().map_or(0, |h| h.revision());
                if answer.succeeded() {
                    let held = StashAmount::new(
                        holding.held.bytes + grow.bytes,
                        holding.held.keys + grow.keys,
                    );
                    self.remember(
                        tenant,
                        Some(FleetHolding {
                            held,
                            epoch: revision,
                        }),
                    );
                    return Ok(revision);
                }
                // Another executor grew the tenant's holding: read it again.
                self.remember(tenant, None);
            }
            Err(ReplicaError::Unavailable(ReplicaUnavailable::Overtaken {
                replica: REPLICA,
                attempts: WRITE_ATTEMPTS,
            }))
        })
    }

    fn delete<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<i64, ReplicaUnavailable>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let txn = Txn::new().and_then([
                TxnOp::delete(format!("{}{key}", session_prefix(session)), None),
                TxnOp::delete(size_key(session, key), None),
            ]);
            let answer = client
                .txn(txn)
                .await
                .map_err(failed("removing the entry"))?;
            Ok(answer.header().map_or(0, |h| h.revision()))
        })
    }

    fn fleet_held(&self, tenant: &str) -> Option<StashAmount> {
        self.remembered(tenant).map(|h| h.held)
    }
}
