//! Installs the process's logger and, when export is configured, the
//! OpenTelemetry tracer, meter and logger providers with their OTLP
//! exporters. Called once by each role at start; the guard flushes on drop.

use tracing::Level;
use tracing_subscriber::{
    EnvFilter, Layer as _, filter::Targets, layer::SubscriberExt as _, util::SubscriberInitExt as _,
};

use crate::{
    json_log::JsonFormat,
    metrics,
    settings::{LogFormat, Resolved, SettingsError, TelemetrySettings},
    spans::TARGET,
};

/// Why telemetry could not be installed; each names the setting at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The `[telemetry]` table or an `OTEL_*` variable is not usable.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// An OTLP exporter could not be built.
    #[cfg(feature = "otlp")]
    #[error("OTLP {signal} exporter ({protocol}): {source}")]
    Exporter {
        /// `trace`, `metric` or `log`.
        signal: &'static str,
        /// The transport, as `OTEL_EXPORTER_OTLP_PROTOCOL` spells it.
        protocol: &'static str,
        /// The exporter's error.
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// Export is configured, but the build cannot export.
    #[error(
        "OTLP export is configured but this build has no OTLP exporter (build with the `otlp` feature)"
    )]
    NoExporter,
    /// The log filter could not be built.
    #[error("log filter: {0}")]
    LogFilter(#[source] tracing_subscriber::filter::ParseError),
}

/// Flushes and stops the exporters when dropped (at the end of `main`).
#[must_use = "dropping the guard stops telemetry export"]
pub struct TelemetryGuard {
    #[cfg(feature = "otlp")]
    tracer: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    #[cfg(feature = "otlp")]
    logger: Option<opentelemetry_sdk::logs::SdkLoggerProvider>,
    /// What was resolved, for the startup line.
    pub resolved: Resolved,
}

impl TelemetryGuard {
    /// One line for the startup banner: where telemetry goes.
    pub fn describe(&self) -> String {
        match &self.resolved.export {
            None => "OTLP export off".to_string(),
            Some(export) => format!(
                "OTLP {} to {}",
                export.protocol.as_str(),
                export
                    .endpoint_from_config
                    .clone()
                    .unwrap_or_else(|| "the OTEL_EXPORTER_OTLP_* endpoint".into())
            ),
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        {
            if let Some(tracer) = self.tracer.take() {
                let _ = tracer.shutdown();
            }
            if let Some(logger) = self.logger.take() {
                let _ = logger.shutdown();
            }
        }
        metrics::shutdown();
    }
}

/// Installs logging (`RUST_LOG`, else `default_filter`; text or JSON) and
/// the OpenTelemetry pipeline for `role`. Errors name the setting at fault.
pub fn init(
    role: &'static str,
    settings: &TelemetrySettings,
    default_filter: &str,
) -> Result<TelemetryGuard, TelemetryError> {
    let resolved = settings.resolve(role, |name| std::env::var(name).ok())?;
    let mut resource = opentelemetry_sdk::Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new("quiver.role", role));
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(resolved.service_name.clone());
    }
    let resource = resource.build();

    #[cfg(feature = "otlp")]
    let (tracer, logger) = match &resolved.export {
        Some(export) => {
            let exporters = otlp::Exporters::build(export)?;
            metrics::configure(metrics::ProviderParts {
                resource: resource.clone(),
                push: Some((exporters.metrics, export.metrics_interval)),
            });
            let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder()
                .with_batch_exporter(exporters.spans)
                .with_resource(resource.clone())
                .build();
            let logger = opentelemetry_sdk::logs::SdkLoggerProvider::builder()
                .with_batch_exporter(exporters.logs)
                .with_resource(resource)
                .build();
            use opentelemetry::logs::LoggerProvider as _;
            let _ = crate::audit_log::LOGGER.set(logger.logger("quiver.audit"));
            (Some(tracer), Some(logger))
        }
        None => {
            metrics::configure(metrics::ProviderParts {
                resource,
                push: None,
            });
            (None, None)
        }
    };
    #[cfg(not(feature = "otlp"))]
    {
        if resolved.export.is_some() {
            return Err(TelemetryError::NoExporter);
        }
        metrics::configure(metrics::ProviderParts { resource });
    }

    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter))
        .add_directive(
            format!("{TARGET}=off")
                .parse()
                .map_err(TelemetryError::LogFilter)?,
        )
        // rmcp's OAuth client prints token responses at debug level (the
        // standard tokens redacted, any extra field a server adds not): never
        // below info, whatever the filter asks.
        .add_directive(
            "rmcp::transport::auth=info"
                .parse()
                .map_err(TelemetryError::LogFilter)?,
        );
    let fmt = match resolved.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            // Colours only for a person at a terminal: a container's or a
            // service manager's log keeps plain text.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .event_format(JsonFormat)
            .boxed(),
    }
    .with_filter(filter);
    #[cfg(feature = "otlp")]
    let otel = tracer.as_ref().map(|provider| {
        use opentelemetry::trace::TracerProvider as _;
        // Only what the conventions ask for: no per-poll busy/idle timing,
        // thread or source-location attributes (they cost on every span
        // and double what is exported).
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("quiver"))
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_level(false)
            .with_filter(Targets::new().with_target(TARGET, Level::TRACE))
    });
    #[cfg(not(feature = "otlp"))]
    let otel: Option<tracing_subscriber::layer::Identity> = {
        let _ = (Targets::new(), Level::TRACE);
        None
    };
    // A second init in one process (tests starting several roles) keeps the first.
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    Ok(TelemetryGuard {
        #[cfg(feature = "otlp")]
        tracer,
        #[cfg(feature = "otlp")]
        logger,
        resolved,
    })
}

#[cfg(feature = "otlp")]
mod otlp {
    use opentelemetry_otlp::{
        LogExporter, MetricExporter, Protocol, SpanExporter, WithExportConfig as _,
    };

    use crate::{
        settings::{Export, OtlpProtocol},
        setup::TelemetryError,
    };

    /// One exporter per signal, on the configured transport.
    pub(super) struct Exporters {
        pub(super) spans: SpanExporter,
        pub(super) metrics: MetricExporter,
        pub(super) logs: LogExporter,
    }

    impl Exporters {
        pub(super) fn build(export: &Export) -> Result<Exporters, TelemetryError> {
            let fail = |signal: &'static str, source: opentelemetry_otlp::ExporterBuildError| {
                TelemetryError::Exporter {
                    signal,
                    protocol: export.protocol.as_str(),
                    source,
                }
            };
            // The HTTP exporters use a configured endpoint verbatim, so the
            // signal's path is added here; from the environment they add it.
            let http_endpoint = |path: &str| {
                export
                    .endpoint_from_config
                    .as_ref()
                    .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
            };
            match export.protocol {
                OtlpProtocol::Grpc => {
                    let endpoint = export.endpoint_from_config.clone();
                    let mut spans = SpanExporter::builder().with_tonic();
                    let mut metrics = MetricExporter::builder().with_tonic();
                    let mut logs = LogExporter::builder().with_tonic();
                    if let Some(endpoint) = endpoint {
                        spans = spans.with_endpoint(endpoint.clone());
                        metrics = metrics.with_endpoint(endpoint.clone());
                        logs = logs.with_endpoint(endpoint);
                    }
                    Ok(Exporters {
                        spans: spans.build().map_err(|e| fail("trace", e))?,
                        metrics: metrics.build().map_err(|e| fail("metric", e))?,
                        logs: logs.build().map_err(|e| fail("log", e))?,
                    })
                }
                OtlpProtocol::HttpProtobuf | OtlpProtocol::HttpJson => {
                    let protocol = if export.protocol == OtlpProtocol::HttpJson {
                        Protocol::HttpJson
                    } else {
                        Protocol::HttpBinary
                    };
                    let mut spans = SpanExporter::builder().with_http().with_protocol(protocol);
                    let mut metrics = MetricExporter::builder()
                        .with_http()
                        .with_protocol(protocol);
                    let mut logs = LogExporter::builder().with_http().with_protocol(protocol);
                    if let Some(endpoint) = http_endpoint("v1/traces") {
                        spans = spans.with_endpoint(endpoint);
                    }
                    if let Some(endpoint) = http_endpoint("v1/metrics") {
                        metrics = metrics.with_endpoint(endpoint);
                    }
                    if let Some(endpoint) = http_endpoint("v1/logs") {
                        logs = logs.with_endpoint(endpoint);
                    }
                    Ok(Exporters {
                        spans: spans.build().map_err(|e| fail("trace", e))?,
                        metrics: metrics.build().map_err(|e| fail("metric", e))?,
                        logs: logs.build().map_err(|e| fail("log", e))?,
                    })
                }
            }
        }
    }
}
