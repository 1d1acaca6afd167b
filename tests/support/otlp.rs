//! An OTLP collector inside the test: gRPC (traces, metrics, logs) and HTTP
//! (`/v1/traces` in http/json or http/protobuf; metrics and logs accepted
//! and dropped) on loopback. It keeps every span it receives, with the
//! `service.name` of the process that sent it, the log records and the
//! names of the metrics sent over gRPC, for the test to wait on.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    http::{HeaderMap, StatusCode, header::CONTENT_TYPE},
    response::IntoResponse,
    routing::post,
};
use opentelemetry_proto::tonic::{
    collector::{
        logs::v1::{
            ExportLogsServiceRequest, ExportLogsServiceResponse,
            logs_service_server::{LogsService, LogsServiceServer},
        },
        metrics::v1::{
            ExportMetricsServiceRequest, ExportMetricsServiceResponse,
            metrics_service_server::{MetricsService, MetricsServiceServer},
        },
        trace::v1::{
            ExportTraceServiceRequest, ExportTraceServiceResponse,
            trace_service_server::{TraceService, TraceServiceServer},
        },
    },
    common::v1::{AnyValue, KeyValue, any_value::Value},
};
use prost::Message as _;
use tokio::sync::Notify;

/// One span as the collector received it.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// `service.name` of the resource that exported it.
    pub service: String,
    /// Span name.
    pub name: String,
    /// Trace id, 32 hex digits.
    pub trace_id: String,
    /// Span id, 16 hex digits.
    pub span_id: String,
    /// Parent span id (empty for a root).
    pub parent_span_id: String,
    /// OTLP span kind (2 server, 3 client, 1 internal).
    pub kind: i32,
    /// OTLP status code (2 is error).
    pub status_code: i32,
    /// Attributes, every value as text.
    pub attributes: BTreeMap<String, String>,
    /// Each event's name and attributes.
    pub events: Vec<(String, BTreeMap<String, String>)>,
}

impl ReceivedSpan {
    /// The attribute `key`, if set.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    /// Every attribute value (the span's and its events'), for checks that
    /// something never appears.
    pub fn all_values(&self) -> impl Iterator<Item = &str> {
        self.attributes
            .values()
            .chain(self.events.iter().flat_map(|(_, a)| a.values()))
            .map(String::as_str)
    }
}

/// OTLP span kinds, as the protocol numbers them.
pub mod kind {
    /// `SPAN_KIND_INTERNAL`.
    pub const INTERNAL: i32 = 1;
    /// `SPAN_KIND_SERVER`.
    pub const SERVER: i32 = 2;
    /// `SPAN_KIND_CLIENT`.
    pub const CLIENT: i32 = 3;
}

/// One log record as the collector received it.
#[derive(Debug, Clone)]
pub struct ReceivedLog {
    /// `service.name` of the resource that exported it.
    pub service: String,
    /// The record's event name.
    pub event_name: String,
    /// Its body, as text.
    pub body: String,
    /// Its attributes, every value as text.
    pub attributes: BTreeMap<String, String>,
}

#[derive(Default)]
struct Received {
    spans: Mutex<Vec<ReceivedSpan>>,
    logs: Mutex<Vec<ReceivedLog>>,
    metric_names: Mutex<std::collections::BTreeSet<String>>,
    arrived: Notify,
}

impl Received {
    fn add(&self, request: ExportTraceServiceRequest) {
        let mut spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        for resource_spans in request.resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| attributes(&r.attributes).remove("service.name"))
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push(ReceivedSpan {
                        service: service.clone(),
                        name: span.name,
                        trace_id: hex::encode(&span.trace_id),
                        span_id: hex::encode(&span.span_id),
                        parent_span_id: hex::encode(&span.parent_span_id),
                        kind: span.kind,
                        status_code: span.status.map_or(0, |s| s.code),
                        attributes: attributes(&span.attributes),
                        events: span
                            .events
                            .into_iter()
                            .map(|e| (e.name, attributes(&e.attributes)))
                            .collect(),
                    });
                }
            }
        }
        drop(spans);
        self.arrived.notify_waiters();
    }
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

/// A running collector (its servers stop when the test's runtime ends).
pub struct OtlpReceiver {
    /// `http://127.0.0.1:<port>` of the gRPC receiver.
    pub grpc_endpoint: String,
    /// `http://127.0.0.1:<port>` of the HTTP receiver (`/v1/traces` under it).
    pub http_endpoint: String,
    received: Arc<Received>,
}

struct GrpcReceiver(Arc<Received>);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.add(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let names = request
            .into_inner()
            .resource_metrics
            .into_iter()
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .map(|m| m.name);
        self.0
            .metric_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(names);
        self.0.arrived.notify_waiters();
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        let mut logs = self.0.logs.lock().unwrap_or_else(|p| p.into_inner());
        for resource_logs in request.into_inner().resource_logs {
            let service = resource_logs
                .resource
                .as_ref()
                .and_then(|r| attributes(&r.attributes).remove("service.name"))
                .unwrap_or_default();
            for record in resource_logs
                .scope_logs
                .into_iter()
                .flat_map(|s| s.log_records)
            {
                logs.push(ReceivedLog {
                    service: service.clone(),
                    event_name: record.event_name,
                    body: text(&record.body),
                    attributes: attributes(&record.attributes),
                });
            }
        }
        drop(logs);
        self.0.arrived.notify_waiters();
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// `POST /v1/traces`: the spans, in JSON or protobuf as the content type says.
async fn http_traces(
    received: Arc<Received>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let decoded = if is_json(&headers) {
        serde_json::from_slice::<ExportTraceServiceRequest>(&body).map_err(|e| e.to_string())
    } else {
        ExportTraceServiceRequest::decode(body).map_err(|e| e.to_string())
    };
    match decoded {
        Ok(request) => {
            received.add(request);
            accepted(&headers)
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            format!("not an OTLP trace export: {e}"),
        )
            .into_response(),
    }
}

/// An empty export response in the request's encoding.
fn accepted(headers: &HeaderMap) -> axum::response::Response {
    if is_json(headers) {
        ([(CONTENT_TYPE, "application/json")], "{}").into_response()
    } else {
        ([(CONTENT_TYPE, "application/x-protobuf")], Vec::<u8>::new()).into_response()
    }
}

impl OtlpReceiver {
    /// Starts both receivers on free loopback ports, served from a thread
    /// and runtime of their own (so a test blocking its own runtime, as
    /// starting a process does, never stalls an export).
    pub async fn start() -> OtlpReceiver {
        let received = Arc::new(Received::default());
        let grpc = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the gRPC receiver");
        let http = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the HTTP receiver");
        let grpc_endpoint = format!("http://{}", grpc.local_addr().expect("gRPC address"));
        let http_endpoint = format!("http://{}", http.local_addr().expect("HTTP address"));
        for listener in [&grpc, &http] {
            listener
                .set_nonblocking(true)
                .expect("non-blocking listener");
        }
        let serving = received.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("the receiver's runtime");
            runtime.block_on(serve(serving, grpc, http));
        });
        OtlpReceiver {
            grpc_endpoint,
            http_endpoint,
            received,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received
            .spans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every log record received so far (over gRPC).
    pub fn logs(&self) -> Vec<ReceivedLog> {
        self.received
            .logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The names of every metric received so far (over gRPC).
    pub fn metric_names(&self) -> std::collections::BTreeSet<String> {
        self.received
            .metric_names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits, up to `limit`, until `done` holds of what this collector
    /// received; panics naming `what` when it never does.
    pub async fn wait_until(
        &self,
        limit: Duration,
        what: &str,
        done: impl Fn(&OtlpReceiver) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let arrived = self.received.arrived.notified();
            if done(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "{what}: not received within {limit:?}; logs {:?}, metrics {:?}",
                    self.logs(),
                    self.metric_names()
                );
            }
        }
    }

    /// Waits, up to `limit`, until the spans received satisfy `done`, and
    /// returns them; panics with what did arrive when they never do.
    pub async fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // Registered before looking, so an export in between still wakes us.
            let arrived = self.received.arrived.notified();
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                let seen: Vec<_> = spans
                    .iter()
                    .map(|s| format!("{} {} ({})", s.service, s.name, s.trace_id))
                    .collect();
                panic!("{what}: not received within {limit:?}; received {seen:#?}");
            }
        }
    }
}

/// Serves both receivers until the process ends.
async fn serve(received: Arc<Received>, grpc: std::net::TcpListener, http: std::net::TcpListener) {
    let grpc = tokio::net::TcpListener::from_std(grpc).expect("gRPC listener");
    let http = tokio::net::TcpListener::from_std(http).expect("HTTP listener");
    let services = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(GrpcReceiver(received.clone())))
        .add_service(MetricsServiceServer::new(GrpcReceiver(received.clone())))
        .add_service(LogsServiceServer::new(GrpcReceiver(received.clone())));
    let router = Router::new()
        .route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| {
                http_traces(received.clone(), headers, body)
            }),
        )
        .route(
            "/v1/metrics",
            post(|headers: HeaderMap| async move { accepted(&headers) }),
        )
        .route(
            "/v1/logs",
            post(|headers: HeaderMap| async move { accepted(&headers) }),
        );
    let grpc_served =
        services.serve_with_incoming(tonic::transport::server::TcpIncoming::from(grpc));
    let http_served = axum::serve(http, router);
    let (grpc_result, http_result) = tokio::join!(grpc_served, async { http_served.await });
    grpc_result.expect("the gRPC receiver stopped");
    http_result.expect("the HTTP receiver stopped");
}
