//! The process's meter provider and the Prometheus text rendering of what it
//! holds. One provider per process, built on first use: a pull reader for
//! `/metrics` always, plus an OTLP push reader when [`crate::init`] enabled
//! export before anything was measured.

use std::{
    fmt::Write as _,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use opentelemetry::{
    KeyValue, Value,
    metrics::{Meter, MeterProvider as _},
};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    metrics::{
        InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
        data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics},
        reader::MetricReader,
    },
};

/// The provider and the reader `/metrics` collects from.
struct Registry {
    provider: SdkMeterProvider,
    reader: Arc<ManualReader>,
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
        let reader = Arc::new(ManualReader::builder().build());
        let mut builder = SdkMeterProvider::builder().with_reader(SharedReader(reader.clone()));
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
            reader,
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

/// Lets the provider own a reader that `/metrics` also reads.
#[derive(Debug)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: std::sync::Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// Everything measured so far in this process, in the Prometheus text
/// exposition format (version 0.0.4): OpenTelemetry names with `.` as `_`,
/// the unit as a suffix (`_seconds`, `_bytes`), counters ending in `_total`.
pub fn render_prometheus() -> String {
    let mut collected = ResourceMetrics::default();
    let mut out = String::new();
    if let Err(e) = registry().reader.collect(&mut collected) {
        let _ = writeln!(out, "# collection failed: {e}");
        return out;
    }
    let mut families: Vec<(String, String)> = Vec::new();
    for scope in collected.scope_metrics() {
        for metric in scope.metrics() {
            let mut family = String::new();
            let name = render_metric(metric, &mut family);
            families.push((name, family));
        }
    }
    families.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, family) in families {
        out.push_str(&family);
    }
    out
}

/// The value of one sample of [`render_prometheus`]: `name` with exactly
/// the label set `labels` as rendered (`key="value",…`, keys sorted; empty
/// for none). `None` when nothing was recorded for it.
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

/// The Prometheus name of an OpenTelemetry instrument.
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

fn render_metric(metric: &Metric, out: &mut String) -> String {
    let base = prometheus_name(metric.name(), metric.unit());
    match metric.data() {
        AggregatedMetrics::F64(data) => render_data(&base, metric.description(), data, out),
        AggregatedMetrics::U64(data) => render_data(&base, metric.description(), data, out),
        AggregatedMetrics::I64(data) => render_data(&base, metric.description(), data, out),
    }
}

/// A number as Prometheus writes it.
trait Sample: Copy {
    fn render(self) -> String;
}
impl Sample for f64 {
    fn render(self) -> String {
        if self.is_nan() {
            "NaN".into()
        } else if self.is_infinite() {
            if self > 0.0 { "+Inf" } else { "-Inf" }.into()
        } else {
            format!("{self}")
        }
    }
}
impl Sample for u64 {
    fn render(self) -> String {
        self.to_string()
    }
}
impl Sample for i64 {
    fn render(self) -> String {
        self.to_string()
    }
}

fn render_data<T: Sample>(
    base: &str,
    help: &str,
    data: &MetricData<T>,
    out: &mut String,
) -> String {
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    match data {
        MetricData::Gauge(gauge) => {
            let _ = writeln!(out, "# HELP {base} {help}\n# TYPE {base} gauge");
            for point in gauge.data_points() {
                let labels = labels(point.attributes(), None);
                let _ = writeln!(out, "{base}{labels} {}", point.value().render());
            }
            base.to_string()
        }
        MetricData::Sum(sum) => {
            let (name, kind) = if sum.is_monotonic() {
                (format!("{base}_total"), "counter")
            } else {
                (base.to_string(), "gauge")
            };
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for point in sum.data_points() {
                let labels = labels(point.attributes(), None);
                let _ = writeln!(out, "{name}{labels} {}", point.value().render());
            }
            name
        }
        MetricData::Histogram(histogram) => {
            let _ = writeln!(out, "# HELP {base} {help}\n# TYPE {base} histogram");
            for point in histogram.data_points() {
                let mut cumulative = 0u64;
                let counts: Vec<u64> = point.bucket_counts().collect();
                for (bound, count) in point.bounds().zip(counts.iter()) {
                    cumulative += count;
                    let le = bound.render();
                    let labels = labels(point.attributes(), Some(&le));
                    let _ = writeln!(out, "{base}_bucket{labels} {cumulative}");
                }
                let labels_inf = labels(point.attributes(), Some("+Inf"));
                let _ = writeln!(out, "{base}_bucket{labels_inf} {}", point.count());
                let plain = labels(point.attributes(), None);
                let _ = writeln!(out, "{base}_sum{plain} {}", point.sum().render());
                let _ = writeln!(out, "{base}_count{plain} {}", point.count());
            }
            base.to_string()
        }
        MetricData::ExponentialHistogram(_) => {
            // Quiver configures explicit buckets only.
            base.to_string()
        }
    }
}

fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>, le: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = attributes
        .map(|kv| {
            let key: String = kv
                .key
                .as_str()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            (key, label_value(&kv.value))
        })
        .collect();
    pairs.sort();
    if let Some(le) = le {
        pairs.push(("le".into(), le.into()));
    }
    if pairs.is_empty() {
        return String::new();
    }
    let body: Vec<String> = pairs
        .into_iter()
        .map(|(k, v)| {
            let escaped = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{escaped}\"")
        })
        .collect();
    format!("{{{}}}", body.join(","))
}

fn label_value(value: &Value) -> String {
    value.as_str().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
