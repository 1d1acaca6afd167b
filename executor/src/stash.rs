//! The per-session stash scripts use to keep values across `execute` calls of
//! one MCP session: bounded keys, values, entry counts and TTLs per session;
//! per tenant a cap on sessions and a quota of bytes and keys; for the
//! executor a capacity of bytes and keys, shared so that no tenant takes what
//! another was promised ([`StashLedger`]); sessions that go quiet are dropped. An operation locks only its own
//! session (the map of sessions only long enough to find it).
//!
//! Given a [`StashReplica`] (etcd, with `quiver executor --etcd`), the store is
//! this executor's copy of stashes that live in the replica: an execution
//! loads its stash from the replica at its first stash operation, and every
//! write goes to the replica before the script hears it succeeded, so another
//! executor (after this one is lost, or for another edge's client) finds the
//! stash as it was. Each session's copy remembers the replica revision it
//! reflects; a load older than that (a concurrent execution's write landed
//! after it was read) changes nothing.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use quiver_proto::tenant::{StashUsage, TenantDirectory};
use quiver_telemetry::{instruments::names, metrics::meter};
use serde_json::Value;

use crate::stash_ledger::{LedgerRefusal, StashAmount, StashLedger};

/// Stash limits.
#[derive(Debug, Clone, Copy)]
pub struct StashLimits {
    /// Longest key, bytes.
    pub max_key_bytes: usize,
    /// Largest value (serialized JSON), bytes.
    pub max_value_bytes: usize,
    /// Total serialized size per session, bytes.
    pub max_session_bytes: usize,
    /// Keys per session.
    pub max_keys: usize,
    /// TTL when none is given.
    pub default_ttl: Duration,
    /// Longest TTL accepted.
    pub max_ttl: Duration,
    /// Sessions with no stash activity for this long are dropped.
    pub session_idle: Duration,
    /// Sessions holding values, per tenant.
    pub max_sessions_per_tenant: usize,
    /// Serialized size of every session's values together, bytes (the
    /// executor's capacity; a tenant's default quota is an eighth of it).
    pub max_total_bytes: usize,
    /// Keys of every session together.
    pub max_total_keys: usize,
}

impl Default for StashLimits {
    fn default() -> Self {
        StashLimits {
            max_key_bytes: 256,
            max_value_bytes: 256 * 1024,
            max_session_bytes: 4 * 1024 * 1024,
            max_keys: 1_000,
            default_ttl: Duration::from_secs(3_600),
            max_ttl: Duration::from_secs(24 * 3_600),
            session_idle: Duration::from_secs(24 * 3_600),
            max_sessions_per_tenant: 1_000,
            max_total_bytes: 512 * 1024 * 1024,
            max_total_keys: 1 << 20,
        }
    }
}

/// How often idle sessions are looked for (never on every operation).
const SWEEP_EVERY: Duration = Duration::from_secs(60);

struct Entry {
    value: Value,
    bytes: usize,
    expires: Instant,
}

#[derive(Default)]
struct SessionStash {
    entries: HashMap<String, Entry>,
    bytes: usize,
    touched: Option<Instant>,
    /// The replica's revision these entries reflect (0: none yet).
    revision: i64,
}

/// One live entry of a stash, as a replica holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaEntry {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: Value,
    /// How long it has left.
    pub ttl: Duration,
}

/// A session's stash as the replica held it at `revision`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaSnapshot {
    /// Its live entries.
    pub entries: Vec<ReplicaEntry>,
    /// The replica's revision when they were read.
    pub revision: i64,
}

/// Why a replica did not take a write.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// The write would take the tenant past its quota across the fleet.
    #[error("{0}")]
    Refused(StashError),
    /// The replica could not be reached or failed.
    #[error("{0}")]
    Unavailable(#[from] ReplicaUnavailable),
}

/// Why a replica could not be read or could not take a change (the
/// script's stash operation fails; the next one tries again).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaUnavailable {
    /// The replica could not be reached.
    #[error("{replica}: {source}")]
    Unreachable {
        /// The replica (`etcd`).
        replica: &'static str,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A request to the replica failed.
    #[error("{replica}: {doing}: {source}")]
    Failed {
        /// The replica (`etcd`).
        replica: &'static str,
        /// What was asked of it (`reading the stash`).
        doing: &'static str,
        /// The replica's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Other executors' writes for the same tenant overtook every attempt
    /// at a write: the script may try again.
    #[error(
        "{replica}: {attempts} attempts were overtaken by other writes of this tenant; try again"
    )]
    Overtaken {
        /// The replica (`etcd`).
        replica: &'static str,
        /// Attempts made.
        attempts: usize,
    },
}

/// Where stashes are kept beyond this process, so they outlive it. Writes
/// return the replica's revision after them.
pub trait StashReplica: Send + Sync {
    /// Every live entry of `session`'s stash.
    fn load<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<ReplicaSnapshot, ReplicaUnavailable>>;
    /// Stores `value` under `key` for `ttl`, unless the session's tenant
    /// would then hold more than `quota` across everything the replica keeps.
    fn put<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        value: &'a Value,
        ttl: Duration,
        quota: StashAmount,
    ) -> BoxFuture<'a, Result<i64, ReplicaError>>;
    /// Removes `key`.
    fn delete<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<i64, ReplicaUnavailable>>;
    /// What `tenant` holds across the fleet, as last seen (`None`: not known).
    fn fleet_held(&self, _tenant: &str) -> Option<StashAmount> {
        None
    }
}

impl SessionStash {
    /// Drops expired entries.
    fn purge_expired(&mut self, now: Instant) {
        let mut freed = 0;
        self.entries.retain(|_, e| {
            let live = e.expires > now;
            if !live {
                freed += e.bytes;
            }
            live
        });
        self.bytes -= freed;
    }

    /// What it holds.
    fn amount(&self) -> StashAmount {
        StashAmount::new(self.bytes, self.entries.len())
    }
}

/// The tenant a session id belongs to (`tenant/session`, else the built-in one).
pub(crate) fn tenant_of(session: &str) -> &str {
    session
        .split_once('/')
        .map_or("default", |(tenant, _)| tenant)
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<Mutex<SessionStash>>>,
    per_tenant: HashMap<String, usize>,
    last_sweep: Option<Instant>,
}

/// Why a stash operation was refused; the script sees the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StashError {
    /// The key is empty or too long.
    #[error("stash keys must be 1 to {max} bytes")]
    KeyLength {
        /// The longest key allowed.
        max: usize,
    },
    /// The key contains control characters.
    #[error("stash keys cannot contain control characters")]
    KeyCharacters,
    /// The value cannot be serialised.
    #[error("stash value cannot be stored: {0}")]
    Unserialisable(String),
    /// The value is over the per-value limit.
    #[error("stash value too large: {bytes} bytes (limit {max})")]
    ValueTooLarge {
        /// Its size, key included.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The tenant keeps values for as many sessions as it may.
    #[error(
        "stash full: this tenant already keeps values for {max} sessions; let some expire or delete their keys"
    )]
    TenantSessions {
        /// Sessions per tenant.
        max: usize,
    },
    /// The session holds as many bytes as it may.
    #[error("stash full: this session may keep {max} bytes; delete keys first")]
    SessionBytes {
        /// Bytes per session.
        max: usize,
    },
    /// The session holds as many keys as it may.
    #[error("stash full: at most {max} keys per session")]
    SessionKeys {
        /// Keys per session.
        max: usize,
    },
    /// The tenant holds as many bytes as its quota allows.
    #[error(
        "stash full: tenant `{tenant}` may keep {max} bytes of stashed values {scope} (its stash quota); delete keys or let some expire"
    )]
    TenantBytes {
        /// The tenant.
        tenant: String,
        /// Its quota of bytes.
        max: usize,
        /// `on this executor` or `across the fleet`.
        scope: &'static str,
    },
    /// The tenant holds as many keys as its quota allows.
    #[error(
        "stash full: tenant `{tenant}` may keep {max} stashed keys {scope} (its stash quota); delete keys or let some expire"
    )]
    TenantKeys {
        /// The tenant.
        tenant: String,
        /// Its quota of keys.
        max: usize,
        /// `on this executor` or `across the fleet`.
        scope: &'static str,
    },
    /// The executor has no room beyond what other tenants were promised.
    #[error(
        "the executor's stash has no room for this now: this tenant is guaranteed {guaranteed} bytes and {guaranteed_keys} keys here and holds {held} bytes and {held_keys} keys; store less, or try again later"
    )]
    StoreFull {
        /// The tenant's guaranteed bytes.
        guaranteed: usize,
        /// The tenant's guaranteed keys.
        guaranteed_keys: usize,
        /// The bytes it holds.
        held: usize,
        /// The keys it holds.
        held_keys: usize,
    },
}

impl StashError {
    /// The `reason` attribute of a refused write in metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            StashError::KeyLength { .. } | StashError::KeyCharacters => "key",
            StashError::Unserialisable(_) | StashError::ValueTooLarge { .. } => "value",
            StashError::TenantSessions { .. } => "tenant_sessions",
            StashError::SessionBytes { .. } | StashError::SessionKeys { .. } => "session_quota",
            StashError::TenantBytes { .. } | StashError::TenantKeys { .. } => "tenant_quota",
            StashError::StoreFull { .. } => "executor_full",
        }
    }

    fn from_ledger(refusal: LedgerRefusal, tenant: &str) -> StashError {
        let scope = "on this executor";
        match refusal {
            LedgerRefusal::TenantBytes(max) => StashError::TenantBytes {
                tenant: tenant.to_string(),
                max,
                scope,
            },
            LedgerRefusal::TenantKeys(max) => StashError::TenantKeys {
                tenant: tenant.to_string(),
                max,
                scope,
            },
            LedgerRefusal::NoRoom { guaranteed, held } => StashError::StoreFull {
                guaranteed: guaranteed.bytes,
                guaranteed_keys: guaranteed.keys,
                held: held.bytes,
                held_keys: held.keys,
            },
        }
    }
}

/// Every session's stash.
pub struct StashStore {
    limits: StashLimits,
    replica: Option<std::sync::Arc<dyn StashReplica>>,
    sessions: Mutex<Sessions>,
    /// What each tenant holds, and its quota. Locks are taken in the order
    /// sessions map, session, ledger (the ledger always last).
    ledger: Mutex<StashLedger>,
    /// What [`StashStore::usage_changes`] last reported, and when.
    reported: Mutex<HashMap<String, (StashUsage, Instant)>>,
}

impl Default for StashStore {
    fn default() -> Self {
        StashStore::new(StashLimits::default())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl StashStore {
    /// A store with `limits`.
    pub fn new(limits: StashLimits) -> StashStore {
        StashStore {
            limits,
            replica: None,
            sessions: Mutex::new(Sessions::default()),
            ledger: Mutex::new(StashLedger::new(StashAmount::new(
                limits.max_total_bytes,
                limits.max_total_keys,
            ))),
            reported: Mutex::new(HashMap::new()),
        }
    }

    /// Takes every tenant's stash quota from its policy.
    pub fn set_tenants(&self, tenants: &TenantDirectory) {
        lock(&self.ledger).set_tenants(tenants);
    }

    /// `tenant`'s quota on this executor.
    pub fn quota(&self, tenant: &str) -> StashAmount {
        lock(&self.ledger).quota(tenant)
    }

    /// What each tenant holding values holds, and its quota, by tenant id.
    pub fn usage(&self) -> Vec<(String, StashAmount, StashAmount)> {
        lock(&self.ledger).tenants()
    }

    /// What `tenant` holds on this executor.
    pub fn held(&self, tenant: &str) -> StashAmount {
        lock(&self.ledger).held(tenant)
    }

    /// Follows the tenants' policies in `tenants` for their quotas while
    /// the store lives, and reports what each tenant holds as the
    /// `quiver.stash.bytes` and `quiver.stash.keys` gauges.
    pub fn follow_tenants(
        self: &Arc<Self>,
        mut tenants: tokio::sync::watch::Receiver<Arc<TenantDirectory>>,
    ) {
        self.set_tenants(&tenants.borrow_and_update());
        // Bounded per tenant (sessions, bytes, keys), not by a number of its own.
        let counted = Arc::downgrade(self);
        quiver_telemetry::tables::count("executor.stash_sessions", move || {
            Some(lock(&counted.upgrade()?.sessions).by_id.len())
        });
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while tenants.changed().await.is_ok() {
                let Some(store) = weak.upgrade() else { return };
                let directory = tenants.borrow_and_update().clone();
                store.set_tenants(&directory);
            }
        });
        for (name, description, keys) in [
            (
                names::STASH_BYTES,
                "Bytes of stashed values held, by tenant",
                false,
            ),
            (names::STASH_KEYS, "Stashed keys held, by tenant", true),
        ] {
            let weak = Arc::downgrade(self);
            meter()
                .u64_observable_gauge(name)
                .with_description(description)
                .with_callback(move |observer| {
                    let Some(store) = weak.upgrade() else { return };
                    for (tenant, held, _) in store.usage() {
                        let value = if keys { held.keys } else { held.bytes };
                        observer.observe(
                            u64::try_from(value).unwrap_or(u64::MAX),
                            &[KeyValue::new("quiver.tenant", tenant)],
                        );
                    }
                })
                .build();
        }
    }

    /// What changed in each tenant's holding since the last call, as the
    /// control plane is told it (a tenant holding values is reported again
    /// after `every` even when nothing changed; one that emptied, once).
    pub fn usage_changes(&self, every: Duration) -> Vec<(String, StashUsage)> {
        let now = Instant::now();
        let current: HashMap<String, (StashAmount, StashAmount)> = self
            .usage()
            .into_iter()
            .map(|(t, held, quota)| (t, (held, quota)))
            .collect();
        let mut reported = lock(&self.reported);
        let mut tenants: Vec<String> = current.keys().chain(reported.keys()).cloned().collect();
        tenants.sort();
        tenants.dedup();
        let mut changes = Vec::new();
        for tenant in tenants {
            let (held, quota) = current
                .get(&tenant)
                .copied()
                .unwrap_or_else(|| (StashAmount::default(), self.quota(&tenant)));
            let (held, fleet) = match self.replica.as_ref().and_then(|r| r.fleet_held(&tenant)) {
                Some(fleet) => (fleet, true),
                None => (held, false),
            };
            let as_u64 = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
            let usage = StashUsage {
                bytes: as_u64(held.bytes),
                keys: as_u64(held.keys),
                quota_bytes: as_u64(quota.bytes),
                quota_keys: as_u64(quota.keys),
                fleet,
            };
            let due = match reported.get(&tenant) {
                Some((last, at)) => {
                    *last != usage || (held.keys > 0 && now.duration_since(*at) >= every)
                }
                None => held.keys > 0,
            };
            if !due {
                continue;
            }
            if held.keys == 0 {
                reported.remove(&tenant);
            } else {
                reported.insert(tenant.clone(), (usage, now));
            }
            changes.push((tenant, usage));
        }
        changes
    }

    /// The same store, its stashes kept in `replica` too.
    pub fn replicated(mut self, replica: Arc<dyn StashReplica>) -> StashStore {
        self.replica = Some(replica);
        self
    }

    /// The replica stashes are kept in, if any.
    pub fn replica(&self) -> Option<&Arc<dyn StashReplica>> {
        self.replica.as_ref()
    }

    /// The TTL a write asking for `ttl_secs` gets.
    pub fn ttl(&self, ttl_secs: Option<u64>) -> Duration {
        ttl_secs
            .map_or(self.limits.default_ttl, Duration::from_secs)
            .min(self.limits.max_ttl)
    }

    /// Makes `session`'s copy what the replica held at `snapshot.revision`,
    /// unless the copy already reflects a later revision.
    pub fn install(&self, session: &str, snapshot: ReplicaSnapshot) -> Result<(), StashError> {
        let create = !snapshot.entries.is_empty();
        self.with_session(session, create, |s, _, _, _| {
            if snapshot.revision <= s.revision {
                return;
            }
            let now = Instant::now();
            s.entries.clear();
            s.bytes = 0;
            for e in snapshot.entries {
                let bytes = e.key.len() + e.value.to_string().len();
                s.bytes += bytes;
                s.entries.insert(
                    e.key,
                    Entry {
                        value: e.value,
                        bytes,
                        expires: now + e.ttl,
                    },
                );
            }
            s.revision = snapshot.revision;
        })?;
        Ok(())
    }

    /// Notes that `session`'s copy reflects the replica at `revision` (after
    /// a write this copy made too).
    pub fn note_revision(&self, session: &str, revision: i64) {
        let _ = self.with_session(session, false, |s, _, _, _| {
            s.revision = s.revision.max(revision);
        });
    }

    /// Drops this process's copy of `session` (the replica could not take a
    /// write, so the copy may hold what the replica does not).
    pub fn forget(&self, session: &str) {
        let mut sessions = lock(&self.sessions);
        if let Some(stash) = sessions.by_id.remove(session) {
            let held = lock(&stash).amount();
            lock(&self.ledger).record(tenant_of(session), held, StashAmount::default());
            if let Some(n) = sessions.per_tenant.get_mut(tenant_of(session)) {
                *n -= 1;
            }
        }
    }

    /// Drops sessions idle for too long, at most once per [`SWEEP_EVERY`].
    fn sweep(&self, sessions: &mut Sessions, now: Instant) {
        if sessions
            .last_sweep
            .is_some_and(|at| now.duration_since(at) < SWEEP_EVERY)
        {
            return;
        }
        sessions.last_sweep = Some(now);
        let idle = self.limits.session_idle;
        let mut dropped = Vec::new();
        sessions.by_id.retain(|id, stash| {
            let stash = lock(stash);
            let live = stash.touched.is_none_or(|t| now.duration_since(t) < idle);
            if !live {
                dropped.push((id.clone(), stash.amount()));
            }
            live
        });
        for (id, held) in dropped {
            lock(&self.ledger).record(tenant_of(&id), held, StashAmount::default());
            if let Some(n) = sessions.per_tenant.get_mut(tenant_of(&id)) {
                *n -= 1;
            }
        }
    }

    /// The session's stash; created (within the tenant's cap) when `create`.
    fn session(
        &self,
        session: &str,
        create: bool,
    ) -> Result<Option<Arc<Mutex<SessionStash>>>, StashError> {
        let now = Instant::now();
        let mut sessions = lock(&self.sessions);
        self.sweep(&mut sessions, now);
        if let Some(stash) = sessions.by_id.get(session) {
            return Ok(Some(stash.clone()));
        }
        if !create {
            return Ok(None);
        }
        let tenant = tenant_of(session).to_string();
        let count = sessions.per_tenant.entry(tenant).or_default();
        if *count >= self.limits.max_sessions_per_tenant {
            return Err(StashError::TenantSessions {
                max: self.limits.max_sessions_per_tenant,
            });
        }
        *count += 1;
        let stash = Arc::new(Mutex::new(SessionStash::default()));
        sessions.by_id.insert(session.to_string(), stash.clone());
        Ok(Some(stash))
    }

    /// Runs `f` on the session's stash (expired entries purged first) with
    /// the limits, the ledger and the tenant, the ledger kept in step with
    /// what `f` changed.
    fn with_session<T>(
        &self,
        session: &str,
        create: bool,
        f: impl FnOnce(&mut SessionStash, &StashLimits, &StashLedger, &str) -> T,
    ) -> Result<Option<T>, StashError> {
        let Some(stash) = self.session(session, create)? else {
            return Ok(None);
        };
        let now = Instant::now();
        let tenant = tenant_of(session);
        let mut stash = lock(&stash);
        stash.touched = Some(now);
        let before = stash.amount();
        stash.purge_expired(now);
        let purged = stash.amount();
        let mut ledger = lock(&self.ledger);
        ledger.record(tenant, before, purged);
        let out = f(&mut stash, &self.limits, &ledger, tenant);
        ledger.record(tenant, purged, stash.amount());
        Ok(Some(out))
    }

    fn check_key(&self, key: &str) -> Result<(), StashError> {
        if key.is_empty() || key.len() > self.limits.max_key_bytes {
            return Err(StashError::KeyLength {
                max: self.limits.max_key_bytes,
            });
        }
        if key.chars().any(|c| c.is_control()) {
            return Err(StashError::KeyCharacters);
        }
        Ok(())
    }

    /// The value under `key`, or null.
    pub fn get(&self, session: &str, key: &str) -> Result<Value, StashError> {
        self.check_key(key)?;
        Ok(self
            .with_session(session, false, |s, _, _, _| {
                s.entries
                    .get(key)
                    .map(|e| e.value.clone())
                    .unwrap_or(Value::Null)
            })?
            .unwrap_or(Value::Null))
    }

    /// Stores `value` under `key` for `ttl_secs` (default and maximum from the limits).
    pub fn set(
        &self,
        session: &str,
        key: &str,
        value: Value,
        ttl_secs: Option<u64>,
    ) -> Result<Value, StashError> {
        self.check_key(key)?;
        let bytes = key.len()
            + serde_json::to_string(&value)
                .map_err(|e| StashError::Unserialisable(e.to_string()))?
                .len();
        if bytes > self.limits.max_value_bytes {
            return Err(StashError::ValueTooLarge {
                bytes,
                max: self.limits.max_value_bytes,
            });
        }
        let ttl = self.ttl(ttl_secs);
        self.with_session(session, true, |s, limits, ledger, tenant| {
            let old = s.entries.get(key).map_or(0, |e| e.bytes);
            if s.bytes - old + bytes > limits.max_session_bytes {
                return Err(StashError::SessionBytes {
                    max: limits.max_session_bytes,
                });
            }
            if old == 0 && s.entries.len() >= limits.max_keys {
                return Err(StashError::SessionKeys {
                    max: limits.max_keys,
                });
            }
            let new_key = usize::from(!s.entries.contains_key(key));
            let after = StashAmount::new(s.bytes - old + bytes, s.entries.len() + new_key);
            ledger
                .admits(tenant, s.amount(), after)
                .map_err(|refusal| StashError::from_ledger(refusal, tenant))?;
            s.bytes = s.bytes - old + bytes;
            s.entries.insert(
                key.to_string(),
                Entry {
                    value,
                    bytes,
                    expires: Instant::now() + ttl,
                },
            );
            Ok(Value::Bool(true))
        })?
        // A session is always created for a write, or refused above.
        .unwrap_or(Ok(Value::Bool(false)))
    }

    /// Removes `key`; true if it existed.
    pub fn delete(&self, session: &str, key: &str) -> Result<Value, StashError> {
        self.check_key(key)?;
        Ok(self
            .with_session(session, false, |s, _, _, _| match s.entries.remove(key) {
                Some(e) => {
                    s.bytes -= e.bytes;
                    Value::Bool(true)
                }
                None => Value::Bool(false),
            })?
            .unwrap_or(Value::Bool(false)))
    }

    /// Live keys, sorted.
    pub fn keys(&self, session: &str) -> Value {
        self.with_session(session, false, |s, _, _, _| {
            let mut keys: Vec<&String> = s.entries.keys().collect();
            keys.sort();
            Value::from(keys.into_iter().cloned().collect::<Vec<_>>())
        })
        .ok()
        .flatten()
        .unwrap_or_else(|| Value::Array(Vec::new()))
    }
}

#[cfg(test)]
mod tests;
