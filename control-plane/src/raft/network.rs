//! The control plane's gRPC transport: channels with mutual TLS when the
//! cluster has certificates, and Raft RPCs between nodes over them. Raft
//! messages are openraft's own types, serde-encoded, inside a `RaftMessage`;
//! the receiving side is `service.rs`.

use std::{path::PathBuf, time::Duration};

use openraft::{
    error::{InstallSnapshotError, NetworkError, RPCError, RemoteError, Unreachable},
    network::{RPCOption, RaftNetwork, RaftNetworkFactory},
    raft::{
        AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest,
        InstallSnapshotResponse, VoteRequest, VoteResponse,
    },
};
use quiver_proto::pb::{self, raft_client::RaftClient};
use serde::{Serialize, de::DeserializeOwned};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error_chain::with_causes;

use super::{Node, NodeId, TypeConfig, typ};

/// Largest gRPC message accepted or sent (a snapshot chunk, a big catalogue).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// A certificate or key file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("reading {what} {}", path.display())]
pub struct TlsFileError {
    /// `CA certificate`, `certificate` or `key`.
    pub what: &'static str,
    /// The file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

/// A channel to a node could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The address is not `host:port`.
    #[error("`{addr}` is not a host:port address")]
    Address {
        /// The address given.
        addr: String,
        /// The parser's complaint.
        #[source]
        source: tonic::transport::Error,
    },
    /// The TLS settings were refused.
    #[error("TLS settings for {addr}")]
    Tls {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: tonic::transport::Error,
    },
}

/// Certificates for mTLS between nodes and from clients (PEM files); also the
/// `[control_plane.tls]` table of a config file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterTls {
    /// CA that signs every node's and client's certificate.
    pub ca: PathBuf,
    /// This process's certificate.
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
}

/// [`ClusterTls`] read into memory.
#[derive(Clone)]
pub struct TlsMaterial {
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl ClusterTls {
    /// The three `--…-tls-ca/cert/key` flags, when all are given (clap makes
    /// them all-or-nothing).
    pub fn from_flags(
        ca: Option<&PathBuf>,
        cert: Option<&PathBuf>,
        key: Option<&PathBuf>,
    ) -> Option<ClusterTls> {
        Some(ClusterTls {
            ca: ca?.clone(),
            cert: cert?.clone(),
            key: key?.clone(),
        })
    }

    /// Reads the three files; the error names the file.
    pub fn load(&self) -> Result<TlsMaterial, TlsFileError> {
        let read = |path: &PathBuf, what: &'static str| {
            std::fs::read(path).map_err(|source| TlsFileError {
                what,
                path: path.clone(),
                source,
            })
        };
        Ok(TlsMaterial {
            ca: read(&self.ca, "CA certificate")?,
            cert: read(&self.cert, "certificate")?,
            key: read(&self.key, "key")?,
        })
    }
}

impl TlsMaterial {
    /// Server side: present our certificate, require one signed by the CA.
    pub fn server_config(&self) -> tonic::transport::ServerTlsConfig {
        tonic::transport::ServerTlsConfig::new()
            .identity(Identity::from_pem(&self.cert, &self.key))
            .client_ca_root(Certificate::from_pem(&self.ca))
    }

    /// Client side, for a node at `host`.
    pub fn client_config(&self, host: &str) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .identity(Identity::from_pem(&self.cert, &self.key))
            .domain_name(host.to_string())
    }
}

/// A lazily connecting channel to `addr` (`host:port`), over TLS when given.
pub fn channel(addr: &str, tls: Option<&TlsMaterial>) -> Result<Channel, ChannelError> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
        .map_err(|source| ChannelError::Address {
            addr: addr.to_string(),
            source,
        })?
        .connect_timeout(Duration::from_secs(2))
        .tcp_nodelay(true);
    if let Some(tls) = tls {
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        endpoint = endpoint
            .tls_config(tls.client_config(host.trim_start_matches('[').trim_end_matches(']')))
            .map_err(|source| ChannelError::Tls {
                addr: addr.to_string(),
                source,
            })?;
    }
    Ok(endpoint.connect_lazy())
}

/// Builds one [`RaftPeer`] per target node.
#[derive(Clone)]
pub struct GrpcNetwork {
    tls: Option<TlsMaterial>,
}

impl GrpcNetwork {
    /// A network using `tls` when present.
    pub fn new(tls: Option<TlsMaterial>) -> GrpcNetwork {
        GrpcNetwork { tls }
    }
}

impl RaftNetworkFactory<TypeConfig> for GrpcNetwork {
    type Network = RaftPeer;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> RaftPeer {
        let client = channel(&node.addr, self.tls.as_ref())
            .map(RaftClient::new)
            .map_err(|e| NetError(with_causes(&e)));
        RaftPeer { target, client }
    }
}

/// The connection to one peer.
pub struct RaftPeer {
    target: NodeId,
    client: Result<RaftClient<Channel>, NetError>,
}

/// Which of Raft's three RPCs a message is.
#[derive(Clone, Copy, Debug)]
pub enum Rpc {
    /// `AppendEntries` (heartbeats included).
    Append,
    /// `Vote`.
    Vote,
    /// `InstallSnapshot`.
    Snapshot,
}

impl RaftPeer {
    async fn send<Req, Resp, E>(
        &mut self,
        rpc: Rpc,
        request: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Node, typ::RaftError<E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let client = match &mut self.client {
            Ok(c) => c,
            Err(e) => return Err(RPCError::Unreachable(Unreachable::new(e))),
        };
        let payload =
            serde_json::to_vec(request).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let mut message = tonic::Request::new(pb::RaftMessage { payload });
        message.set_timeout(option.hard_ttl());
        let reply = match rpc {
            Rpc::Append => client.append_entries(message).await,
            Rpc::Vote => client.vote(message).await,
            Rpc::Snapshot => client.install_snapshot(message).await,
        };
        let reply = reply.map_err(|status| {
            let error = NetError(format!("{}: {}", status.code(), status.message()));
            match status.code() {
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => {
                    RPCError::Unreachable(Unreachable::new(&error))
                }
                _ => RPCError::Network(NetworkError::new(&error)),
            }
        })?;
        let result: Result<Resp, typ::RaftError<E>> =
            serde_json::from_slice(&reply.into_inner().payload)
                .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

/// A transport failure as an error value (openraft takes errors, not text).
#[derive(Debug)]
pub struct NetError(pub String);

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetError {}

impl RaftNetwork<TypeConfig> for RaftPeer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, typ::RpcError> {
        self.send(Rpc::Append, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, typ::RpcError<InstallSnapshotError>> {
        self.send(Rpc::Snapshot, &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, typ::RpcError> {
        self.send(Rpc::Vote, &rpc, &option).await
    }
}
