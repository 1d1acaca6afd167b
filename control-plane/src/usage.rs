//! Budget usage across the fleet. A tenant's budget is spent by the
//! executors that run its calls, each from an allowance it leased from the
//! control plane: a lease is a replicated write that can never take the
//! leased total past the budget, so however many executors spend at once,
//! the tenant never spends more than its budget (no overshoot). What an
//! executor leased but had not spent when it died is lost to the tenant
//! (counted as leased, never as spent): the under-use is bounded by one
//! allowance per executor and tenant. Executors report what they spent and
//! how many calls they made with each lease request and periodically.

use serde::{Deserialize, Serialize};

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
        let available = budget.map_or(f64::INFINITY, |b| (b - self.leased).max(0.0));
        let granted = request.want.min(available).max(0.0);
        self.leased += granted;
        granted
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
}
