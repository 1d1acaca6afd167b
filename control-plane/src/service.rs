//! The gRPC face of a control-plane node: `Raft` (between nodes) and
//! `ControlPlane` (operators, edges, executors) on one listener.

use std::{pin::Pin, sync::Arc};

use futures::Stream;
use quiver_proto::pb::{
    self,
    control_plane_server::{ControlPlane, ControlPlaneServer},
    raft_server::{Raft as RaftRpc, RaftServer},
};
use serde::{Serialize, de::DeserializeOwned};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::{
    admin::AdminRequest,
    node::{AdminError, ControlPlaneNode},
    raft::network::TlsMaterial,
};

/// Largest gRPC message accepted or sent (a snapshot chunk, a big catalogue).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The metadata key carrying the leader's address on a "not the leader" error.
pub const LEADER_METADATA: &str = "quiver-leader";

/// Serves both services on `listener` until `shutdown`.
pub fn serve(
    node: Arc<ControlPlaneNode>,
    listener: tokio::net::TcpListener,
    tls: Option<TlsMaterial>,
    shutdown: CancellationToken,
) {
    let raft = RaftServer::new(RaftService { node: node.clone() })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let control = ControlPlaneServer::new(ControlPlaneService { node })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    tokio::spawn(async move {
        let mut server = tonic::transport::Server::builder();
        if let Some(tls) = &tls {
            server = match server.tls_config(tls.server_config()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!("control plane TLS: {e}");
                    return;
                }
            };
        }
        // Without TCP_NODELAY a small reply waits for the peer's delayed ACK
        // (~40 ms per write on Linux).
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let result = server
            .add_service(raft)
            .add_service(control)
            .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
            .await;
        if let Err(e) = result {
            tracing::error!("control plane gRPC server stopped: {e}");
        }
    });
}

/// Raft messages from peers, handed to openraft.
struct RaftService {
    node: Arc<ControlPlaneNode>,
}

fn decode<T: DeserializeOwned>(request: Request<pb::RaftMessage>) -> Result<T, Status> {
    serde_json::from_slice(&request.into_inner().payload)
        .map_err(|e| Status::invalid_argument(format!("undecodable Raft message: {e}")))
}

fn encode<T: Serialize>(value: &T) -> Result<Response<pb::RaftMessage>, Status> {
    serde_json::to_vec(value)
        .map(|payload| Response::new(pb::RaftMessage { payload }))
        .map_err(|e| Status::internal(e.to_string()))
}

#[tonic::async_trait]
impl RaftRpc for RaftService {
    async fn append_entries(
        &self,
        request: Request<pb::RaftMessage>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(request)?;
        encode(&self.node.raft().append_entries(rpc).await)
    }

    async fn vote(
        &self,
        request: Request<pb::RaftMessage>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(request)?;
        encode(&self.node.raft().vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<pb::RaftMessage>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(request)?;
        encode(&self.node.raft().install_snapshot(rpc).await)
    }
}

/// Operators, edges and executors.
struct ControlPlaneService {
    node: Arc<ControlPlaneNode>,
}

/// How an [`AdminError`] travels: a status code, its message, and the leader's
/// address when there is one to follow.
pub fn admin_status(error: AdminError) -> Status {
    match error {
        AdminError::NotLeader { leader, .. } => {
            let mut status = Status::failed_precondition(error_text(&AdminError::NotLeader {
                this: 0,
                leader: leader.clone(),
            }));
            if let Some((_, addr)) = leader
                && let Ok(value) = addr.parse()
            {
                status.metadata_mut().insert(LEADER_METADATA, value);
            }
            status
        }
        AdminError::Refused { code, message } => match code.as_str() {
            "not_found" => Status::not_found(message),
            "already_exists" => Status::already_exists(message),
            "invalid" => Status::invalid_argument(message),
            _ => Status::failed_precondition(message),
        },
        AdminError::Invalid(message) => Status::invalid_argument(message),
        AdminError::Unavailable(message) => Status::unavailable(message),
        // Not a transport failure: asking another node would not help.
        AdminError::NoQuorum(message) => Status::aborted(message),
    }
}

fn error_text(error: &AdminError) -> String {
    match error {
        AdminError::NotLeader { leader, .. } => match leader {
            Some((id, addr)) => format!("not the leader; the leader is node {id} at {addr}"),
            None => {
                "not the leader, and no leader is elected yet (is a quorum of nodes up?)".into()
            }
        },
        other => other.to_string(),
    }
}

type UpdateStream = Pin<Box<dyn Stream<Item = Result<pb::ManifestUpdate, Status>> + Send>>;

#[tonic::async_trait]
impl ControlPlane for ControlPlaneService {
    async fn get_manifest(
        &self,
        _request: Request<pb::GetManifestRequest>,
    ) -> Result<Response<pb::Manifest>, Status> {
        Ok(Response::new(self.node.shared().manifest().to_pb()))
    }

    type WatchManifestStream = UpdateStream;

    async fn watch_manifest(
        &self,
        request: Request<pb::WatchManifestRequest>,
    ) -> Result<Response<Self::WatchManifestStream>, Status> {
        let after = request.into_inner().after_version;
        let shared = self.node.shared().clone();
        let mut applied = shared.subscribe_applied();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            // The first state newer than `after`, then every change of the
            // manifest or of the upstream registry.
            let mut sent: Option<(u64, String)> = None;
            loop {
                let (manifest, upstreams_json) = {
                    let mut state = shared.lock();
                    let manifest = state.manifest();
                    let upstreams: Vec<&quiver_upstream::UpstreamConfig> =
                        state.upstreams.values().map(|u| &u.config).collect();
                    (
                        manifest,
                        serde_json::to_string(&upstreams).unwrap_or_default(),
                    )
                };
                let key = (manifest.version, upstreams_json.clone());
                let wanted = manifest.version > after || (after == 0 && sent.is_none());
                if wanted && sent.as_ref() != Some(&key) {
                    let update = pb::ManifestUpdate {
                        manifest: Some(manifest.to_pb()),
                        upstreams_json,
                    };
                    if tx.send(Ok(update)).await.is_err() {
                        return;
                    }
                    sent = Some(key);
                }
                tokio::select! {
                    changed = applied.changed() => if changed.is_err() { return },
                    () = tx.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn admin(
        &self,
        request: Request<pb::AdminCall>,
    ) -> Result<Response<pb::AdminReply>, Status> {
        let call: AdminRequest = serde_json::from_str(&request.into_inner().request_json)
            .map_err(|e| {
                Status::invalid_argument(format!(
                    "unknown or malformed admin request ({e}); is `quiver ctl` the same version as the cluster?"
                ))
            })?;
        let value = self.node.admin(call).await.map_err(admin_status)?;
        Ok(Response::new(pb::AdminReply {
            response_json: value.to_string(),
        }))
    }

    async fn report_node(
        &self,
        request: Request<pb::NodeReport>,
    ) -> Result<Response<pb::NodeReportAck>, Status> {
        let report = request.into_inner();
        if report.node.is_empty() || report.node.len() > 256 {
            return Err(Status::invalid_argument(
                "a report needs a node name of 1-256 bytes",
            ));
        }
        self.node.fleet().report(
            &report.node,
            &report.role,
            report.manifest_version,
            &report.stub_hash,
        );
        let manifest = self.node.shared().manifest();
        Ok(Response::new(pb::NodeReportAck {
            current_version: manifest.version,
            current_stub_hash: manifest.stub_hash.to_hex(),
        }))
    }
}
