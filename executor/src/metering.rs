//! Rate limits and budgets, enforced where calls are made: [`Metered`] wraps
//! the executor's [`Dispatch`], so direct calls and calls made inside scripts
//! pass the same checks, and a refused call never reaches an upstream.
//!
//! - **Rate limits**: token buckets per tenant (all its calls) and per tool
//!   (one bucket per tool matching a `tool_rate_limits` glob), refilled
//!   continuously at the per-minute rate with a burst of one minute's worth.
//!   They hold per executor process: behind N executors a tenant may reach N
//!   times its rate.
//! - **Budgets**: a call costs its price (the tenant's most specific price
//!   glob). It is paid from an allowance this executor leased from the
//!   control plane through [`Leases`]; the control plane never leases
//!   more than the budget in total, so the fleet never overspends. Spending
//!   and call counts are reported with every lease and every
//!   [`REPORT_EVERY`]; unspent allowance is given back by [`Metered::give_back`]
//!   at shutdown (an executor that dies loses at most one allowance per
//!   tenant, counted as leased, never as spent).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use quiver_admin::{AdminError, AdminTransport, usage::LeaseRequest};
use quiver_contract::{CallOptions, Dispatch, ToolCall, UpstreamError};
use quiver_proto::{
    audit::{AuditKind, AuditOutcome, AuditRecord, Decision, digest_of},
    tenant::{StashUsage, Tenant, TenantDirectory},
};
use quiver_telemetry::instruments;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use tokio::sync::watch;

use crate::audit::{Auditor, now_ms};

/// How often spending is reported to the control plane when nothing else
/// reports it.
pub const REPORT_EVERY: Duration = Duration::from_secs(2);

/// One report (and request) to the control plane's budget ledger.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BudgetReport {
    /// The tenant.
    pub tenant: String,
    /// Allowance wanted now (0 to only report).
    pub want: f64,
    /// Spent since the last report.
    pub spent: f64,
    /// Calls since the last report.
    pub calls: u64,
    /// Unspent allowance given back.
    pub give_back: f64,
    /// What this executor holds of the tenant's stash, when that changed.
    pub stash: Option<StashUsage>,
}

/// Where allowances come from: the control plane, asked as one executor.
#[derive(Clone)]
pub struct Leases {
    control_plane: Arc<dyn AdminTransport>,
    node: String,
}

impl Leases {
    /// Leases from `control_plane` as executor `node`.
    pub fn new(control_plane: Arc<dyn AdminTransport>, node: impl Into<String>) -> Leases {
        Leases {
            control_plane,
            node: node.into(),
        }
    }

    /// Sends `report` and returns the allowance granted (at most `want`).
    pub async fn lease(&self, report: BudgetReport) -> Result<f64, AdminError> {
        let lease = LeaseRequest {
            tenant: report.tenant,
            node: self.node.clone(),
            want: report.want,
            spent: report.spent,
            calls: report.calls,
            give_back: report.give_back,
            stash: report.stash,
        };
        Ok(self.control_plane.lease(lease).await?.granted)
    }
}

/// A [`Dispatch`] that applies each tenant's rate limits and budget before
/// passing a call on.
pub struct Metered {
    inner: Arc<dyn Dispatch>,
    auditor: Option<Arc<Auditor>>,
    tenants: watch::Receiver<Arc<TenantDirectory>>,
    buckets: Arc<Mutex<HashMap<BucketKey, Bucket>>>,
    accounts: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<Account>>>>>,
    leases: Option<Leases>,
}

/// Which limit refused a call, as `quiver.refusals` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// The tenant's rate limit over all its calls.
    RateLimit,
    /// The rate limit of the one tool called.
    ToolRateLimit,
    /// The tenant's budget (exhausted, or no allowance could be leased).
    Budget,
}

impl RefusalReason {
    /// The `reason` attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::RateLimit => "rate_limit",
            RefusalReason::ToolRateLimit => "tool_rate_limit",
            RefusalReason::Budget => "budget",
        }
    }
}

/// A refusal: which limit, and what the caller is told.
type Refusal = (RefusalReason, String);

/// Why a tenant's budget refused a call.
#[derive(Debug, thiserror::Error)]
enum BudgetRefusal {
    /// The tenant has a budget, and there is no control plane to lease it from.
    #[error(
        "tenant `{tenant}` has a budget, and this executor follows no control plane to lease it from (start it with --control-plane)"
    )]
    NoControlPlane { tenant: String },
    /// The control plane could not lease any.
    #[error("the budget of tenant `{tenant}` could not be checked ({source})")]
    Unchecked { tenant: String, source: AdminError },
    /// The budget is spent.
    #[error(
        "budget of tenant `{tenant}` exhausted ({budget} spent or leased; `{server}/{tool}` costs {price}); the gateway's operator can raise it with `quiver ctl tenant update {tenant} --budget N`"
    )]
    Exhausted {
        tenant: String,
        budget: f64,
        server: String,
        tool: String,
        price: f64,
    },
}

/// A tenant's bucket, or one of its tools' buckets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BucketKey {
    tenant: String,
    tool: Option<(String, String)>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    per_minute: u32,
    last: Instant,
}

/// Rate-limit buckets one executor keeps; past it, buckets that refilled
/// (no different from none) are forgotten first, then the fullest.
pub const MAX_BUCKETS: usize = 100_000;

impl Bucket {
    /// Whether it has refilled by `now` (no different from a new one).
    fn refilled(&self, now: Instant) -> bool {
        let rate = f64::from(self.per_minute) / 60.0;
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens + elapsed * rate >= f64::from(self.per_minute)
    }

    /// Takes a token, or says how long until one is available.
    fn take(&mut self, per_minute: u32, now: Instant) -> Result<(), Duration> {
        let rate = f64::from(per_minute) / 60.0;
        if per_minute != self.per_minute {
            // A changed limit starts full at the new size.
            self.per_minute = per_minute;
            self.tokens = f64::from(per_minute);
        } else {
            let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * rate).min(f64::from(per_minute));
        }
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / rate))
        }
    }
}

/// Forgets the buckets that refilled; if none did, the one closest to it.
fn make_room(buckets: &mut HashMap<BucketKey, Bucket>, now: Instant) {
    buckets.retain(|_, b| !b.refilled(now));
    if buckets.len() >= MAX_BUCKETS {
        let fullest = buckets
            .iter()
            .max_by(|a, b| {
                let share = |b: &Bucket| b.tokens / f64::from(b.per_minute.max(1));
                share(a.1).total_cmp(&share(b.1))
            })
            .map(|(k, _)| k.clone());
        if let Some(key) = fullest {
            buckets.remove(&key);
        }
    }
}

/// What this executor holds of one tenant's budget.
#[derive(Debug, Default)]
struct Account {
    allowance: f64,
    unreported_spent: f64,
    unreported_calls: u64,
}

impl Metered {
    /// Metering of `inner` under the policies in `tenants`; budgets are
    /// leased from `leases` (without one, a tenant with a budget is refused
    /// every priced call: there is nowhere to lease from).
    pub fn new(
        inner: Arc<dyn Dispatch>,
        tenants: watch::Receiver<Arc<TenantDirectory>>,
        leases: Option<Leases>,
    ) -> Arc<Metered> {
        Metered::build(inner, tenants, leases, None)
    }

    fn build(
        inner: Arc<dyn Dispatch>,
        tenants: watch::Receiver<Arc<TenantDirectory>>,
        leases: Option<Leases>,
        auditor: Option<Arc<Auditor>>,
    ) -> Arc<Metered> {
        let metered = Arc::new(Metered {
            inner,
            auditor,
            tenants,
            buckets: Arc::new(Mutex::new(HashMap::new())),
            accounts: Arc::default(),
            leases,
        });
        let counted = Arc::downgrade(&metered.buckets);
        quiver_telemetry::tables::watch("executor.rate_buckets", MAX_BUCKETS, move || {
            Some(counted.upgrade()?.lock().ok()?.len())
        });
        let accounts = Arc::downgrade(&metered.accounts);
        quiver_telemetry::tables::count("executor.usage_accounts", move || {
            Some(accounts.upgrade()?.lock().ok()?.len())
        });
        let weak = Arc::downgrade(&metered);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REPORT_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(metered) = weak.upgrade() else {
                    return;
                };
                metered.report(false).await;
            }
        });
        metered
    }

    /// Metering that also leaves an audit record of every call, allowed or
    /// refused.
    pub fn audited(
        inner: Arc<dyn Dispatch>,
        tenants: watch::Receiver<Arc<TenantDirectory>>,
        leases: Option<Leases>,
        auditor: Arc<Auditor>,
    ) -> Arc<Metered> {
        Metered::build(inner, tenants, leases, Some(auditor))
    }

    /// Reports what was spent and gives back every unspent allowance, and
    /// ships the audit records still buffered (at shutdown).
    pub async fn finish(&self) {
        self.give_back().await;
        if let Some(auditor) = &self.auditor {
            auditor.flush().await;
        }
    }

    /// Reports what was spent and gives back every unspent allowance (at
    /// shutdown).
    pub async fn give_back(&self) {
        self.report(true).await;
    }

    async fn report(&self, give_back: bool) {
        let Some(leases) = &self.leases else { return };
        let accounts: Vec<(String, Arc<tokio::sync::Mutex<Account>>)> = self
            .accounts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(t, a)| (t.clone(), a.clone()))
            .collect();
        for (tenant, account) in accounts {
            let mut account = account.lock().await;
            let returned = if give_back { account.allowance } else { 0.0 };
            if account.unreported_calls == 0 && returned == 0.0 {
                continue;
            }
            let report = BudgetReport {
                tenant: tenant.clone(),
                want: 0.0,
                spent: account.unreported_spent,
                calls: account.unreported_calls,
                give_back: returned,
                stash: None,
            };
            match leases.lease(report).await {
                Ok(_) => {
                    account.unreported_spent = 0.0;
                    account.unreported_calls = 0;
                    account.allowance -= returned;
                }
                Err(e) => tracing::warn!(%tenant, "reporting budget usage failed: {e}"),
            }
        }
    }

    /// Applies the rate limits of `tenant` to a call of `server/tool`.
    fn check_rates(&self, tenant: &Tenant, server: &str, tool: &str) -> Result<(), Refusal> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let mut take = |key: BucketKey, per_minute: u32, why: RefusalReason, what: String| {
            if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&key) {
                make_room(&mut buckets, now);
            }
            let bucket = buckets.entry(key).or_insert_with(|| Bucket {
                tokens: f64::from(per_minute),
                per_minute,
                last: now,
            });
            bucket.take(per_minute, now).map_err(|wait| {
                let message = format!(
                    "{what} ({per_minute} calls per minute) reached; retry in {:.1} s",
                    wait.as_secs_f64().max(0.1)
                );
                (why, message)
            })
        };
        if let Some(limit) = tenant.tool_rate_limit(server, tool) {
            take(
                BucketKey {
                    tenant: tenant.id.clone(),
                    tool: Some((server.to_string(), tool.to_string())),
                },
                limit,
                RefusalReason::ToolRateLimit,
                format!(
                    "rate limit of tool `{server}/{tool}` for tenant `{}`",
                    tenant.id
                ),
            )?;
        }
        if let Some(limit) = tenant.rate_limit_per_minute {
            take(
                BucketKey {
                    tenant: tenant.id.clone(),
                    tool: None,
                },
                limit,
                RefusalReason::RateLimit,
                format!("rate limit of tenant `{}`", tenant.id),
            )?;
        }
        Ok(())
    }

    /// Pays for one call of `server/tool`, leasing allowance when needed.
    async fn charge(&self, tenant: &Tenant, server: &str, tool: &str) -> Result<(), Refusal> {
        self.pay(tenant, server, tool)
            .await
            .map_err(|refusal| (RefusalReason::Budget, refusal.to_string()))
    }

    async fn pay(&self, tenant: &Tenant, server: &str, tool: &str) -> Result<(), BudgetRefusal> {
        let price = tenant.price_of(server, tool);
        let account = self
            .accounts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tenant.id.clone())
            .or_default()
            .clone();
        let mut account = account.lock().await;
        let Some(budget) = tenant.budget else {
            account.unreported_spent += price;
            account.unreported_calls += 1;
            return Ok(());
        };
        if price > 0.0 && account.allowance < price {
            let Some(leases) = &self.leases else {
                return Err(BudgetRefusal::NoControlPlane {
                    tenant: tenant.id.clone(),
                });
            };
            // Lease a twentieth of the budget at a time (at least this call's
            // price), reporting what was spent since the last report.
            let want = (price - account.allowance).max(budget / 20.0).max(price);
            let report = BudgetReport {
                tenant: tenant.id.clone(),
                want,
                spent: account.unreported_spent,
                calls: account.unreported_calls,
                give_back: 0.0,
                stash: None,
            };
            let granted =
                leases
                    .lease(report)
                    .await
                    .map_err(|source| BudgetRefusal::Unchecked {
                        tenant: tenant.id.clone(),
                        source,
                    })?;
            account.unreported_spent = 0.0;
            account.unreported_calls = 0;
            account.allowance += granted;
            if account.allowance < price {
                return Err(BudgetRefusal::Exhausted {
                    tenant: tenant.id.clone(),
                    budget,
                    server: server.to_string(),
                    tool: tool.to_string(),
                    price,
                });
            }
        }
        account.allowance -= price;
        account.unreported_spent += price;
        account.unreported_calls += 1;
        Ok(())
    }
}

impl Dispatch for Metered {
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move {
            let started = Instant::now();
            // The directory is shared (an `Arc`), not the tenant copied.
            let directory = self.tenants.borrow().clone();
            let tenant = directory.get(&call.tenant);
            let record = self
                .auditor
                .as_ref()
                .map(|_| call_record(&call, tenant.is_some_and(|t| t.audit_arguments)));
            if let Some(tenant) = tenant {
                let checked = match self.check_rates(tenant, &call.server, &call.tool) {
                    Ok(()) => self.charge(tenant, &call.server, &call.tool).await,
                    Err(e) => Err(e),
                };
                if let Err((why, reason)) = checked {
                    instruments().refusals.add(
                        1,
                        &[
                            KeyValue::new("reason", why.as_str()),
                            KeyValue::new("quiver.tenant", tenant.id.clone()),
                        ],
                    );
                    if let (Some(auditor), Some(mut record)) = (&self.auditor, record) {
                        record.decision = Decision::Denied;
                        record.outcome = AuditOutcome::Refused;
                        record.reason = Some(reason.clone());
                        record.latency_us = micros(started);
                        auditor.record(record);
                    }
                    return Err(UpstreamError::Refused {
                        id: call.server.clone(),
                        reason,
                    });
                }
            }
            let result = self.inner.call_tool(call, options).await;
            if let (Some(auditor), Some(mut record)) = (&self.auditor, record) {
                record.latency_us = micros(started);
                match &result {
                    Ok(r) if r.is_error == Some(true) => record.outcome = AuditOutcome::ToolError,
                    Ok(_) => {}
                    Err(e) => {
                        record.outcome = AuditOutcome::Error;
                        record.reason = Some(quiver_view::redact::redact(&e.to_string()));
                    }
                }
                auditor.record(record);
            }
            result
        })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        self.inner.request(server, request, options)
    }

    fn resource_updates(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<quiver_upstream::ResourceUpdate>> {
        self.inner.resource_updates()
    }
}

fn micros(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The record of `call`, allowed and `ok` until known otherwise.
fn call_record(call: &ToolCall, with_arguments: bool) -> AuditRecord {
    let arguments = call.arguments.clone().map(serde_json::Value::Object);
    AuditRecord {
        edge: call.origin.edge.clone(),
        tool: Some(format!("{}/{}", call.server, call.tool)),
        arguments_sha256: Some(digest_of(arguments.as_ref())),
        arguments: if with_arguments { arguments } else { None },
        script_sha256: call.origin.script_sha256.clone(),
        ..AuditRecord::new(AuditKind::Call, &call.tenant, &call.origin.caller, now_ms())
    }
}

#[cfg(test)]
mod tests {
    use quiver_telemetry::metrics::sample;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    use super::*;

    /// Answers every call; counts what reached it.
    #[derive(Default)]
    struct Upstream {
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Dispatch for Upstream {
        fn call_tool(
            &self,
            _call: ToolCall,
            _options: CallOptions,
        ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(CallToolResult::success(vec![ContentBlock::text("ok")])) })
        }

        fn request<'a>(
            &'a self,
            server: &'a str,
            _request: ClientRequest,
            _options: CallOptions,
        ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
            Box::pin(async move { Err(UpstreamError::Unknown(server.to_string())) })
        }
    }

    fn call(tenant: &str, tool: &str) -> ToolCall {
        ToolCall {
            tenant: tenant.into(),
            origin: Default::default(),
            server: "demo".into(),
            tool: tool.into(),
            arguments: None,
        }
    }

    /// The `quiver_refusals_total` sample of `tenant` for `reason`, 0 when absent.
    fn refusals(tenant: &str, reason: &str) -> u64 {
        sample(
            "quiver_refusals_total",
            &format!("quiver_tenant=\"{tenant}\",reason=\"{reason}\""),
        )
        .map_or(0, |n| n as u64)
    }

    #[tokio::test]
    async fn each_refusal_is_counted_by_its_reason_and_tenant() {
        // Unique tenant ids: other tests in this process count refusals too.
        let tenant: Tenant = serde_json::from_value(json!({
            "id": "metering-refusals",
            "display_name": "metering-refusals",
            "rate_limit_per_minute": 2,
            "tool_rate_limits": {"demo/slow": 1},
            "created_ms": 0,
            "updated_ms": 0,
        }))
        .unwrap();
        let spender: Tenant = serde_json::from_value(json!({
            "id": "metering-refusals-budget",
            "display_name": "metering-refusals-budget",
            "budget": 10.0,
            "prices": {"demo/any": 1.0},
            "created_ms": 0,
            "updated_ms": 0,
        }))
        .unwrap();
        let (_keep, tenants) = watch::channel(Arc::new(TenantDirectory::new([tenant, spender])));
        let upstream = Arc::new(Upstream::default());
        let metered = Metered::new(upstream.clone(), tenants, None);
        let t = "metering-refusals";
        let options = || CallOptions::default();
        metered.call_tool(call(t, "slow"), options()).await.unwrap();
        assert!(metered.call_tool(call(t, "slow"), options()).await.is_err());
        assert_eq!(refusals(t, "tool_rate_limit"), 1);
        metered.call_tool(call(t, "fast"), options()).await.unwrap();
        assert!(metered.call_tool(call(t, "fast"), options()).await.is_err());
        assert_eq!(refusals(t, "rate_limit"), 1);
        assert_eq!(refusals(t, "tool_rate_limit"), 1);
        // No control plane to lease the budget from: every priced call is refused.
        let b = "metering-refusals-budget";
        assert!(metered.call_tool(call(b, "any"), options()).await.is_err());
        assert_eq!(refusals(b, "budget"), 1);
        assert_eq!(refusals(b, "rate_limit"), 0);
        assert_eq!(
            upstream.calls.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "no refused call reached the upstream"
        );
    }

    #[test]
    fn a_bucket_allows_its_burst_then_says_when_to_retry() {
        let start = Instant::now();
        let mut bucket = Bucket {
            tokens: 3.0,
            per_minute: 3,
            last: start,
        };
        for _ in 0..3 {
            assert!(bucket.take(3, start).is_ok());
        }
        let wait = bucket.take(3, start).unwrap_err();
        assert!((19.0..=20.0).contains(&wait.as_secs_f64()), "{wait:?}");
        // Twenty seconds later one call is allowed again, not two.
        let later = start + Duration::from_secs(20);
        assert!(bucket.take(3, later).is_ok());
        assert!(bucket.take(3, later).is_err());
    }
}

#[cfg(test)]
mod bucket_bound_tests {
    use super::*;

    #[test]
    fn the_buckets_stay_within_their_bound() {
        let now = Instant::now();
        let key = |n: usize| BucketKey {
            tenant: format!("t{n}"),
            tool: None,
        };
        let mut buckets = HashMap::new();
        for n in 0..MAX_BUCKETS {
            // Half spent just now, half refilled long ago.
            let spent = n % 2 == 0;
            buckets.insert(
                key(n),
                Bucket {
                    tokens: if spent { 0.0 } else { 60.0 },
                    per_minute: 60,
                    last: now,
                },
            );
        }
        make_room(&mut buckets, now);
        assert_eq!(buckets.len(), MAX_BUCKETS / 2, "the refilled ones went");
        assert!(
            buckets.values().all(|b| b.tokens == 0.0),
            "the spent ones stay"
        );
        // None refilled: one goes, the fullest.
        buckets.get_mut(&key(0)).expect("a spent bucket").tokens = 30.0;
        while buckets.len() < MAX_BUCKETS {
            let n = buckets.len() * 2 + 1;
            buckets.insert(
                key(n + MAX_BUCKETS),
                Bucket {
                    tokens: 0.0,
                    per_minute: 60,
                    last: now,
                },
            );
        }
        make_room(&mut buckets, now);
        assert_eq!(buckets.len(), MAX_BUCKETS - 1);
        assert!(!buckets.contains_key(&key(0)), "the fullest went");
    }
}
