//! HTTPS for the edge with rustls (ring provider).

use std::{fs, sync::Arc};

use anyhow::Context as _;
use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
    service::TowerToHyperService,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::TlsConfig;

/// A TLS acceptor from PEM files; errors name the file and what is wrong.
pub fn acceptor(config: &TlsConfig) -> anyhow::Result<TlsAcceptor> {
    let cert_pem = fs::read(&config.cert)
        .with_context(|| format!("edge.tls.cert: reading {}", config.cert.display()))?;
    let key_pem = fs::read(&config.key)
        .with_context(|| format!("edge.tls.key: reading {}", config.key.display()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .with_context(|| {
            format!(
                "edge.tls.cert: {} is not a PEM certificate chain",
                config.cert.display()
            )
        })?;
    if certs.is_empty() {
        anyhow::bail!(
            "edge.tls.cert: {} contains no certificate",
            config.cert.display()
        );
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).with_context(|| {
        format!(
            "edge.tls.key: {} holds no PEM private key",
            config.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("edge.tls: certificate and key do not match")?;
    let mut server = server;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}

/// Accepts TLS connections until `shutdown`; a failed handshake only drops that connection.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    shutdown: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = shutdown.cancelled() => return,
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(tls) => tls,
                Err(e) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
            };
            // The peer, as axum's `ConnectInfo` (operator-only routes read it).
            let app = app.layer(axum::Extension(axum::extract::ConnectInfo(peer)));
            let service = TowerToHyperService::new(app);
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            tokio::select! {
                result = conn => if let Err(e) = result { tracing::debug!(%peer, "connection ended: {e}") },
                () = shutdown.cancelled() => {}
            }
        });
    }
}
