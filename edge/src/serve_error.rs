//! Why the edge stopped serving MCP, over HTTP(S) or stdio. These reach the
//! operator who started the edge, so each names the address or stream and
//! what to do; they never reach an MCP client.

use std::{io, net::SocketAddr};

use rmcp::service::ServerInitializeError;

use crate::tls::TlsError;

/// Why serving MCP ended in failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listener handed to the edge has no readable local address.
    #[error(
        "cannot read the address the edge's listener is bound to; restart the edge with a listener it can bind (edge.listen)"
    )]
    ListenerAddress(#[source] io::Error),
    /// The HTTP server stopped with an I/O error.
    #[error(
        "serving MCP over HTTP on {address} failed; check edge.listen and that nothing else took the address"
    )]
    Http {
        /// Where the edge was listening.
        address: SocketAddr,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// HTTPS was configured but the certificate or key is unusable.
    #[error("cannot serve MCP over HTTPS on {address}")]
    Tls {
        /// Where the edge was listening.
        address: SocketAddr,
        /// What is wrong with `[edge.tls]`.
        #[source]
        source: TlsError,
    },
    /// The stdio session never started (the client did not initialize it).
    #[error(
        "the MCP session on stdin/stdout did not start; the client must send `initialize` first and keep stdin open"
    )]
    StdioStart(#[source] Box<ServerInitializeError>),
    /// The stdio session's task failed (it panicked or was cancelled).
    #[error(
        "the MCP session on stdin/stdout stopped abnormally; see the log above for its last error"
    )]
    StdioSession(#[source] tokio::task::JoinError),
}
