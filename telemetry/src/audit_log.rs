//! Audit records as OpenTelemetry log records, when OTLP export is on: the
//! record (already redacted by the executor's auditor) is the body, the
//! tenant and tool are attributes, the event name is `quiver.audit`.

use std::sync::OnceLock;

/// The logger audit records go to; set by [`crate::init`] when logs are exported.
#[cfg(feature = "otlp")]
pub(crate) static LOGGER: OnceLock<opentelemetry_sdk::logs::SdkLogger> = OnceLock::new();
#[cfg(not(feature = "otlp"))]
pub(crate) static LOGGER: OnceLock<()> = OnceLock::new();

/// Whether audit records leave the process as OTel logs.
pub fn enabled() -> bool {
    LOGGER.get().is_some()
}

/// Sends one audit record (its JSON form) as an OTel log record.
pub fn export(tenant: &str, tool: &str, record: &serde_json::Value) {
    #[cfg(feature = "otlp")]
    if let Some(logger) = LOGGER.get() {
        use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
        let mut log = logger.create_log_record();
        log.set_event_name("quiver.audit");
        log.set_severity_number(Severity::Info);
        log.set_severity_text("INFO");
        log.set_body(AnyValue::from(record.to_string()));
        log.add_attribute("quiver.tenant", tenant.to_string());
        log.add_attribute("gen_ai.tool.name", tool.to_string());
        logger.emit(log);
    }
    #[cfg(not(feature = "otlp"))]
    let _ = (tenant, tool, record);
}
