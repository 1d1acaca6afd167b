//! Log output and telemetry of a role: logs to stderr (stdout may carry
//! MCP), filtered by `RUST_LOG`, as text or JSON; OpenTelemetry export when
//! configured (see `quiver_telemetry::TelemetrySettings`).

use anyhow::Context as _;
use quiver_telemetry::{TelemetryGuard, TelemetrySettings};

/// Installs the logger and telemetry of `role`; `default` is the filter
/// when `RUST_LOG` is unset. Keep the guard until the role stops: dropping
/// it flushes what is still buffered for export.
pub fn init(
    role: &'static str,
    settings: &TelemetrySettings,
    default: &str,
) -> anyhow::Result<TelemetryGuard> {
    quiver_telemetry::init(role, settings, default)
        .map_err(anyhow::Error::msg)
        .context("telemetry (the [telemetry] table or the OTEL_* variables)")
}
