//! The cluster's audit log: what executors ship ([`AuditRecord`]s of calls
//! and executions), appended in log order with increasing ids, never
//! changed, and trimmed only by the retention setting (a maximum age,
//! measured on the leader's clock of the appending entry, and a maximum
//! number of records). Replicated like the rest of the state, so it survives
//! restarts and the loss of a minority of nodes.

use std::collections::VecDeque;

use quiver_proto::audit::AuditRecord;
use serde::{Deserialize, Serialize};

pub use quiver_admin::audit::{AuditQuery, AuditRetention};

/// The replicated audit log.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AuditLog {
    /// Records, oldest first.
    pub records: VecDeque<AuditRecord>,
    /// Id of the next record.
    pub next_id: u64,
    /// The retention setting.
    #[serde(default)]
    pub retention: AuditRetention,
}

impl AuditLog {
    /// Appends `records` (ids assigned here) and applies the retention at
    /// `now_ms`; returns the ids given, first and last.
    pub fn append(&mut self, records: Vec<AuditRecord>, now_ms: u64) -> Option<(u64, u64)> {
        let first = self.next_id.max(1);
        let mut last = None;
        for mut record in records {
            self.next_id = self.next_id.max(1);
            record.id = self.next_id;
            self.next_id += 1;
            last = Some(record.id);
            self.records.push_back(record);
        }
        self.trim(now_ms);
        last.map(|last| (first, last))
    }

    /// Changes the retention and applies it at `now_ms`.
    pub fn set_retention(&mut self, retention: AuditRetention, now_ms: u64) {
        self.retention = retention;
        self.trim(now_ms);
    }

    fn trim(&mut self, now_ms: u64) {
        let max_age_ms = u64::from(self.retention.max_age_days) * 24 * 3600 * 1000;
        let oldest_kept = now_ms.saturating_sub(max_age_ms);
        while self.records.front().is_some_and(|r| r.at_ms < oldest_kept) {
            self.records.pop_front();
        }
        let max = usize::try_from(self.retention.max_records).unwrap_or(usize::MAX);
        while self.records.len() > max {
            self.records.pop_front();
        }
    }

    /// The newest records matching `query`, oldest first.
    pub fn query(&self, query: &AuditQuery) -> Vec<AuditRecord> {
        let limit = usize::try_from(query.limit.unwrap_or(1000)).unwrap_or(usize::MAX);
        let mut found: Vec<AuditRecord> = self
            .records
            .iter()
            .rev()
            .filter(|r| query.tenant.as_ref().is_none_or(|t| &r.tenant == t))
            .filter(|r| query.since_ms.is_none_or(|s| r.at_ms >= s))
            .take(limit)
            .cloned()
            .collect();
        found.reverse();
        found
    }
}

#[cfg(test)]
mod tests {
    use quiver_proto::audit::{AuditKind, AuditOutcome, Decision};

    use super::*;

    fn record(tenant: &str, at_ms: u64) -> AuditRecord {
        AuditRecord {
            id: 0,
            at_ms,
            tenant: tenant.into(),
            caller: "key:k".into(),
            edge: "e".into(),
            executor: "x".into(),
            kind: AuditKind::Call,
            tool: Some("s/t".into()),
            arguments_sha256: None,
            arguments: None,
            decision: Decision::Allowed,
            reason: None,
            latency_us: 1,
            outcome: AuditOutcome::Ok,
            script_sha256: None,
            task_id: None,
        }
    }

    #[test]
    fn records_get_increasing_ids_and_retention_drops_the_oldest() {
        let mut log = AuditLog::default();
        log.set_retention(
            AuditRetention {
                max_age_days: 1,
                max_records: 3,
            },
            0,
        );
        let day = 24 * 3600 * 1000;
        assert_eq!(
            log.append(vec![record("a", 10), record("b", 20)], 30),
            Some((1, 2))
        );
        assert_eq!(
            log.append(vec![record("a", 40), record("a", 50)], 60),
            Some((3, 4))
        );
        let ids: Vec<u64> = log.records.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2, 3, 4], "the record limit drops the oldest");
        log.append(vec![record("b", day + 45)], day + 45);
        let ids: Vec<u64> = log.records.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![4, 5], "records older than a day are gone");
        let a = log.query(&AuditQuery {
            tenant: Some("a".into()),
            ..AuditQuery::default()
        });
        assert_eq!(a.iter().map(|r| r.id).collect::<Vec<_>>(), vec![4]);
        let since = log.query(&AuditQuery {
            since_ms: Some(51),
            ..AuditQuery::default()
        });
        assert_eq!(since.iter().map(|r| r.id).collect::<Vec<_>>(), vec![5]);
    }
}
