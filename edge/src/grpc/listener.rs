//! The gRPC listener: `quiver.v1.Gateway` and gRPC reflection (v1 and
//! v1alpha, describing the gateway's API only) on one port, plaintext, TLS or
//! mTLS. Reflection answers without credentials: it tells only what the
//! public `.proto` files tell; every Gateway RPC authenticates.

use std::{io, net::SocketAddr, sync::Arc};

use quiver_proto::pb::{self, gateway_server::SERVICE_NAME as GATEWAY_SERVICE};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Server, server::TcpIncoming};
use tonic_reflection::{pb as reflection, server::Builder as ReflectionBuilder};

use super::{
    service::GatewayService,
    tls::{GrpcSecurity, GrpcTlsError, secure},
};
use crate::{config::GrpcTlsConfig, gateway::Gateway};

/// Why the gRPC API could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrpcServeError {
    /// The address could not be bound.
    #[error("edge.grpc_listen: cannot listen on {addr}; pick a free port (0 picks one)")]
    Bind {
        /// The configured address.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: io::Error,
    },
    /// The TLS files cannot be used.
    #[error(transparent)]
    Tls(#[from] GrpcTlsError),
    /// The reflection descriptors built into this binary are unreadable.
    #[error("gRPC reflection: the built-in descriptors are unreadable (a build problem)")]
    Reflection(#[source] tonic_reflection::server::Error),
    /// The server stopped with an error.
    #[error("serving gRPC on {addr}")]
    Serve {
        /// The bound address.
        addr: SocketAddr,
        /// What failed.
        #[source]
        source: tonic::transport::Error,
    },
}

/// A bound gRPC listener, ready to serve.
pub struct GrpcListener {
    gateway: Arc<Gateway>,
    listener: TcpListener,
    addr: SocketAddr,
    server: Server,
    security: GrpcSecurity,
}

impl GrpcListener {
    /// Binds `addr` (port 0 picks a free one) and prepares TLS from `tls`;
    /// every problem with the address or the files is reported here,
    /// before anything is served.
    pub async fn bind(
        gateway: Arc<Gateway>,
        addr: SocketAddr,
        tls: Option<&GrpcTlsConfig>,
    ) -> Result<GrpcListener, GrpcServeError> {
        let server = Server::builder().tcp_nodelay(true);
        let (server, security) = match tls {
            Some(tls) => secure(server, tls)?,
            None => (server, GrpcSecurity::Plaintext),
        };
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| GrpcServeError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| GrpcServeError::Bind { addr, source })?;
        Ok(GrpcListener {
            gateway,
            listener,
            addr,
            server,
            security,
        })
    }

    /// The address bound (the port picked, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Plaintext, TLS or mTLS.
    pub fn security(&self) -> GrpcSecurity {
        self.security
    }

    /// Serves until `shutdown`.
    pub async fn serve(self, shutdown: CancellationToken) -> Result<(), GrpcServeError> {
        let addr = self.addr;
        let reflection = || {
            ReflectionBuilder::configure()
                .register_encoded_file_descriptor_set(pb::GATEWAY_FILE_DESCRIPTOR_SET)
                .with_service_name(GATEWAY_SERVICE)
                .with_service_name(reflection::v1::server_reflection_server::SERVICE_NAME)
        };
        let reflection_v1 = reflection()
            .build_v1()
            .map_err(GrpcServeError::Reflection)?;
        let reflection_v1alpha = reflection()
            .build_v1alpha()
            .map_err(GrpcServeError::Reflection)?;
        let mut server = self.server;
        server
            .add_service(GatewayService::new(self.gateway).into_server())
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
            .serve_with_incoming_shutdown(
                TcpIncoming::from(self.listener).with_nodelay(Some(true)),
                shutdown.cancelled_owned(),
            )
            .await
            .map_err(|source| GrpcServeError::Serve { addr, source })
    }
}
