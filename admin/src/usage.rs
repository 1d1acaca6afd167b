//! Budget usage across the fleet. A tenant's budget is spent by the
//! executors that run its calls, each from an allowance it leased from the
//! control plane: a lease is a replicated write that can never take the
//! leased total past the budget, so however many executors spend at once,
//! the tenant never spends more than its budget (no overshoot). What an
//! executor leased but had not spent when it died is lost to the tenant
//! (counted as leased, never as spent): the under-use is bounded by one
//! allowance per executor and tenant. Executors report what they spent and
//! how many calls they made with each lease request and periodically.

use std::collections::BTreeMap;

use quiver_proto::tenant::StashUsage;
use serde::{Deserialize, Serialize};

/// How long an executor's stash report counts once it stopped reporting
/// (executors report at least every minute while they hold values).
pub const STASH_REPORT_TTL_MS: u64 = 5 * 60 * 1000;

/// A tenant's usage as replicated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantUsage {
    /// Allowances granted to executors, minus what they gave back.
    pub leased: f64,
    /// What executors reported spending.
    pub spent: f64,
    /// Priced or free calls executors reported making.
    pub calls: u64,
    /// When an executor last reported (ms since the epoch, leader's clock).
    pub updated_ms: u64,
    /// What each executor last reported holding of the tenant's stash, by
    /// node name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stash: BTreeMap<String, StashReport>,
}

/// One executor's stash report, as the control plane keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StashReport {
    /// What it reported.
    pub usage: StashUsage,
    /// When (ms since the epoch, leader's clock).
    pub at_ms: u64,
}

/// A tenant's stash across the executors that reported recently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StashTotals {
    /// Bytes of stashed values.
    pub bytes: u64,
    /// Stashed keys.
    pub keys: u64,
    /// The quota of bytes the executors apply.
    pub quota_bytes: u64,
    /// The quota of keys the executors apply.
    pub quota_keys: u64,
    /// Executors that reported within [`STASH_REPORT_TTL_MS`].
    pub executors: usize,
}

/// One lease request: report, give back, and ask.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LeaseRequest {
    /// The tenant.
    pub tenant: String,
    /// The executor asking (for the record).
    pub node: String,
    /// Allowance wanted now (0 to only report).
    pub want: f64,
    /// Spent since the last report.
    pub spent: f64,
    /// Calls since the last report.
    pub calls: u64,
    /// Unspent allowance given back (at shutdown).
    #[serde(default)]
    pub give_back: f64,
    /// What the executor holds of the tenant's stash, when that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stash: Option<StashUsage>,
}

/// What a lease request got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseGranted {
    /// The tenant.
    pub tenant: String,
    /// Allowance granted (at most what was asked).
    pub granted: f64,
    /// The tenant's budget (`None`: unlimited).
    pub budget: Option<f64>,
    /// Usage after the request.
    pub usage: TenantUsage,
}

impl TenantUsage {
    /// Applies `request` under `budget` at `at_ms` and returns what is
    /// granted: never more than what keeps `leased` within the budget.
    pub fn lease(&mut self, request: &LeaseRequest, budget: Option<f64>, at_ms: u64) -> f64 {
        self.spent += request.spent;
        self.calls += request.calls;
        self.leased = (self.leased - request.give_back).max(self.spent.min(self.leased));
        self.updated_ms = at_ms;
        if let Some(usage) = request.stash {
            self.stash
                .insert(request.node.clone(), StashReport { usage, at_ms });
        }
        let available = budget.map_or(f64::INFINITY, |b| (b - self.leased).max(0.0));
        let granted = request.want.min(available).max(0.0);
        self.leased += granted;
        granted
    }

    /// The tenant's stash as of `now_ms`: the newest fleet-wide figure if an
    /// executor keeps stashes in etcd, else the sum of every executor's own;
    /// reports older than [`STASH_REPORT_TTL_MS`] are left out.
    pub fn stash_totals(&self, now_ms: u64) -> StashTotals {
        let live: Vec<&StashReport> = self
            .stash
            .values()
            .filter(|r| now_ms.saturating_sub(r.at_ms) <= STASH_REPORT_TTL_MS)
            .collect();
        let mut totals = StashTotals {
            executors: live.len(),
            ..StashTotals::default()
        };
        for report in &live {
            totals.quota_bytes = totals.quota_bytes.max(report.usage.quota_bytes);
            totals.quota_keys = totals.quota_keys.max(report.usage.quota_keys);
        }
        if let Some(fleet) = live
            .iter()
            .filter(|r| r.usage.fleet)
            .max_by_key(|r| r.at_ms)
        {
            totals.bytes = fleet.usage.bytes;
            totals.keys = fleet.usage.keys;
        } else {
            totals.bytes = live.iter().map(|r| r.usage.bytes).sum();
            totals.keys = live.iter().map(|r| r.usage.keys).sum();
        }
        totals
    }

    /// What the tenant may still lease.
    pub fn remaining(&self, budget: Option<f64>) -> Option<f64> {
        budget.map(|b| (b - self.leased).max(0.0))
    }
}

impl LeaseRequest {
    /// Whether every amount is finite and not negative.
    pub fn is_valid(&self) -> bool {
        [self.want, self.spent, self.give_back]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_never_take_the_total_past_the_budget() {
        let mut usage = TenantUsage::default();
        let ask = |want: f64| LeaseRequest {
            tenant: "t".into(),
            want,
            ..LeaseRequest::default()
        };
        assert_eq!(usage.lease(&ask(4.0), Some(10.0), 1), 4.0);
        assert_eq!(usage.lease(&ask(4.0), Some(10.0), 2), 4.0);
        assert_eq!(usage.lease(&ask(4.0), Some(10.0), 3), 2.0);
        assert_eq!(usage.lease(&ask(4.0), Some(10.0), 4), 0.0);
        assert_eq!(usage.leased, 10.0);
        // Giving back makes room again; spent stays.
        let back = LeaseRequest {
            tenant: "t".into(),
            spent: 7.0,
            calls: 7,
            give_back: 3.0,
            ..LeaseRequest::default()
        };
        assert_eq!(usage.lease(&back, Some(10.0), 5), 0.0);
        assert_eq!((usage.leased, usage.spent, usage.calls), (7.0, 7.0, 7));
        assert_eq!(usage.remaining(Some(10.0)), Some(3.0));
        assert_eq!(usage.lease(&ask(1.0), None, 6), 1.0);
    }

    #[test]
    fn stash_totals_add_executors_and_forget_silent_ones() {
        let mut usage = TenantUsage::default();
        let report = |node: &str, bytes: u64, fleet: bool| LeaseRequest {
            tenant: "t".into(),
            node: node.into(),
            stash: Some(StashUsage {
                bytes,
                keys: 1,
                quota_bytes: 100,
                quota_keys: 10,
                fleet,
            }),
            ..LeaseRequest::default()
        };
        usage.lease(&report("e1", 30, false), None, 1_000);
        usage.lease(&report("e2", 20, false), None, 2_000);
        let totals = usage.stash_totals(3_000);
        assert_eq!((totals.bytes, totals.keys, totals.executors), (50, 2, 2));
        assert_eq!(totals.quota_bytes, 100);
        // e1 fell silent long ago.
        let later = 1_000 + STASH_REPORT_TTL_MS + 1;
        assert_eq!(usage.stash_totals(later).bytes, 20);
        // Fleet-wide figures are not added up.
        usage.lease(&report("e1", 70, true), None, later);
        usage.lease(&report("e2", 70, true), None, later);
        assert_eq!(usage.stash_totals(later).bytes, 70);
    }
}
