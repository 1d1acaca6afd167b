//! The process's meter provider and `/metrics`. One provider per process,
//! built on first use: OpenTelemetry's Prometheus exporter (a pull reader
//! feeding a `prometheus` registry, whose text encoder writes the exposition
//! format) always, plus an OTLP push reader when [`crate::init`] enabled
//! export before anything was measured. Quiver writes no part of the format
//! itself.

use std::sync::{Mutex, OnceLock};
#[cfg(feature = "otlp")]
use std::time::Duration;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry_sdk::{Resource, metrics::SdkMeterProvider};
use prometheus::Encoder as _;

/// The provider and the registry `/metrics` gathers from.
struct Registry {
    provider: SdkMeterProvider,
    prometheus: prometheus::Registry,
    meter: Meter,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();
/// What `crate::init` asked for before the provider was built.
static PENDING: Mutex<Option<ProviderParts>> = Mutex::new(None);

/// What the provider is built with besides the pull reader.
pub(crate) struct ProviderParts {
    pub(crate) resource: Resource,
    #[cfg(feature = "otlp")]
    pub(crate) push: Option<(opentelemetry_otlp::MetricExporter, Duration)>,
}

/// Asks for `parts` to be used when the provider is built; false when it was
/// built already (something measured before telemetry was initialised, as in
/// tests that start several roles in one process).
pub(crate) fn configure(parts: ProviderParts) -> bool {
    if REGISTRY.get().is_some() {
        return false;
    }
    if let Ok(mut pending) = PENDING.lock() {
        *pending = Some(parts);
    }
    true
}

fn registry() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        let parts = PENDING.lock().ok().and_then(|mut p| p.take());
        let prometheus = prometheus::Registry::new();
        // Samples carry only their own attributes: no `otel_scope_*` labels
        // (one meter, `quiver`); the resource goes to `target_info`.
        let mut builder = SdkMeterProvider::builder();
        match opentelemetry_prometheus::exporter()
            .with_registry(prometheus.clone())
            .scope_info_enabled(false)
            .build()
        {
            Ok(exporter) => builder = builder.with_reader(exporter),
            Err(e) => tracing::warn!("/metrics will be empty: {e}"),
        }
        if let Some(parts) = parts {
            builder = builder.with_resource(parts.resource);
            #[cfg(feature = "otlp")]
            if let Some((exporter, interval)) = parts.push {
                let periodic = opentelemetry_sdk::metrics::PeriodicReader::builder(exporter)
                    .with_interval(interval)
                    .build();
                builder = builder.with_reader(periodic);
            }
        }
        let provider = builder.build();
        let meter = provider.meter("quiver");
        Registry {
            provider,
            prometheus,
            meter,
        }
    })
}

/// The meter every Quiver instrument comes from.
pub fn meter() -> &'static Meter {
    &registry().meter
}

/// Pushes what OTLP has not sent yet and stops the push reader.
pub(crate) fn shutdown() {
    if let Some(registry) = REGISTRY.get() {
        let _ = registry.provider.force_flush();
    }
}

/// Everything measured so far in this process, in the Prometheus text
/// exposition format (version 0.0.4), as OpenTelemetry's Prometheus
/// exporter names it: `.` as `_`, the unit as a suffix (`_seconds`,
/// `_bytes`), counters ending in `_total`.
pub fn render_prometheus() -> String {
    let families = registry().prometheus.gather();
    let mut out = Vec::new();
    if let Err(e) = prometheus::TextEncoder::new().encode(&families, &mut out) {
        return format!("# encoding failed: {e}\n");
    }
    String::from_utf8(out).unwrap_or_else(|e| format!("# encoding failed: {e}\n"))
}

/// The content type of [`render_prometheus`].
pub const CONTENT_TYPE: &str = prometheus::TEXT_FORMAT;

/// The value of one sample of [`render_prometheus`]: `name` with exactly
/// the label set `labels` as rendered (`key="value",…`, in the encoder's
/// order; empty for none). `None` when nothing was recorded for it.
///
/// ```
/// # use quiver_telemetry::metrics::sample;
/// let refusals = sample("quiver_refusals_total", r#"quiver_tenant="acme",reason="budget""#);
/// assert_eq!(refusals, None);
/// ```
pub fn sample(name: &str, labels: &str) -> Option<f64> {
    let prefix = if labels.is_empty() {
        format!("{name} ")
    } else {
        format!("{name}{{{labels}}} ")
    };
    render_prometheus()
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// The Prometheus name the exporter gives an OpenTelemetry instrument of
/// `unit` (before a counter's `_total`), for code that looks a family up.
pub fn prometheus_name(name: &str, unit: &str) -> String {
    let mut base: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let suffix = match unit {
        "s" => "_seconds",
        "ms" => "_milliseconds",
        "By" => "_bytes",
        _ => "",
    };
    if !suffix.is_empty() && !base.ends_with(suffix) {
        base.push_str(suffix);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::KeyValue;

    #[test]
    fn instruments_are_rendered_in_the_prometheus_text_format() {
        let meter = meter();
        let counter = meter.u64_counter("test.render.calls").build();
        counter.add(3, &[KeyValue::new("mcp.method.name", "tools/call")]);
        let histogram = meter
            .f64_histogram("test.render.duration")
            .with_unit("s")
            .with_boundaries(vec![0.001, 0.01])
            .build();
        histogram.record(0.005, &[KeyValue::new("quote", "a\"b")]);
        histogram.record(0.5, &[KeyValue::new("quote", "a\"b")]);
        let text = render_prometheus();
        assert!(
            text.contains("# TYPE test_render_calls_total counter"),
            "{text}"
        );
        assert!(
            text.contains("test_render_calls_total{mcp_method_name=\"tools/call\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE test_render_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("test_render_duration_seconds_bucket{quote=\"a\\\"b\",le=\"0.001\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("test_render_duration_seconds_bucket{quote=\"a\\\"b\",le=\"0.01\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("test_render_duration_seconds_bucket{quote=\"a\\\"b\",le=\"+Inf\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("test_render_duration_seconds_count{quote=\"a\\\"b\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn names_follow_the_prometheus_conventions() {
        assert_eq!(
            prometheus_name("mcp.server.operation.duration", "s"),
            "mcp_server_operation_duration_seconds"
        );
        assert_eq!(
            prometheus_name("quiver.worker.memory", "By"),
            "quiver_worker_memory_bytes"
        );
        assert_eq!(
            prometheus_name("quiver.executions", "{execution}"),
            "quiver_executions"
        );
    }
}
