//! The gRPC face of a control-plane node: `Raft` (between nodes) and
//! `ControlPlane` (operators, edges, executors) on one listener. Each service
//! holds only what it serves from (the Raft handle; the applied state, the
//! fleet registry and the operator), never the node itself.

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
    admin::{
        AdminRequest,
        wire::{Message, WireError},
    },
    fleet::FleetRegistry,
    node_role::NodeRole,
    operator::Operator,
    raft::{
        Raft,
        network::{MAX_MESSAGE_BYTES, TlsMaterial},
        state_machine::SharedState,
    },
};

/// What the `ControlPlane` service answers from.
pub(crate) struct ControlPlaneService {
    /// The replicated state as applied on this node.
    pub(crate) shared: Arc<SharedState>,
    /// Reports of edges and executors to this node.
    pub(crate) fleet: Arc<FleetRegistry>,
    /// The operator API.
    pub(crate) operator: Arc<Operator>,
}

/// Serves `Raft` (handed to `raft`) and `ControlPlane` on `listener` until
/// `shutdown`.
pub(crate) fn serve(
    raft: Raft,
    control: ControlPlaneService,
    listener: tokio::net::TcpListener,
    tls: Option<TlsMaterial>,
    shutdown: CancellationToken,
) {
    let raft = RaftServer::new(RaftService { raft })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let control = ControlPlaneServer::new(control)
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
        // Reflection describes the operator API to generic clients
        // (`grpcurl list`); Raft stays unlisted.
        let reflection = || {
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(pb::CONTROL_PLANE_FILE_DESCRIPTOR_SET)
                .with_service_name("quiver.v1.ControlPlane")
                .with_service_name(tonic_reflection::pb::v1::server_reflection_server::SERVICE_NAME)
        };
        let (reflection_v1, reflection_v1alpha) =
            match (reflection().build_v1(), reflection().build_v1alpha()) {
                (Ok(v1), Ok(v1alpha)) => (v1, v1alpha),
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!("control plane reflection: {e}");
                    return;
                }
            };
        let result = server
            .add_service(raft)
            .add_service(control)
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
            .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
            .await;
        if let Err(e) = result {
            tracing::error!("control plane gRPC server stopped: {e}");
        }
    });
}

/// Raft messages from peers, handed to openraft.
struct RaftService {
    raft: Raft,
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
        encode(&self.raft.append_entries(rpc).await)
    }

    async fn vote(
        &self,
        request: Request<pb::RaftMessage>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(request)?;
        encode(&self.raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<pb::RaftMessage>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(request)?;
        encode(&self.raft.install_snapshot(rpc).await)
    }
}

type UpdateStream = Pin<Box<dyn Stream<Item = Result<pb::ManifestUpdate, Status>> + Send>>;
type BackupStream = Pin<Box<dyn Stream<Item = Result<pb::BackupChunk, Status>> + Send>>;

/// Bytes of one `BackupChunk`.
const BACKUP_CHUNK: usize = 1024 * 1024;

#[tonic::async_trait]
impl ControlPlane for ControlPlaneService {
    async fn get_manifest(
        &self,
        _request: Request<pb::GetManifestRequest>,
    ) -> Result<Response<pb::Manifest>, Status> {
        Ok(Response::new(self.shared.manifest().to_pb()))
    }

    type WatchManifestStream = UpdateStream;

    async fn watch_manifest(
        &self,
        request: Request<pb::WatchManifestRequest>,
    ) -> Result<Response<Self::WatchManifestStream>, Status> {
        let request = request.into_inner();
        // A node that belongs to no cluster yet (started empty, not added
        // yet) holds an empty state: a consumer that took it would drop
        // every tenant it holds. It asks another node instead.
        if self.shared.last_applied().is_none() {
            return Err(Status::unavailable(
                "this control-plane node belongs to no cluster yet (it is waiting to be added); ask another node",
            ));
        }
        let (after, deltas) = (request.after_version, request.accepts_deltas);
        let shared = self.shared.clone();
        let mut applied = shared.subscribe_applied();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            // The first state newer than `after`, then every change of the
            // manifest, the upstream registry, the tenants (a revoked key
            // reaches every edge with the next update) or their sealed secrets.
            let mut stream = WatchStreamState::default();
            loop {
                let (manifest, parts) = {
                    let mut state = shared.lock();
                    let upstreams = state.upstreams.values().map(|u| u.config.to_pb());
                    let tenants = state.tenants.values().map(crate::tenant::Tenant::to_pb);
                    let parts = Registry {
                        upstreams: pb::Upstreams {
                            upstreams: upstreams.collect(),
                        },
                        tenants: pb::Tenants {
                            tenants: tenants.collect(),
                        },
                        secrets: crate::sealed_secrets::secrets_to_pb(&state.secrets),
                    };
                    (state.manifest(), parts)
                };
                if let Some(update) = stream.next(after, deltas, manifest, parts)
                    && tx.send(Ok(update)).await.is_err()
                {
                    return;
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
        let call = request
            .into_inner()
            .request
            .ok_or(WireError::Missing("AdminCall.request"))
            .and_then(AdminRequest::from_pb)
            .map_err(|e| {
                Status::invalid_argument(match e {
                    WireError::Missing(_) => format!(
                        "the request names no operation this node knows (it came from a `quiver ctl` of another release: {e}); use the `quiver ctl` of the cluster's release"
                    ),
                    other => format!(
                        "unreadable admin request: {other}; use the `quiver ctl` of the cluster's release"
                    ),
                })
            })?;
        let answer = self.operator.serve(call).await?;
        Ok(Response::new(pb::AdminReply {
            answer: Some(answer.to_pb()),
        }))
    }

    type SaveBackupStream = BackupStream;

    async fn save_backup(
        &self,
        _request: Request<pb::SaveBackupRequest>,
    ) -> Result<Response<Self::SaveBackupStream>, Status> {
        let bytes = self.operator.backup().await?;
        let chunks: Vec<Result<pb::BackupChunk, Status>> = bytes
            .chunks(BACKUP_CHUNK)
            .map(|c| Ok(pb::BackupChunk { data: c.to_vec() }))
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
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
        let Some(role) = NodeRole::from_pb(report.role()) else {
            return Err(Status::invalid_argument(
                "a report needs a role: edge, executor or dev",
            ));
        };
        self.fleet.report(
            &report.node,
            role,
            report.manifest_version,
            &report.stub_hash,
            crate::admin::ReportedReadiness {
                ready: report.ready,
                not_ready: report.not_ready.chars().take(1024).collect(),
                admin: report.admin.chars().take(256).collect(),
                grpc: report.grpc.chars().take(256).collect(),
                mcp: report.mcp.chars().take(256).collect(),
            },
        );
        let manifest = self.shared.manifest();
        Ok(Response::new(pb::NodeReportAck {
            current_version: manifest.version,
            current_stub_hash: manifest.stub_hash.to_hex(),
        }))
    }
}

/// The registry, the tenants and their sealed secrets, as a stream sends them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Registry {
    upstreams: pb::Upstreams,
    tenants: pb::Tenants,
    secrets: pb::SecretsByTenant,
}

/// What one `WatchManifest` stream has sent its consumer.
#[derive(Default)]
struct WatchStreamState {
    /// The manifest the consumer holds, as this stream sent it.
    manifest: Option<Arc<quiver_proto::Manifest>>,
    /// The registry, tenants and secrets last sent.
    parts: Option<Registry>,
}

impl WatchStreamState {
    /// The update to send for the current state, if the consumer lacks
    /// anything of it. The manifest travels when the consumer lacks its
    /// version: as a delta on the version this stream sent, to a consumer
    /// that accepts them (when smaller), else whole. The registry, tenants
    /// and secrets travel when they differ from what was last sent (all of
    /// them to a consumer that does not accept deltas; the first update
    /// always carries them, so a reconnecting consumer holding the current
    /// version still gets them once).
    fn next(
        &mut self,
        after: u64,
        deltas: bool,
        manifest: Arc<quiver_proto::Manifest>,
        parts: Registry,
    ) -> Option<pb::ManifestUpdate> {
        let manifest_wanted = match &self.manifest {
            None => manifest.version > after || after == 0,
            Some(held) => held.version != manifest.version,
        };
        let first = self.parts.is_none();
        let parts_changed = self.parts.as_ref() != Some(&parts);
        if !manifest_wanted && !parts_changed {
            return None;
        }
        let delta = match (&self.manifest, manifest_wanted && deltas) {
            (Some(held), true) => quiver_proto::delta::between(held, &manifest),
            _ => None,
        };
        let whole = (manifest_wanted && delta.is_none()).then(|| manifest.to_pb());
        let was = self.parts.take().unwrap_or_default();
        let update = pb::ManifestUpdate {
            manifest: whole,
            upstreams: changed(first, deltas, &parts.upstreams, &was.upstreams),
            tenants: changed(first, deltas, &parts.tenants, &was.tenants),
            secrets: changed(first, deltas, &parts.secrets, &was.secrets),
            delta,
        };
        // A consumer that asked for versions after the current one holds it.
        if manifest_wanted || manifest.version == after {
            self.manifest = Some(manifest);
        }
        self.parts = Some(parts);
        Some(update)
    }
}

/// `now`, unless this stream sent it already to a consumer that reads an
/// absent part as "unchanged".
fn changed<T: Clone + PartialEq>(first: bool, deltas: bool, now: &T, before: &T) -> Option<T> {
    (first || !deltas || now != before).then(|| now.clone())
}

#[cfg(test)]
mod tests {
    use quiver_proto::{Manifest, manifest::ServerEntry, tool::ToolDef};

    use super::*;

    fn manifest(version: u64, description: &str) -> Arc<Manifest> {
        let tools = (0..30)
            .map(|t| {
                serde_json::from_value::<ToolDef>(serde_json::json!({
                    "name": format!("tool_{t:02}"),
                    "description": if t == 3 { description.to_string() } else { format!("tool {t}") },
                }))
                .unwrap()
            })
            .collect();
        Arc::new(Manifest::build(version, vec![ServerEntry::new("s", tools)]))
    }

    fn parts(upstreams: &[&str]) -> Registry {
        let upstreams = upstreams.iter().map(|id| pb::Upstream {
            id: id.to_string(),
            ..pb::Upstream::default()
        });
        Registry {
            upstreams: pb::Upstreams {
                upstreams: upstreams.collect(),
            },
            ..Registry::default()
        }
    }

    fn ids(upstreams: Option<pb::Upstreams>) -> Option<Vec<String>> {
        upstreams.map(|sent| sent.upstreams.into_iter().map(|u| u.id).collect())
    }

    #[test]
    fn a_consumer_that_accepts_deltas_gets_what_changed_and_nothing_twice() {
        let mut stream = WatchStreamState::default();
        let first = stream
            .next(0, true, manifest(1, "a"), parts(&["1"]))
            .unwrap();
        assert!(first.manifest.is_some() && first.delta.is_none());
        assert_eq!(ids(first.upstreams), Some(vec!["1".to_owned()]));
        assert_eq!(first.tenants, Some(pb::Tenants::default()));
        assert!(
            stream
                .next(0, true, manifest(1, "a"), parts(&["1"]))
                .is_none()
        );

        let changed = stream
            .next(0, true, manifest(2, "b"), parts(&["1"]))
            .unwrap();
        let delta = changed.delta.expect("a delta");
        assert!(changed.manifest.is_none());
        assert_eq!((delta.base_version, delta.version), (1, 2));
        assert_eq!(delta.upserted.len(), 1);
        assert_eq!(changed.upstreams, None, "unchanged parts do not travel");

        let registry = stream
            .next(0, true, manifest(2, "b"), parts(&["1", "2"]))
            .unwrap();
        assert!(registry.manifest.is_none() && registry.delta.is_none());
        assert_eq!(ids(registry.upstreams), Some(vec!["1".into(), "2".into()]));
        assert_eq!(registry.tenants, None);
    }

    #[test]
    fn a_consumer_without_deltas_gets_everything_whole() {
        let mut stream = WatchStreamState::default();
        stream
            .next(0, false, manifest(1, "a"), parts(&["1"]))
            .unwrap();
        let changed = stream
            .next(0, false, manifest(2, "b"), parts(&["1"]))
            .unwrap();
        assert!(changed.delta.is_none());
        assert_eq!(changed.manifest.unwrap().version, 2);
        assert_eq!(ids(changed.upstreams), Some(vec!["1".to_owned()]));
    }

    #[test]
    fn a_reconnecting_consumer_that_holds_the_current_version_gets_deltas_after() {
        let mut stream = WatchStreamState::default();
        let first = stream
            .next(1, true, manifest(1, "a"), parts(&["1"]))
            .unwrap();
        assert!(first.manifest.is_none(), "it holds version 1 already");
        let next = stream
            .next(1, true, manifest(2, "b"), parts(&["1"]))
            .unwrap();
        assert_eq!(next.delta.unwrap().base_version, 1);
    }
}
