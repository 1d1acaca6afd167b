//! TLS and mTLS for the gRPC listener, from the operator's PEM files
//! (`[edge] grpc_tls`). It reads only the configured paths; errors name the
//! key, the file and the fix.

use std::{fs, io, path::PathBuf};

use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use crate::config::GrpcTlsConfig;

/// Why the gRPC listener cannot serve TLS with the configured files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrpcTlsError {
    /// A file could not be read.
    #[error(
        "edge.grpc_tls.{key}: cannot read {}; check the path and that the edge's user may read it",
        path.display()
    )]
    Read {
        /// Which key named it (`cert`, `key`, `client_ca`).
        key: &'static str,
        /// The configured path.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The files were read but cannot be used together.
    #[error(
        "edge.grpc_tls: cannot serve TLS with cert {} and key {}{}; give PEM files: the certificate chain, the key it was issued for{}",
        cert.display(),
        key.display(),
        client_ca.as_ref().map(|p| format!(" and client_ca {}", p.display())).unwrap_or_default(),
        if client_ca.is_some() { " and the CA that signs the clients' certificates" } else { "" }
    )]
    Refused {
        /// The configured certificate.
        cert: PathBuf,
        /// The configured key.
        key: PathBuf,
        /// The configured client CA, if any.
        client_ca: Option<PathBuf>,
        /// What was refused.
        #[source]
        source: tonic::transport::Error,
    },
}

/// How the listener is secured, for the startup line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrpcSecurity {
    /// No TLS.
    Plaintext,
    /// TLS; any client may connect.
    Tls,
    /// TLS; only clients with a certificate from the configured CA may connect.
    MutualTls,
}

impl GrpcSecurity {
    /// `plaintext`, `TLS` or `mTLS`.
    pub fn as_str(self) -> &'static str {
        match self {
            GrpcSecurity::Plaintext => "plaintext",
            GrpcSecurity::Tls => "TLS",
            GrpcSecurity::MutualTls => "mTLS",
        }
    }
}

/// `server` serving TLS with `config`'s files (client certificates required
/// when it names a client CA).
pub(crate) fn secure(
    server: Server,
    config: &GrpcTlsConfig,
) -> Result<(Server, GrpcSecurity), GrpcTlsError> {
    let read = |key: &'static str, path: &PathBuf| {
        fs::read(path).map_err(|source| GrpcTlsError::Read {
            key,
            path: path.clone(),
            source,
        })
    };
    let cert = read("cert", &config.cert)?;
    let key = read("key", &config.key)?;
    let mut tls = ServerTlsConfig::new().identity(Identity::from_pem(cert, key));
    let mut security = GrpcSecurity::Tls;
    if let Some(ca) = &config.client_ca {
        tls = tls.client_ca_root(Certificate::from_pem(read("client_ca", ca)?));
        security = GrpcSecurity::MutualTls;
    }
    let server = server
        .tls_config(tls)
        .map_err(|source| GrpcTlsError::Refused {
            cert: config.cert.clone(),
            key: config.key.clone(),
            client_ca: config.client_ca.clone(),
            source,
        })?;
    Ok((server, security))
}
