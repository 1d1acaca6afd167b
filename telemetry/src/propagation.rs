//! W3C trace context (`traceparent`, `tracestate`) in and out of the three
//! carriers a request crosses: MCP `params._meta`, HTTP headers and gRPC
//! metadata. Injection writes the current span's context; extraction yields
//! a parent for the next span only when the carrier holds a valid one.

use std::sync::OnceLock;

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapPropagator},
    trace::TraceContextExt,
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

fn propagator() -> &'static TraceContextPropagator {
    static PROPAGATOR: OnceLock<TraceContextPropagator> = OnceLock::new();
    PROPAGATOR.get_or_init(TraceContextPropagator::new)
}

/// The keys trace context uses in every carrier.
pub const TRACE_KEYS: [&str; 2] = ["traceparent", "tracestate"];

fn valid(cx: Context) -> Option<Context> {
    cx.span().span_context().is_valid().then_some(cx)
}

/// The context of the current tracing span, if it belongs to a trace.
pub fn current() -> Option<Context> {
    valid(tracing::Span::current().context())
}

/// Makes `cx` the parent of `span` (a remote parent from a carrier).
pub fn adopt(span: &tracing::Span, cx: Option<Context>) {
    if let Some(cx) = cx {
        let _ = span.set_parent(cx);
    }
}

struct MetaWriter<'a>(&'a mut Map<String, Value>);
impl Injector for MetaWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), Value::String(value));
    }
}
struct MetaReader<'a>(&'a Map<String, Value>);
impl Extractor for MetaReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Writes the current span's trace context into an MCP `_meta` object
/// (the MCP semantic conventions' carrier); nothing when untraced.
pub fn inject_into_meta(meta: &mut Map<String, Value>) {
    if let Some(cx) = current() {
        propagator().inject_context(&cx, &mut MetaWriter(meta));
    }
}

/// The trace context an MCP `_meta` object carries.
pub fn extract_from_meta(meta: &Map<String, Value>) -> Option<Context> {
    valid(propagator().extract(&MetaReader(meta)))
}

struct HeaderWriter<'a>(&'a mut http::HeaderMap);
impl Injector for HeaderWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}
struct HeaderReader<'a>(&'a http::HeaderMap);
impl Extractor for HeaderReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Writes the current span's trace context into HTTP headers.
pub fn inject_into_headers(headers: &mut http::HeaderMap) {
    if let Some(cx) = current() {
        propagator().inject_context(&cx, &mut HeaderWriter(headers));
    }
}

/// The trace context HTTP headers carry.
pub fn extract_from_headers(headers: &http::HeaderMap) -> Option<Context> {
    valid(propagator().extract(&HeaderReader(headers)))
}

struct MetadataWriter<'a>(&'a mut tonic::metadata::MetadataMap);
impl Injector for MetadataWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            tonic::metadata::MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}
struct MetadataReader<'a>(&'a tonic::metadata::MetadataMap);
impl Extractor for MetadataReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        TRACE_KEYS
            .iter()
            .copied()
            .filter(|k| self.0.contains_key(*k))
            .collect()
    }
}

/// Writes the current span's trace context into gRPC request metadata.
pub fn inject_into_metadata(metadata: &mut tonic::metadata::MetadataMap) {
    if let Some(cx) = current() {
        propagator().inject_context(&cx, &mut MetadataWriter(metadata));
    }
}

/// The trace context gRPC request metadata carries.
pub fn extract_from_metadata(metadata: &tonic::metadata::MetadataMap) -> Option<Context> {
    valid(propagator().extract(&MetadataReader(metadata)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_in_meta_headers_or_metadata_is_read() {
        let mut meta = Map::new();
        meta.insert("traceparent".into(), PARENT.into());
        meta.insert("progressToken".into(), 7.into());
        let cx = extract_from_meta(&meta).expect("valid parent");
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        assert!(extract_from_headers(&headers).is_some());
        let mut metadata = tonic::metadata::MetadataMap::new();
        metadata.insert("traceparent", PARENT.parse().unwrap());
        assert!(extract_from_metadata(&metadata).is_some());
    }

    #[test]
    fn malformed_or_missing_context_is_no_parent() {
        let mut meta = Map::new();
        assert!(extract_from_meta(&meta).is_none());
        meta.insert("traceparent".into(), "00-zz-00f067aa0ba902b7-01".into());
        assert!(extract_from_meta(&meta).is_none());
        meta.insert("traceparent".into(), 42.into());
        assert!(extract_from_meta(&meta).is_none());
    }

    #[test]
    fn nothing_is_injected_outside_a_trace() {
        let mut meta = Map::new();
        inject_into_meta(&mut meta);
        assert!(meta.is_empty());
    }
}
