//! How a role serves and stops, the same way for each: the gateway's MCP
//! endpoints and its gRPC API (`quiver dev`, `quiver edge`), and the stop
//! signal every role waits on.

use std::{future::Future, sync::Arc, time::Duration};

use quiver_edge::Gateway;
use tokio_util::sync::CancellationToken;

/// Takes SIGTERM over from its default action now (a role calls this
/// before it announces itself, so a stop sent right after the startup line
/// is a graceful stop, not a kill) and resolves on SIGTERM or Ctrl-C.
pub(crate) fn stop_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        if let Some(mut term) = term {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = ctrl_c.await;
    }
}

/// Serves `gateway`'s MCP endpoints on `listener` until `stop` resolves:
/// `/readyz` then says the role drains, the listener keeps accepting for
/// `notice` (so load balancers move away first), and `shutdown` is
/// cancelled, which ends the serving.
pub(crate) async fn serve_mcp(
    gateway: Arc<Gateway>,
    listener: tokio::net::TcpListener,
    health: &quiver_telemetry::Health,
    shutdown: &CancellationToken,
    stop: impl Future<Output = ()> + Send + 'static,
    notice: Duration,
) -> Result<(), quiver_edge::ServeError> {
    let serve_shutdown = shutdown.clone();
    let draining = health.clone();
    tokio::spawn(async move {
        stop.await;
        draining.start_draining();
        if !notice.is_zero() {
            tracing::info!("draining: /readyz says so; still accepting for {notice:?}");
            tokio::time::sleep(notice).await;
        }
        tracing::info!("shutting down");
        serve_shutdown.cancel();
    });
    quiver_edge::http::serve(gateway, listener, shutdown.clone(), health).await
}

/// Serves the gateway's gRPC API where `config` says (nothing without
/// `grpc_listen`) until `shutdown`; the words the startup line gives it
/// (`; gRPC ADDR (tls)`, or nothing). It is bound before the startup line,
/// so every problem with the address or the TLS files stops the start.
pub(crate) async fn serve_grpc(
    gateway: &Arc<Gateway>,
    config: &quiver_edge::EdgeConfig,
    shutdown: &CancellationToken,
) -> anyhow::Result<String> {
    let Some(addr) = config.grpc_listen else {
        return Ok(String::new());
    };
    let grpc =
        quiver_edge::grpc::GrpcListener::bind(gateway.clone(), addr, config.grpc_tls.as_ref())
            .await?;
    let line = format!(
        "; gRPC {} ({})",
        grpc.local_addr(),
        grpc.security().as_str()
    );
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if let Err(e) = grpc.serve(stop).await {
            tracing::error!("the gRPC API stopped: {:#}", anyhow::Error::from(e));
        }
    });
    Ok(line)
}
