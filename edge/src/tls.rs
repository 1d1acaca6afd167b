//! HTTPS for the edge with rustls (ring provider): the acceptor built from the
//! operator's PEM files (the accept loop is `crate::connections`). It never reads certificates
//! anywhere but the configured paths.

use std::{fs, io, path::PathBuf, sync::Arc};

use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

/// Why the edge cannot serve HTTPS with the configured files. Each message
/// names the `[edge.tls]` key, the file and what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be read.
    #[error(
        "edge.tls.cert: cannot read {}; check the path and that the edge's user may read it",
        path.display()
    )]
    ReadCert {
        /// The configured path.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The key file could not be read.
    #[error(
        "edge.tls.key: cannot read {}; check the path and that the edge's user may read it",
        path.display()
    )]
    ReadKey {
        /// The configured path.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The certificate file is not PEM.
    #[error(
        "edge.tls.cert: {} is not a PEM certificate chain; give the certificate, then any intermediates, as `-----BEGIN CERTIFICATE-----` blocks",
        path.display()
    )]
    CertNotPem {
        /// The configured path.
        path: PathBuf,
        /// What the PEM reader found.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error(
        "edge.tls.cert: {} contains no certificate; give a PEM file with at least one `-----BEGIN CERTIFICATE-----` block",
        path.display()
    )]
    NoCertificate {
        /// The configured path.
        path: PathBuf,
    },
    /// The key file holds no usable private key.
    #[error(
        "edge.tls.key: {} holds no PEM private key; give a PKCS#8, PKCS#1 or SEC1 key (`-----BEGIN PRIVATE KEY-----`)",
        path.display()
    )]
    KeyNotPem {
        /// The configured path.
        path: PathBuf,
        /// What the PEM reader found.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The crypto provider offers no safe protocol version (a build problem, not a configuration one).
    #[error(
        "this build's TLS provider offers no safe protocol version; serve plain HTTP (remove [edge.tls]) or use an official build"
    )]
    ProtocolVersions(#[source] rustls::Error),
    /// The certificate and the key cannot be used together.
    #[error(
        "edge.tls: the key in {} cannot be used with the certificate in {}; give the key the certificate was issued for",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The configured certificate path.
        cert: PathBuf,
        /// The configured key path.
        key: PathBuf,
        /// What rustls refused.
        #[source]
        source: rustls::Error,
    },
}

/// A TLS acceptor from the PEM files in `config`, offering HTTP/2 and HTTP/1.1.
pub fn acceptor(config: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let cert_pem = fs::read(&config.cert).map_err(|source| TlsError::ReadCert {
        path: config.cert.clone(),
        source,
    })?;
    let key_pem = fs::read(&config.key).map_err(|source| TlsError::ReadKey {
        path: config.key.clone(),
        source,
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::CertNotPem {
            path: config.cert.clone(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: config.cert.clone(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| TlsError::KeyNotPem {
        path: config.key.clone(),
        source,
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::ProtocolVersions)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|source| TlsError::KeyMismatch {
            cert: config.cert.clone(),
            key: config.key.clone(),
            source,
        })?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}
