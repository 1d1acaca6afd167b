//! The gateway's gRPC API (`quiver.v1.Gateway`), served the same way by
//! `quiver dev` and `quiver edge`.

use std::sync::Arc;

use quiver_edge::Gateway;
use tokio_util::sync::CancellationToken;

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
