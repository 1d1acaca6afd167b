//! Quiver's telemetry, shared by every role: the metric instruments and their
//! Prometheus rendering (`/metrics`), OpenTelemetry traces, metrics and logs
//! exported over OTLP when configured (off by default), W3C trace context
//! carried in MCP `_meta`, gRPC metadata and HTTP headers, JSON logs with
//! trace ids, and the `/healthz` + `/readyz` + `/metrics` routes.
//!
//! It owns no policy: the roles decide what is measured and what "ready"
//! means; this crate only names the instruments and moves the data out.

pub mod audit_log;
pub mod health;
pub mod instruments;
pub mod json_log;
pub mod metrics;
pub mod propagation;
pub mod settings;
mod setup;
pub mod spans;
pub mod tables;

pub use health::{Health, NotReady};
pub use instruments::instruments;
pub use settings::{LogFormat, OtlpProtocol, SettingsError, TelemetrySettings};
pub use setup::{TelemetryError, TelemetryGuard, init};
