//! What to export and how to log: the `[telemetry]` config table, with the
//! standard OpenTelemetry environment variables winning over it.

use serde::Deserialize;

/// The `[telemetry]` table of a role's config file. Every field is optional;
/// the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_SDK_DISABLED`)
/// override it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// OTLP collector endpoint, e.g. `http://127.0.0.1:4317` (gRPC) or
    /// `http://127.0.0.1:4318` (HTTP; `/v1/traces` etc. are appended).
    /// Export is off when neither this nor `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    pub otlp_endpoint: Option<String>,
    /// `grpc`, `http/protobuf` (default) or `http/json`.
    pub otlp_protocol: Option<OtlpProtocol>,
    /// `service.name` of this process (default `quiver-<role>`).
    pub service_name: Option<String>,
    /// How often metrics are pushed over OTLP, in ms (default 10,000;
    /// `OTEL_METRIC_EXPORT_INTERVAL` wins).
    pub metrics_interval_ms: Option<u64>,
    /// `text` (default) or `json` (one object per line, with `trace_id` and
    /// `span_id` inside a traced request). `QUIVER_LOG_FORMAT` overrides it.
    pub log_format: Option<LogFormat>,
}

/// Why the telemetry settings are not usable; each names the setting and
/// the values it takes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// Not an OTLP protocol.
    #[error("OTLP protocol `{value}` is not one of grpc, http/protobuf, http/json")]
    UnknownProtocol {
        /// The value given.
        value: String,
    },
    /// Not a log format.
    #[error("log format `{value}` is not one of text, json")]
    UnknownLogFormat {
        /// The value given.
        value: String,
    },
    /// An environment variable has a bad value.
    #[error("{variable}: {source}")]
    Variable {
        /// The variable, e.g. `OTEL_EXPORTER_OTLP_PROTOCOL`.
        variable: &'static str,
        /// What is wrong with its value.
        source: Box<SettingsError>,
    },
    /// The configured endpoint is not an http(s) URL.
    #[error("telemetry.otlp_endpoint `{endpoint}` must start with http:// or https://")]
    EndpointScheme {
        /// The endpoint given.
        endpoint: String,
    },
}

impl SettingsError {
    /// This error, as the value of environment variable `variable`.
    fn in_variable(variable: &'static str) -> impl FnOnce(SettingsError) -> SettingsError {
        move |e| SettingsError::Variable {
            variable,
            source: Box::new(e),
        }
    }
}

/// The OTLP transport.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (port 4317 by convention).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318 by convention).
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over HTTP with JSON bodies.
    #[serde(rename = "http/json")]
    HttpJson,
}

impl OtlpProtocol {
    /// Parses the value of `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn parse(value: &str) -> Result<OtlpProtocol, SettingsError> {
        match value.trim() {
            "grpc" => Ok(OtlpProtocol::Grpc),
            "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
            "http/json" => Ok(OtlpProtocol::HttpJson),
            other => Err(SettingsError::UnknownProtocol {
                value: other.to_string(),
            }),
        }
    }

    /// The spelling the standard variable uses.
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
            OtlpProtocol::HttpJson => "http/json",
        }
    }
}

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// Parses `text` or `json`.
    pub fn parse(value: &str) -> Result<LogFormat, SettingsError> {
        match value.trim() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(SettingsError::UnknownLogFormat {
                value: other.to_string(),
            }),
        }
    }
}

/// The settings after the environment was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// Where OTLP goes; `None` when export is off.
    pub export: Option<Export>,
    /// The service name on every signal.
    pub service_name: String,
    /// How log lines are written.
    pub log_format: LogFormat,
}

/// An enabled OTLP export.
#[derive(Clone, Debug, PartialEq)]
pub struct Export {
    /// The endpoint from the config file; `None` when the environment names
    /// it (the exporters then read the standard variables themselves).
    pub endpoint_from_config: Option<String>,
    /// The transport.
    pub protocol: OtlpProtocol,
    /// Push interval of metrics.
    pub metrics_interval: std::time::Duration,
}

impl TelemetrySettings {
    /// Applies the environment (read through `env`, so tests need not touch
    /// the process's variables) over these settings.
    pub fn resolve(
        &self,
        role: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Resolved, SettingsError> {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let disabled = set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim() == "true");
        let env_endpoint = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        ]
        .iter()
        .any(|name| set(name).is_some());
        let protocol = match set("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(value) => OtlpProtocol::parse(&value)
                .map_err(SettingsError::in_variable("OTEL_EXPORTER_OTLP_PROTOCOL"))?,
            None => self.otlp_protocol.unwrap_or_default(),
        };
        let export = if disabled {
            None
        } else if env_endpoint {
            Some(None)
        } else {
            self.otlp_endpoint.clone().map(Some)
        };
        let log_format = match set("QUIVER_LOG_FORMAT") {
            Some(value) => {
                LogFormat::parse(&value).map_err(SettingsError::in_variable("QUIVER_LOG_FORMAT"))?
            }
            None => self.log_format.unwrap_or_default(),
        };
        if let Some(Some(endpoint)) = &export
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            return Err(SettingsError::EndpointScheme {
                endpoint: endpoint.clone(),
            });
        }
        Ok(Resolved {
            export: export.map(|endpoint_from_config| Export {
                endpoint_from_config,
                protocol,
                metrics_interval: std::time::Duration::from_millis(
                    set("OTEL_METRIC_EXPORT_INTERVAL")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .or(self.metrics_interval_ms)
                        .unwrap_or(10_000)
                        .max(100),
                ),
            }),
            service_name: set("OTEL_SERVICE_NAME")
                .or_else(|| self.service_name.clone())
                .unwrap_or_else(|| format!("quiver-{role}")),
            log_format,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn export_is_off_unless_an_endpoint_is_named() {
        let resolved = TelemetrySettings::default()
            .resolve("edge", env(&[]))
            .unwrap();
        assert_eq!(resolved.export, None);
        assert_eq!(resolved.service_name, "quiver-edge");
        assert_eq!(resolved.log_format, LogFormat::Text);
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = TelemetrySettings {
            otlp_endpoint: Some("http://file:4318".into()),
            otlp_protocol: Some(OtlpProtocol::HttpJson),
            service_name: Some("from-file".into()),
            log_format: Some(LogFormat::Text),
            ..Default::default()
        };
        let resolved = file
            .resolve(
                "executor",
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4317"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                    ("OTEL_SERVICE_NAME", "from-env"),
                    ("QUIVER_LOG_FORMAT", "json"),
                ]),
            )
            .unwrap();
        let export = resolved.export.unwrap();
        assert_eq!(
            export.endpoint_from_config, None,
            "the exporter reads the variable"
        );
        assert_eq!(export.protocol, OtlpProtocol::Grpc);
        assert_eq!(resolved.service_name, "from-env");
        assert_eq!(resolved.log_format, LogFormat::Json);
    }

    #[test]
    fn sdk_disabled_turns_export_off_and_bad_values_are_named() {
        let file = TelemetrySettings {
            otlp_endpoint: Some("http://file:4318".into()),
            ..Default::default()
        };
        let off = file
            .resolve("edge", env(&[("OTEL_SDK_DISABLED", "true")]))
            .unwrap();
        assert_eq!(off.export, None);
        let err = file
            .resolve("edge", env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "udp")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && err.contains("udp"),
            "{err}"
        );
        let bad = TelemetrySettings {
            otlp_endpoint: Some("collector:4317".into()),
            ..Default::default()
        };
        let err = bad.resolve("edge", env(&[])).unwrap_err().to_string();
        assert!(err.contains("http://"), "{err}");
    }
}
