//! The executor's side of the audit log: every call it makes or refuses and
//! every script it runs leaves an [`AuditRecord`], buffered here and shipped
//! to the control plane (which keeps them, append-only, under its retention
//! setting) every [`SHIP_EVERY`] and at shutdown. While the control plane
//! cannot be reached records wait in memory, up to [`MAX_BUFFERED`]; beyond
//! that the oldest are dropped and the drop is logged.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use quiver_admin::AdminTransport;
use quiver_contract::{ExecuteError, ExecuteRequest, ScriptOutcome, Scripts};
use quiver_proto::audit::{AuditKind, AuditOutcome, AuditRecord, Decision, script_digest};
use quiver_upstream::CallSink;
use tokio_util::sync::CancellationToken;

/// How often buffered records are shipped.
pub const SHIP_EVERY: Duration = Duration::from_secs(1);
/// Records kept while the control plane is unreachable.
pub const MAX_BUFFERED: usize = 100_000;
/// Records per shipment.
const BATCH: usize = 500;

/// Buffers this executor's records and ships them.
pub struct Auditor {
    node: String,
    buffer: Mutex<VecDeque<AuditRecord>>,
    /// Where records go (the cluster's audit log).
    control_plane: Option<Arc<dyn AdminTransport>>,
    shipping: tokio::sync::Mutex<()>,
    /// Records waiting to leave as OTel log records (OTLP export on):
    /// encoded and handed to the exporter off the request path.
    exporting: Mutex<Vec<AuditRecord>>,
}

impl Auditor {
    /// An auditor for executor `node`, shipping to `control_plane`; without
    /// one records are only logged at debug level.
    pub fn new(
        node: impl Into<String>,
        control_plane: Option<Arc<dyn AdminTransport>>,
    ) -> Arc<Auditor> {
        let auditor = Arc::new(Auditor {
            node: node.into(),
            buffer: Mutex::new(VecDeque::new()),
            control_plane,
            shipping: tokio::sync::Mutex::new(()),
            exporting: Mutex::new(Vec::new()),
        });
        let weak = Arc::downgrade(&auditor);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SHIP_EVERY);
            loop {
                tick.tick().await;
                let Some(auditor) = weak.upgrade() else {
                    return;
                };
                auditor.export_pending();
                auditor.flush().await;
            }
        });
        auditor
    }

    /// This executor's name in records.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Adds a record (its `executor` set to this node).
    pub fn record(&self, mut record: AuditRecord) {
        record.executor.clone_from(&self.node);
        tracing::debug!(target: "quiver::audit", record = %serde_json::to_string(&record).unwrap_or_default());
        // With OTLP export on, every record also leaves as an OTel log
        // record (the same redacted content the control plane keeps).
        if quiver_telemetry::audit_log::enabled() {
            let mut exporting = self.exporting.lock().unwrap_or_else(|p| p.into_inner());
            if exporting.len() < MAX_BUFFERED {
                exporting.push(record.clone());
            }
        }
        if self.control_plane.is_none() {
            return;
        }
        let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        if buffer.len() >= MAX_BUFFERED {
            buffer.pop_front();
            tracing::warn!(
                "audit buffer full ({MAX_BUFFERED} records, control plane unreachable): the oldest record was dropped"
            );
        }
        buffer.push_back(record);
    }

    /// Hands the records waiting for OTLP to the log exporter (which batches
    /// and sends them from a thread of its own).
    pub fn export_pending(&self) {
        let pending =
            std::mem::take(&mut *self.exporting.lock().unwrap_or_else(|p| p.into_inner()));
        for record in pending {
            if let Ok(json) = serde_json::to_value(&record) {
                quiver_telemetry::audit_log::export(
                    &record.tenant,
                    record.tool.as_deref().unwrap_or(""),
                    &json,
                );
            }
        }
    }

    /// Ships everything buffered; what fails to ship stays buffered.
    pub async fn flush(&self) {
        self.export_pending();
        let Some(control_plane) = &self.control_plane else {
            return;
        };
        let _one_at_a_time = self.shipping.lock().await;
        loop {
            let batch: Vec<AuditRecord> = {
                let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
                let n = buffer.len().min(BATCH);
                buffer.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            if let Err(e) = control_plane.append_audit(batch.clone()).await {
                tracing::warn!(
                    "shipping {} audit records failed: {e}; kept for the next try",
                    batch.len()
                );
                let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
                for record in batch.into_iter().rev() {
                    buffer.push_front(record);
                }
                return;
            }
        }
    }
}

/// Runs scripts through `inner` and records each execution.
pub struct AuditedScripts {
    inner: Arc<dyn Scripts>,
    auditor: Arc<Auditor>,
}

impl AuditedScripts {
    /// Audits `inner`'s executions with `auditor`.
    pub fn new(inner: Arc<dyn Scripts>, auditor: Arc<Auditor>) -> AuditedScripts {
        AuditedScripts { inner, auditor }
    }
}

pub(crate) use quiver_proto::clock::now_ms;

impl Scripts for AuditedScripts {
    fn execute(
        &self,
        request: ExecuteRequest,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let mut record = AuditRecord {
                edge: request.origin.edge.clone(),
                script_sha256: Some(script_digest(&request.code)),
                ..AuditRecord::new(
                    AuditKind::Execute,
                    &request.tenant,
                    &request.origin.caller,
                    now_ms(),
                )
            };
            let result = self.inner.execute(request, cancel, sink).await;
            record.latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            match &result {
                Ok(outcome) => {
                    if let Some(error) = &outcome.error {
                        record.outcome = AuditOutcome::Script(error.kind);
                        record.reason = Some(quiver_view::redact::redact(&error.message));
                    }
                }
                Err(e) => {
                    if matches!(e, ExecuteError::Rejected(_) | ExecuteError::Busy { .. }) {
                        record.decision = Decision::Denied;
                    }
                    record.outcome = AuditOutcome::Refused;
                    record.reason = Some(quiver_view::redact::redact(&e.to_string()));
                }
            }
            self.auditor.record(record);
            result
        })
    }
}
