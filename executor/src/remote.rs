//! A remote executor reached over gRPC (mTLS when configured): the edge's
//! [`Dispatch`] and [`Scripts`] when executors run as their own processes.
//! Progress, logging and server-to-client requests are not carried over this
//! unary API; passthrough of resources and prompts needs a local executor.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use futures::future::BoxFuture;
use quiver_proto::pb;
use quiver_view::ToolView;
use rmcp::model::{CallToolResult, ClientRequest, ServerResult};
use tokio_util::sync::CancellationToken;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::{
    CallOptions, CallSink, Dispatch, ToolCall, UpstreamError,
    script::{ExecuteError, Scripts},
    worker::protocol::{Outcome, ScriptError},
};

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

/// One executor reached over gRPC.
#[derive(Clone)]
pub struct RemoteExecutor {
    client: pb::executor_client::ExecutorClient<Channel>,
}

impl RemoteExecutor {
    /// Connects to `url` (`http://host:port`, or `https://` with `tls`).
    pub async fn connect(url: &str, tls: Option<&ClientTls>) -> anyhow::Result<RemoteExecutor> {
        let mut endpoint = Endpoint::from_shared(url.to_string())
            .with_context(|| format!("`{url}` is not an executor URL"))?
            .connect_timeout(Duration::from_secs(5));
        if let Some(tls) = tls {
            let ca = std::fs::read(&tls.ca)
                .with_context(|| format!("reading CA {}", tls.ca.display()))?;
            let cert = std::fs::read(&tls.cert)
                .with_context(|| format!("reading certificate {}", tls.cert.display()))?;
            let key = std::fs::read(&tls.key)
                .with_context(|| format!("reading key {}", tls.key.display()))?;
            endpoint = endpoint
                .tls_config(
                    ClientTlsConfig::new()
                        .ca_certificate(Certificate::from_pem(ca))
                        .identity(Identity::from_pem(cert, key))
                        .domain_name(tls.domain.clone()),
                )
                .context("configuring TLS to the executor")?;
        }
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("connecting to executor {url}"))?;
        Ok(RemoteExecutor {
            client: pb::executor_client::ExecutorClient::new(channel),
        })
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
            };
            let mut client = self.client.clone();
            let response = tokio::select! {
                r = client.call_tool(request) => r,
                () = options.cancel.cancelled() => return Err(UpstreamError::Cancelled { id: server }),
            };
            let response = response.map_err(|status| UpstreamError::Remote {
                id: server.clone(),
                code: -32603,
                message: format!("executor: {}", status.message()),
            })?;
            serde_json::from_str(&response.into_inner().result_json).map_err(|e| {
                UpstreamError::Protocol {
                    id: server,
                    detail: format!("executor sent an unreadable result: {e}"),
                }
            })
        })
    }

    fn request<'a>(
        &'a self,
        server: &'a str,
        _request: ClientRequest,
        _options: CallOptions,
    ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
        Box::pin(async move {
            Err(UpstreamError::Protocol {
                id: server.to_string(),
                detail:
                    "resources, prompts and completion are not forwarded through a remote executor"
                        .into(),
            })
        })
    }
}

impl Scripts for RemoteExecutor {
    fn execute<'a>(
        &'a self,
        code: &'a str,
        session: &'a str,
        _view: Arc<ToolView>,
        _cancel: CancellationToken,
        // The unary gRPC API carries nothing back during a script (see docs/architecture.md).
        _sink: Option<Arc<dyn CallSink>>,
    ) -> BoxFuture<'a, Result<Outcome, ExecuteError>> {
        Box::pin(async move {
            let request = pb::ExecuteRequest {
                tenant: "default".into(),
                session: session.to_string(),
                code: code.to_string(),
                manifest_version: 0,
                limits: None,
            };
            let mut client = self.client.clone();
            let response = client
                .execute(request)
                .await
                .map_err(|s| ExecuteError::Remote(s.message().to_string()))?
                .into_inner();
            let result = if response.result_json.is_empty() {
                None
            } else {
                serde_json::from_str(&response.result_json).ok()
            };
            let error = (!response.error_kind.is_empty()).then(|| ScriptError {
                kind: response.error_kind.clone(),
                message: response.error.clone(),
                line: (response.error_line > 0).then_some(response.error_line),
            });
            Ok(Outcome {
                result,
                error,
                logs: response.logs,
                truncated: response.truncated,
            })
        })
    }
}
