//! What every tenant's stash holds on this executor, and whether a write
//! fits: within the tenant's quota, within the executor's capacity, and
//! without taking room another tenant was promised.
//!
//! Each tenant has a quota (its policy's `stash_bytes` and `stash_keys`, or
//! an eighth of the executor's capacity). Its *guaranteed share* is its
//! quota, scaled down evenly when the quotas of all known tenants together
//! exceed the capacity. A tenant may always grow up to its guaranteed share;
//! beyond it (and up to its quota) only into room that no other tenant's
//! unused guaranteed share claims. So however one tenant writes, every other
//! tenant can still store up to its guaranteed share (once what it already
//! held above its share has expired, after quotas change).

use std::collections::{HashMap, HashSet};

use quiver_proto::tenant::TenantDirectory;

/// How much of the executor's capacity a tenant may use when its policy
/// sets no stash quota: one part in this many.
pub const DEFAULT_TENANT_PARTS: usize = 8;

/// Bytes and keys, of a stash or of a quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StashAmount {
    /// Bytes of keys and serialised values.
    pub bytes: usize,
    /// Keys.
    pub keys: usize,
}

impl StashAmount {
    /// `bytes` and `keys`.
    pub fn new(bytes: usize, keys: usize) -> StashAmount {
        StashAmount { bytes, keys }
    }

    fn plus(self, other: StashAmount) -> StashAmount {
        StashAmount::new(
            self.bytes.saturating_add(other.bytes),
            self.keys.saturating_add(other.keys),
        )
    }

    /// The change from `self` to `after`, as growth (what shrank counts 0)
    /// and shrinkage.
    fn change_to(self, after: StashAmount) -> (StashAmount, StashAmount) {
        (
            StashAmount::new(
                after.bytes.saturating_sub(self.bytes),
                after.keys.saturating_sub(self.keys),
            ),
            StashAmount::new(
                self.bytes.saturating_sub(after.bytes),
                self.keys.saturating_sub(after.keys),
            ),
        )
    }
}

/// Why a write does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerRefusal {
    /// The tenant would pass its own quota of bytes.
    TenantBytes(usize),
    /// The tenant would pass its own quota of keys.
    TenantKeys(usize),
    /// The executor has no room for it beyond what other tenants were
    /// promised; the tenant's guaranteed share and what it holds.
    NoRoom {
        /// Its guaranteed share.
        guaranteed: StashAmount,
        /// What it holds.
        held: StashAmount,
    },
}

/// Every tenant's stash usage and quota on one executor.
#[derive(Debug)]
pub struct StashLedger {
    capacity: StashAmount,
    total: StashAmount,
    held: HashMap<String, StashAmount>,
    /// Quotas set by tenants' policies (the default fills what they omit).
    quotas: HashMap<String, StashAmount>,
}

impl StashLedger {
    /// An empty ledger for an executor of `capacity`.
    pub fn new(capacity: StashAmount) -> StashLedger {
        StashLedger {
            capacity,
            total: StashAmount::default(),
            held: HashMap::new(),
            quotas: HashMap::new(),
        }
    }

    /// A tenant's quota when its policy sets none.
    pub fn default_quota(&self) -> StashAmount {
        StashAmount::new(
            (self.capacity.bytes / DEFAULT_TENANT_PARTS).max(1),
            (self.capacity.keys / DEFAULT_TENANT_PARTS).max(1),
        )
    }

    /// Takes every tenant's quota from `tenants` (tenants that left keep
    /// what they hold until it expires, under the default quota).
    pub fn set_tenants(&mut self, tenants: &TenantDirectory) {
        let default = self.default_quota();
        let size =
            |v: Option<u64>, d: usize| v.map_or(d, |v| usize::try_from(v).unwrap_or(usize::MAX));
        self.quotas = tenants
            .iter()
            .map(|t| {
                let quota = StashAmount::new(
                    size(t.stash_bytes, default.bytes),
                    size(t.stash_keys, default.keys),
                );
                (t.id.clone(), quota)
            })
            .collect();
    }

    /// `tenant`'s quota.
    pub fn quota(&self, tenant: &str) -> StashAmount {
        self.quotas
            .get(tenant)
            .copied()
            .unwrap_or_else(|| self.default_quota())
    }

    /// What `tenant` holds.
    pub fn held(&self, tenant: &str) -> StashAmount {
        self.held.get(tenant).copied().unwrap_or_default()
    }

    /// What every tenant holding anything holds, with its quota.
    pub fn tenants(&self) -> Vec<(String, StashAmount, StashAmount)> {
        let mut all: Vec<_> = self
            .held
            .iter()
            .map(|(t, held)| (t.clone(), *held, self.quota(t)))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// What all tenants hold together.
    pub fn total(&self) -> StashAmount {
        self.total
    }

    /// Every tenant a share is promised to: those with a policy, those
    /// holding values, and `tenant`.
    fn known<'a>(&'a self, tenant: &'a str) -> HashSet<&'a str> {
        let mut known: HashSet<&str> = self.quotas.keys().map(String::as_str).collect();
        known.extend(self.held.keys().map(String::as_str));
        known.insert(tenant);
        known
    }

    /// Every known tenant's guaranteed share (its quota, scaled down evenly
    /// when all quotas together exceed the capacity).
    fn guaranteed<'a>(&'a self, tenant: &'a str) -> HashMap<&'a str, StashAmount> {
        let known = self.known(tenant);
        let sum = known
            .iter()
            .fold(StashAmount::default(), |acc, t| acc.plus(self.quota(t)));
        let scale = |quota: usize, sum: usize, capacity: usize| {
            if sum <= capacity {
                quota
            } else {
                // quota × capacity / sum, without overflow.
                usize::try_from(quota as u128 * capacity as u128 / sum.max(1) as u128)
                    .unwrap_or(usize::MAX)
            }
        };
        known
            .into_iter()
            .map(|t| {
                let quota = self.quota(t);
                let share = StashAmount::new(
                    scale(quota.bytes, sum.bytes, self.capacity.bytes),
                    scale(quota.keys, sum.keys, self.capacity.keys),
                );
                (t, share)
            })
            .collect()
    }

    /// Whether `tenant` may go from holding `before` to `after` in one of its
    /// sessions (shrinking always fits).
    pub fn admits(
        &self,
        tenant: &str,
        before: StashAmount,
        after: StashAmount,
    ) -> Result<(), LedgerRefusal> {
        let (grow, _) = before.change_to(after);
        if grow == StashAmount::default() {
            return Ok(());
        }
        let held = self.held(tenant);
        let wanted = held.plus(grow);
        let quota = self.quota(tenant);
        if grow.bytes > 0 && wanted.bytes > quota.bytes {
            return Err(LedgerRefusal::TenantBytes(quota.bytes));
        }
        if grow.keys > 0 && wanted.keys > quota.keys {
            return Err(LedgerRefusal::TenantKeys(quota.keys));
        }
        let shares = self.guaranteed(tenant);
        let own = shares.get(tenant).copied().unwrap_or_default();
        // Room other tenants' unused guaranteed shares claim.
        let claimed = shares.iter().filter(|(t, _)| **t != tenant).fold(
            StashAmount::default(),
            |acc, (t, share)| {
                let held = self.held(t);
                acc.plus(StashAmount::new(
                    share.bytes.saturating_sub(held.bytes),
                    share.keys.saturating_sub(held.keys),
                ))
            },
        );
        let total = self.total.plus(grow);
        let fits =
            |grows: bool, wanted: usize, own: usize, total: usize, claimed: usize, cap: usize| {
                !grows || (total <= cap && (wanted <= own || total.saturating_add(claimed) <= cap))
            };
        let bytes_fit = fits(
            grow.bytes > 0,
            wanted.bytes,
            own.bytes,
            total.bytes,
            claimed.bytes,
            self.capacity.bytes,
        );
        let keys_fit = fits(
            grow.keys > 0,
            wanted.keys,
            own.keys,
            total.keys,
            claimed.keys,
            self.capacity.keys,
        );
        if bytes_fit && keys_fit {
            Ok(())
        } else {
            Err(LedgerRefusal::NoRoom {
                guaranteed: own,
                held,
            })
        }
    }

    /// Records that one of `tenant`'s sessions went from `before` to `after`.
    pub fn record(&mut self, tenant: &str, before: StashAmount, after: StashAmount) {
        let (grow, shrink) = before.change_to(after);
        if grow == StashAmount::default() && shrink == StashAmount::default() {
            return;
        }
        let held = self.held.entry(tenant.to_string()).or_default();
        *held = StashAmount::new(
            held.bytes
                .saturating_add(grow.bytes)
                .saturating_sub(shrink.bytes),
            held.keys
                .saturating_add(grow.keys)
                .saturating_sub(shrink.keys),
        );
        if *held == StashAmount::default() {
            self.held.remove(tenant);
        }
        self.total = StashAmount::new(
            self.total
                .bytes
                .saturating_add(grow.bytes)
                .saturating_sub(shrink.bytes),
            self.total
                .keys
                .saturating_add(grow.keys)
                .saturating_sub(shrink.keys),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiver_proto::tenant::Tenant;

    fn tenant(id: &str, bytes: Option<u64>) -> Tenant {
        let mut t: Tenant = serde_json::from_value(serde_json::json!({
            "id": id, "display_name": id, "created_ms": 0, "updated_ms": 0
        }))
        .unwrap();
        t.stash_bytes = bytes;
        t
    }

    fn grow_by(ledger: &mut StashLedger, tenant: &str, bytes: usize) -> Result<(), LedgerRefusal> {
        let before = StashAmount::default();
        let after = StashAmount::new(bytes, 1);
        ledger.admits(tenant, before, after)?;
        ledger.record(tenant, before, after);
        Ok(())
    }

    #[test]
    fn a_tenant_stops_at_its_own_quota_and_others_go_on() {
        let mut ledger = StashLedger::new(StashAmount::new(8_000, 1_000));
        ledger.set_tenants(&TenantDirectory::new([
            tenant("a", None),
            tenant("b", None),
        ]));
        assert_eq!(ledger.quota("a").bytes, 1_000, "an eighth by default");
        for _ in 0..10 {
            grow_by(&mut ledger, "a", 100).unwrap();
        }
        assert_eq!(
            grow_by(&mut ledger, "a", 1),
            Err(LedgerRefusal::TenantBytes(1_000))
        );
        grow_by(&mut ledger, "b", 1_000).unwrap();
    }

    #[test]
    fn overcommitted_quotas_still_leave_every_tenant_its_guaranteed_share() {
        // Three tenants promised 600 each of 1,000: 333 guaranteed each.
        let mut ledger = StashLedger::new(StashAmount::new(1_000, 1_000));
        ledger.set_tenants(&TenantDirectory::new([
            tenant("a", Some(600)),
            tenant("b", Some(600)),
            tenant("c", Some(600)),
        ]));
        // a takes its share, then as much more as nobody else's share claims.
        grow_by(&mut ledger, "a", 333).unwrap();
        assert!(matches!(
            grow_by(&mut ledger, "a", 10),
            Err(LedgerRefusal::NoRoom { .. })
        ));
        // b and c still get their guaranteed shares.
        grow_by(&mut ledger, "b", 333).unwrap();
        grow_by(&mut ledger, "c", 333).unwrap();
        assert_eq!(ledger.total().bytes, 999);
    }

    #[test]
    fn quotas_that_fit_the_capacity_are_each_usable_in_full() {
        let mut ledger = StashLedger::new(StashAmount::new(1_000, 1_000));
        ledger.set_tenants(&TenantDirectory::new([
            tenant("a", Some(800)),
            tenant("b", Some(200)),
        ]));
        grow_by(&mut ledger, "a", 800).unwrap();
        grow_by(&mut ledger, "b", 200).unwrap();
        assert_eq!(
            grow_by(&mut ledger, "a", 1),
            Err(LedgerRefusal::TenantBytes(800))
        );
    }

    #[test]
    fn shrinking_always_fits_and_frees_room() {
        let mut ledger = StashLedger::new(StashAmount::new(1_000, 10));
        ledger.set_tenants(&TenantDirectory::new([tenant("a", Some(1_000))]));
        let full = StashAmount::new(1_000, 1);
        ledger.admits("a", StashAmount::default(), full).unwrap();
        ledger.record("a", StashAmount::default(), full);
        let less = StashAmount::new(10, 1);
        ledger.admits("a", full, less).unwrap();
        ledger.record("a", full, less);
        assert_eq!(ledger.held("a"), less);
        ledger.record("a", less, StashAmount::default());
        assert!(ledger.tenants().is_empty());
    }
}
