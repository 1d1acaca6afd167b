//! A remote executor reached over gRPC (mTLS when configured): the edge's
//! [`Dispatch`] and [`Scripts`] when executors run as their own processes.
//! Cancelling a call or a script drops its request, which the executor sees
//! and stops on; a script's limits travel with it. Resources, prompts and
//! completion go through `Request`. A call or script whose caller has a
//! sink (a session to tell progress, logs and the upstream's requests to)
//! goes over the streaming RPCs instead (see [`crate::relay`]).

use std::{path::PathBuf, sync::Arc, time::Duration};

use futures::future::BoxFuture;
use quiver_proto::pb::{self, hop_down, hop_up};
use quiver_telemetry::{propagation, quiver_span, spans};
use quiver_upstream::{CallOptions, CallSink, UpstreamError};
use quiver_view::ToolCall;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tracing::Instrument as _;

use quiver_contract::{Dispatch, ExecuteError, ExecuteRequest, ScriptOutcome, Scripts, wire};

/// Client certificates for mTLS to executors.
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// CA that signed the executor's certificate.
    pub ca: PathBuf,
    /// This client's certificate and key (PEM).
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// Name the executor's certificate is issued to.
    pub domain: String,
}

/// Why an executor could not be connected to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not one tonic can dial.
    #[error("`{url}` is not an executor URL")]
    BadUrl {
        /// What was given.
        url: String,
        /// Why it was refused.
        #[source]
        source: tonic::transport::Error,
    },
    /// A certificate or key file could not be read.
    #[error("reading {what} {}", path.display())]
    Read {
        /// Which file (CA, certificate, key).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The TLS settings were refused.
    #[error("configuring TLS to the executor")]
    Tls(#[source] tonic::transport::Error),
    /// The executor did not answer.
    #[error("connecting to executor {url}")]
    Connect {
        /// Where.
        url: String,
        /// Why not.
        #[source]
        source: tonic::transport::Error,
    },
}

/// One executor reached over gRPC.
#[derive(Clone)]
pub struct RemoteExecutor {
    client: pb::executor_client::ExecutorClient<Channel>,
}

impl RemoteExecutor {
    /// Connects to `url` (`http://host:port`, or `https://` with `tls`).
    pub async fn connect(
        url: &str,
        tls: Option<&ClientTls>,
    ) -> Result<RemoteExecutor, ConnectError> {
        let channel =
            endpoint(url, tls)?
                .connect()
                .await
                .map_err(|source| ConnectError::Connect {
                    url: url.to_string(),
                    source,
                })?;
        Ok(RemoteExecutor {
            client: pb::executor_client::ExecutorClient::new(channel),
        })
    }

    /// An executor at `url` connected to on first use (and again after the
    /// connection breaks).
    pub fn lazy(url: &str, tls: Option<&ClientTls>) -> Result<RemoteExecutor, ConnectError> {
        let channel = endpoint(url, tls)?.connect_lazy();
        Ok(RemoteExecutor {
            client: pb::executor_client::ExecutorClient::new(channel),
        })
    }
}

fn endpoint(url: &str, tls: Option<&ClientTls>) -> Result<Endpoint, ConnectError> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|source| ConnectError::BadUrl {
            url: url.to_string(),
            source,
        })?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    if let Some(tls) = tls {
        let read = |what: &'static str, path: &PathBuf| {
            std::fs::read(path).map_err(|source| ConnectError::Read {
                what,
                path: path.clone(),
                source,
            })
        };
        let ca = read("CA", &tls.ca)?;
        let cert = read("certificate", &tls.cert)?;
        let key = read("key", &tls.key)?;
        endpoint = endpoint
            .tls_config(
                ClientTlsConfig::new()
                    .ca_certificate(Certificate::from_pem(ca))
                    .identity(Identity::from_pem(cert, key))
                    .domain_name(tls.domain.clone()),
            )
            .map_err(ConnectError::Tls)?;
    }
    Ok(endpoint)
}

/// How a request to one executor failed in transit.
#[derive(Debug)]
pub enum HopError {
    /// It never reached the executor (it could not be connected to), so it
    /// may go to another one.
    NotSent(String),
    /// The connection broke after it was sent: it may have run.
    Lost(String),
}

/// Metadata an executor puts on every error status it answers with: a
/// status without it comes from the transport.
pub const ANSWERED_BY: &str = "quiver-answered-by";

/// Metadata of an error status that stands for an upstream's JSON-RPC error:
/// its code, so that the edge hears it as the upstream said it (`-32021`
/// with the capabilities it needs, a failed task) and not as the
/// executor's own failure.
pub const UPSTREAM_CODE: &str = "quiver-upstream-code";
/// The error's `data` (JSON), when it kept one.
pub const UPSTREAM_DATA: &str = "quiver-upstream-data";
/// `task` when the upstream ran the call as a task that failed.
pub const UPSTREAM_KIND: &str = "quiver-upstream-kind";

/// An executor's error status for `error` (its message already redacted),
/// carrying an upstream's code and data.
pub fn upstream_status(error: &UpstreamError, message: String) -> tonic::Status {
    let mut status = tonic::Status::unavailable(message);
    let (code, data, task) = match error {
        UpstreamError::Remote { code, data, .. } => (*code, data.as_deref(), false),
        UpstreamError::TaskFailed { code, .. } => (*code, None, true),
        _ => return status,
    };
    let metadata = status.metadata_mut();
    metadata.insert(UPSTREAM_CODE, code.into());
    if let Some(data) = data
        && let Ok(value) = tonic::metadata::MetadataValue::try_from(data.to_string())
    {
        metadata.insert(UPSTREAM_DATA, value);
    }
    if task {
        metadata.insert(
            UPSTREAM_KIND,
            tonic::metadata::MetadataValue::from_static("task"),
        );
    }
    status
}

/// The upstream error an executor's `status` stands for (see
/// [`upstream_status`]); else the executor's own failure.
fn upstream_error_of(server: String, status: &tonic::Status) -> UpstreamError {
    let metadata = status.metadata();
    let code = metadata
        .get(UPSTREAM_CODE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok());
    let message = format!("executor: {}", status.message());
    match code {
        Some(code) if metadata.get(UPSTREAM_KIND).is_some_and(|k| k == "task") => {
            UpstreamError::TaskFailed {
                id: server,
                code,
                message,
            }
        }
        Some(code) => UpstreamError::Remote {
            id: server,
            code,
            message,
            data: metadata
                .get(UPSTREAM_DATA)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| serde_json::from_str(v).ok())
                .map(Box::new),
        },
        None => UpstreamError::Remote {
            id: server,
            code: -32603,
            message,
            data: None,
        },
    }
}

impl HopError {
    fn of(status: &tonic::Status) -> Option<HopError> {
        if status.metadata().contains_key(ANSWERED_BY) {
            None
        } else if not_sent(status) {
            Some(HopError::NotSent(status.message().to_string()))
        } else if lost(status) {
            Some(HopError::Lost(status.message().to_string()))
        } else {
            None
        }
    }
}

/// Whether `status` says the request never left this process: the
/// transport could not connect, or not even resolve the executor's name (a
/// container that stopped leaves the network's DNS).
fn not_sent(status: &tonic::Status) -> bool {
    if status.code() != tonic::Code::Unavailable {
        return false;
    }
    let mut chain = status.message().to_lowercase();
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        chain.push(' ');
        chain.push_str(&error.to_string().to_lowercase());
        source = error.source();
    }
    [
        "connect error",
        "connection refused",
        "error trying to connect",
        "dns error",
        "(connect)",
    ]
    .iter()
    .any(|sign| chain.contains(sign))
}

/// Whether `status` is the transport failing after the request was sent.
fn lost(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
    )
}

/// The client span of one hop to the executor (`quiver.v1.Executor/<method>`).
fn hop_span(method: &'static str) -> tracing::Span {
    let span = quiver_span!(format!("quiver.v1.Executor/{method}"), "client");
    span.record("rpc.system", "grpc");
    span.record("rpc.method", method);
    span
}

/// `message` as a request carrying `span`'s trace context in its metadata,
/// so the executor's spans continue the caller's trace.
fn traced_request<T>(span: &tracing::Span, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    span.in_scope(|| propagation::inject_into_metadata(request.metadata_mut()));
    request
}

impl RemoteExecutor {
    /// Runs `call` on this executor; a [`HopError`] when the transport failed.
    pub async fn try_call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> Result<Result<CallToolResult, UpstreamError>, HopError> {
        {
            let server = call.server.clone();
            let request = pb::CallToolRequest {
                tenant: call.tenant,
                server: call.server,
                tool: call.tool,
                arguments_json: serde_json::to_string(&call.arguments.unwrap_or_default())
                    .unwrap_or_default(),
                manifest_version: 0,
                timeout_ms: options
                    .timeout
                    .map_or(0, |t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
                caller: call.origin.caller,
                edge: call.origin.edge,
                script_sha256: call.origin.script_sha256.unwrap_or_default(),
                from_app: call.origin.from_app,
                subject_token: (call.origin.subject_token.as_ref())
                    .map(|t| t.expose().to_string())
                    .unwrap_or_default(),
                input_responses_json: options
                    .input_responses
                    .as_ref()
                    .and_then(|given| serde_json::to_string(given).ok())
                    .unwrap_or_default(),
            };
            // Streamed only when the client hears the call while it runs;
            // the unary hop is cheaper, and brings the logs back with the result.
            if let Some(sink) = options.sink.clone().filter(|s| s.live()) {
                return self
                    .stream_call_tool(server, request, sink, options.cancel)
                    .await;
            }
            let span = hop_span("CallTool");
            let request = traced_request(&span, request);
            let mut client = self.client.clone();
            let response = tokio::select! {
                r = client.call_tool(request).instrument(span.clone()) => r,
                () = options.cancel.cancelled() => {
                    spans::record_error(&span, "cancelled");
                    return Ok(Err(UpstreamError::Cancelled { id: server }));
                }
            };
            if let Err(status) = &response {
                spans::record_error(&span, &format!("{:?}", status.code()));
                if let Some(hop) = HopError::of(status) {
                    return Err(hop);
                }
            }
            let response = match response {
                Ok(response) => response,
                Err(status) => return Ok(Err(upstream_error_of(server.clone(), &status))),
            };
            let response = response.into_inner();
            if let Some(sink) = &options.sink {
                crate::relay::replay_logs(sink.as_ref(), &response.upstream_logs_json).await;
            }
            Ok(
                serde_json::from_str(&response.result_json).map_err(|e| UpstreamError::Protocol {
                    id: server,
                    detail: format!("executor sent an unreadable result: {e}"),
                }),
            )
        }
    }

    /// Runs `request` on this executor; a [`HopError`] when the transport failed.
    pub async fn try_execute(
        &self,
        request: ExecuteRequest,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> Result<Result<ScriptOutcome, ExecuteError>, HopError> {
        if let Some(sink) = sink.clone().filter(|s| s.live()) {
            return self.stream_execute(request, sink, cancel).await;
        }
        let span = hop_span("Execute");
        let pb_request = traced_request(&span, wire::request_to_pb(&request));
        let mut client = self.client.clone();
        let answer = tokio::select! {
            answer = client.execute(pb_request).instrument(span.clone()) => answer,
            // Dropping the request resets its stream; the executor stops the script.
            () = cancel.cancelled() => {
                spans::record_error(&span, "cancelled");
                return Ok(Err(ExecuteError::Failed {
                    reason: "the script was cancelled and its worker was stopped".into(),
                }));
            }
        };
        if let Err(status) = &answer {
            spans::record_error(&span, &format!("{:?}", status.code()));
            if let Some(hop) = HopError::of(status) {
                return Err(hop);
            }
        }
        let answer = answer.map(tonic::Response::into_inner);
        if let (Some(sink), Ok(response)) = (&sink, &answer) {
            crate::relay::replay_logs(sink.as_ref(), &response.upstream_logs_json).await;
        }
        Ok(wire::result_from_pb(answer))
    }
}

impl RemoteExecutor {
    /// [`Self::try_call_tool`] over `CallToolStream`, relaying to `sink`.
    async fn stream_call_tool(
        &self,
        server: String,
        request: pb::CallToolRequest,
        sink: Arc<dyn CallSink>,
        cancel: CancellationToken,
    ) -> Result<Result<CallToolResult, UpstreamError>, HopError> {
        let span = hop_span("CallToolStream");
        let mut client = self.client.clone();
        let traced = span.clone();
        let driven =
            crate::relay::drive(hop_up::Message::Call(request), sink, &cancel, |mut up| {
                traced.in_scope(|| propagation::inject_into_metadata(up.metadata_mut()));
                async move { client.call_tool_stream(up).await }
            });
        // Cancelling tells the executor to stop the call.
        let answer = driven.instrument(span.clone()).await;
        if cancel.is_cancelled() {
            spans::record_error(&span, "cancelled");
            return Ok(Err(UpstreamError::Cancelled { id: server }));
        }
        match answer {
            Ok(hop_down::Message::CallResult(result)) => Ok(serde_json::from_str(
                &result.result_json,
            )
            .map_err(|e| UpstreamError::Protocol {
                id: server,
                detail: format!("executor sent an unreadable result: {e}"),
            })),
            Ok(_) => Ok(Err(UpstreamError::Protocol {
                id: server,
                detail: "executor ended the call with a script's result".into(),
            })),
            Err(status) => {
                spans::record_error(&span, &format!("{:?}", status.code()));
                if let Some(hop) = HopError::of(&status) {
                    return Err(hop);
                }
                Ok(Err(upstream_error_of(server, &status)))
            }
        }
    }

    /// [`Self::try_execute`] over `ExecuteStream`, relaying to `sink`.
    async fn stream_execute(
        &self,
        request: ExecuteRequest,
        sink: Arc<dyn CallSink>,
        cancel: CancellationToken,
    ) -> Result<Result<ScriptOutcome, ExecuteError>, HopError> {
        let span = hop_span("ExecuteStream");
        let mut client = self.client.clone();
        let traced = span.clone();
        let first = hop_up::Message::Execute(wire::request_to_pb(&request));
        let driven = crate::relay::drive(first, sink, &cancel, |mut up| {
            traced.in_scope(|| propagation::inject_into_metadata(up.metadata_mut()));
            async move { client.execute_stream(up).await }
        });
        // Cancelling tells the executor to stop the script.
        let answer = driven.instrument(span.clone()).await;
        if cancel.is_cancelled() {
            spans::record_error(&span, "cancelled");
            return Ok(Err(ExecuteError::Failed {
                reason: "the script was cancelled and its worker was stopped".into(),
            }));
        }
        match answer {
            Ok(hop_down::Message::ExecuteResult(result)) => Ok(wire::result_from_pb(Ok(result))),
            Ok(_) => Ok(Err(ExecuteError::Failed {
                reason: "the executor ended the script with a call's result".into(),
            })),
            Err(status) => {
                spans::record_error(&span, &format!("{:?}", status.code()));
                if let Some(hop) = HopError::of(&status) {
                    return Err(hop);
                }
                Ok(wire::result_from_pb(Err(status)))
            }
        }
    }
}

/// A call that failed in transit, as the caller is told it.
fn hop_call_error(server: String, hop: HopError) -> UpstreamError {
    match hop {
        HopError::NotSent(why) => UpstreamError::Unavailable {
            id: server,
            reason: format!("the executor could not be reached ({why}); nothing was sent"),
        },
        HopError::Lost(why) => UpstreamError::Remote {
            id: server,
            code: -32603,
            message: format!(
                "executor: the connection broke during the call ({why}); it may have run"
            ),
            data: None,
        },
    }
}

impl Dispatch for RemoteExecutor {
    fn call_tool(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
        Box::pin(async move {
            let server = call.server.clone();
            self.try_call_tool(call, options)
                .await
                .unwrap_or_else(|hop| Err(hop_call_error(server, hop)))
        })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        request: ClientRequest,
        options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        Box::pin(async move {
            self.try_request(server, request, options)
                .await
                .unwrap_or_else(|hop| Err(hop_call_error(server.to_string(), hop)))
        })
    }
}

impl RemoteExecutor {
    /// The resource updates this executor's upstream connections hear, from
    /// now on, until the stream breaks.
    pub async fn watch_resource_updates(
        &self,
    ) -> Result<tonic::Streaming<pb::ResourceUpdated>, tonic::Status> {
        let mut client = self.client.clone();
        Ok(client
            .watch_resource_updates(pb::WatchResourceUpdatesRequest {})
            .await?
            .into_inner())
    }

    /// Sends one other MCP request (resources, prompts, completion) to
    /// upstream `server` through this executor; a [`HopError`] when the
    /// transport failed.
    pub async fn try_request(
        &self,
        server: &str,
        request: ClientRequest,
        options: CallOptions,
    ) -> Result<Result<ServerResult, UpstreamError>, HopError> {
        let request_json = match serde_json::to_string(&request) {
            Ok(json) => json,
            Err(e) => {
                return Ok(Err(UpstreamError::Protocol {
                    id: server.to_string(),
                    detail: format!("cannot encode the request: {e}"),
                }));
            }
        };
        let message = pb::McpRequest {
            server: server.to_string(),
            request_json,
            timeout_ms: options
                .timeout
                .map_or(0, |t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
        };
        let span = hop_span("Request");
        let message = traced_request(&span, message);
        let mut client = self.client.clone();
        let response = tokio::select! {
            r = client.request(message).instrument(span.clone()) => r,
            () = options.cancel.cancelled() => {
                spans::record_error(&span, "cancelled");
                return Ok(Err(UpstreamError::Cancelled { id: server.to_string() }));
            }
        };
        let response = match response {
            Ok(response) => response.into_inner(),
            Err(status) => {
                spans::record_error(&span, &format!("{:?}", status.code()));
                if let Some(hop) = HopError::of(&status) {
                    return Err(hop);
                }
                return Ok(Err(UpstreamError::Remote {
                    id: server.to_string(),
                    code: -32603,
                    message: format!("executor: {}", status.message()),
                    data: None,
                }));
            }
        };
        Ok(
            serde_json::from_str(&response.result_json).map_err(|e| UpstreamError::Protocol {
                id: server.to_string(),
                detail: format!("executor sent an unreadable result: {e}"),
            }),
        )
    }
}

impl Scripts for RemoteExecutor {
    fn execute(
        &self,
        request: ExecuteRequest,
        cancel: CancellationToken,
        sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'_, Result<ScriptOutcome, ExecuteError>> {
        Box::pin(async move {
            self.try_execute(request, cancel, sink)
                .await
                .unwrap_or_else(|hop| {
                    Err(match hop {
                        HopError::NotSent(why) => ExecuteError::Unreachable {
                            reason: format!("could not be reached ({why}); nothing ran"),
                        },
                        HopError::Lost(why) => ExecuteError::Unreachable {
                            reason: format!(
                                "the connection broke while the script ran ({why}); it was not re-run, and its tool calls may have run"
                            ),
                        },
                    })
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{HopError, UpstreamError, not_sent, upstream_error_of, upstream_status};

    #[test]
    fn a_name_that_no_longer_resolves_is_not_sent_and_a_reset_is_lost() {
        // What tonic answers when the executor's host name is gone.
        let gone = tonic::Status::unavailable("dns error");
        assert!(not_sent(&gone));
        assert!(matches!(HopError::of(&gone), Some(HopError::NotSent(_))));
        let reset = tonic::Status::unavailable("connection reset by peer");
        assert!(!not_sent(&reset));
        assert!(matches!(HopError::of(&reset), Some(HopError::Lost(_))));
    }

    #[test]
    fn an_upstreams_error_code_crosses_the_hop() {
        let needs = serde_json::json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let missing = UpstreamError::Remote {
            id: "u".into(),
            code: -32021,
            message: "needs tasks".into(),
            data: Some(Box::new(needs.clone())),
        };
        match upstream_error_of("u".into(), &upstream_status(&missing, "needs tasks".into())) {
            UpstreamError::Remote { code, data, .. } => {
                assert_eq!(code, -32021);
                assert_eq!(data.as_deref(), Some(&needs));
            }
            other => panic!("{other:?}"),
        }
        let failed = UpstreamError::TaskFailed {
            id: "u".into(),
            code: -32603,
            message: "boom".into(),
        };
        assert!(matches!(
            upstream_error_of("u".into(), &upstream_status(&failed, "boom".into())),
            UpstreamError::TaskFailed { code: -32603, .. }
        ));
        // The executor's own failures stay -32603 errors of the executor.
        let timeout = UpstreamError::Timeout {
            id: "u".into(),
            timeout: std::time::Duration::from_secs(1),
        };
        assert!(matches!(
            upstream_error_of("u".into(), &upstream_status(&timeout, "late".into())),
            UpstreamError::Remote { code: -32603, .. }
        ));
    }
}
