//! Clients of the `ControlPlane` service: [`AdminClient`] (the operator CLI and
//! node-to-node relays) follows the leader by itself; it tries each endpoint
//! and, told "not the leader", goes where the answer points.

use std::time::Duration;

use quiver_proto::pb::{self, control_plane_client::ControlPlaneClient};
use tonic::{Code, transport::Channel};

use crate::{
    admin::{
        AdminAnswer, AdminError, AdminFuture, AdminRequest, AdminTransport, LEADER_METADATA,
        NOT_LEADER,
        wire::{Message, WireError},
    },
    error_chain::with_causes,
    raft::network::{MAX_MESSAGE_BYTES, TlsMaterial, channel},
};

/// How many "not the leader" redirects one call follows.
const MAX_REDIRECTS: usize = 5;

/// Why a call failed, worded for an operator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No endpoint answered.
    #[error(
        "cluster unreachable: no control-plane node answered ({tried}); check --endpoints, that the nodes are running, and whether the cluster requires TLS (--tls-ca/--tls-cert/--tls-key)"
    )]
    Unreachable {
        /// Each endpoint and its error.
        tried: String,
    },
    /// Nodes answered but none could act as leader.
    #[error("{0}")]
    NoLeader(String),
    /// The cluster answered with an error.
    #[error("{message}")]
    Status {
        /// gRPC status code.
        code: Code,
        /// The node's explanation.
        message: String,
    },
    /// The answer could not be read.
    #[error("unreadable answer from {endpoint}: {message}")]
    Protocol {
        /// Who answered.
        endpoint: String,
        /// What was wrong.
        message: String,
    },
}

impl From<ClientError> for AdminError {
    /// A node's refusal read back over the wire is the refusal it made;
    /// anything else (no endpoint answered, no leader, an unreadable answer)
    /// is the cluster being unavailable to this client.
    fn from(error: ClientError) -> AdminError {
        match error {
            ClientError::Status { code, message } => AdminError::from_status(code, message),
            other => AdminError::Unavailable(other.to_string()),
        }
    }
}

/// [`AdminClient`] as an [`AdminTransport`]: each request goes to the leader
/// (one at a time; give a caller whose requests must not wait behind
/// another's a transport of its own).
pub struct RemoteAdmin(tokio::sync::Mutex<AdminClient>);

impl RemoteAdmin {
    /// A transport to the cluster at `endpoints`.
    pub fn new(endpoints: Vec<String>, tls: Option<TlsMaterial>) -> RemoteAdmin {
        RemoteAdmin(tokio::sync::Mutex::new(AdminClient::new(endpoints, tls)))
    }
}

impl AdminTransport for RemoteAdmin {
    fn call(&self, request: AdminRequest) -> AdminFuture<'_> {
        Box::pin(async move { Ok(self.0.lock().await.call(&request).await?) })
    }
}

/// A client of the operator API.
pub struct AdminClient {
    endpoints: Vec<String>,
    tls: Option<TlsMaterial>,
    timeout: Duration,
    election_wait: Duration,
}

impl AdminClient {
    /// A client that starts with `endpoints` (`host:port` each).
    pub fn new(endpoints: Vec<String>, tls: Option<TlsMaterial>) -> AdminClient {
        AdminClient {
            endpoints,
            tls,
            timeout: Duration::from_secs(15),
            election_wait: Duration::from_secs(5),
        }
    }

    /// Sets the time limit of one call to one node.
    pub fn with_timeout(mut self, timeout: Duration) -> AdminClient {
        self.timeout = timeout;
        self
    }

    fn client(&self, addr: &str) -> Result<ControlPlaneClient<Channel>, ClientError> {
        let channel = channel(addr, self.tls.as_ref()).map_err(|e| ClientError::Unreachable {
            tried: format!("{addr}: {}", with_causes(&e)),
        })?;
        Ok(ControlPlaneClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES))
    }

    async fn send(
        mut client: ControlPlaneClient<Channel>,
        timeout: Duration,
        request: &AdminRequest,
    ) -> Result<AdminAnswer, tonic::Status> {
        let mut call = tonic::Request::new(pb::AdminCall {
            request: Some(request.to_pb()),
        });
        call.set_timeout(timeout);
        let reply = client.admin(call).await?.into_inner();
        let answer = reply
            .answer
            .ok_or(WireError::Missing("AdminReply.answer"))
            .and_then(AdminAnswer::from_pb);
        answer.map_err(|e| {
            tonic::Status::internal(format!(
                "unreadable answer: {e}; use the `quiver ctl` of the cluster's release"
            ))
        })
    }

    /// Runs `f` on a client of `addr` (a failure to make one reads as the
    /// endpoint being unavailable).
    async fn on<T, Fut>(
        &self,
        addr: &str,
        f: &impl Fn(ControlPlaneClient<Channel>) -> Fut,
    ) -> Result<T, tonic::Status>
    where
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let client = self
            .client(addr)
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        f(client).await
    }

    /// Sends `request` to the first endpoint only, without following the leader.
    pub async fn call_here(&mut self, request: &AdminRequest) -> Result<AdminAnswer, ClientError> {
        let addr = self.endpoints.first().cloned().unwrap_or_default();
        let timeout = self.timeout;
        self.on(&addr, &|client| Self::send(client, timeout, request))
            .await
            .map_err(|s| status_error(&addr, s))
    }

    /// Sends `request` to the leader, wherever it is; the endpoint that answers
    /// is moved to the front for the next call.
    ///
    /// While the cluster is electing a leader (nodes answer but none leads), it
    /// waits and asks again, for up to [`AdminClient::with_election_wait`]
    /// (default 5 s), so an operator's command rides through a failover.
    pub async fn call(&mut self, request: &AdminRequest) -> Result<AdminAnswer, ClientError> {
        let timeout = self.timeout;
        self.on_leader(|client| Self::send(client, timeout, request))
            .await
    }

    /// A backup of the cluster's state, taken on the leader (wherever it
    /// is): the bytes of a backup file, not yet checked.
    pub async fn save_backup(&mut self) -> Result<Vec<u8>, ClientError> {
        // A large state takes longer than one admin call may.
        let timeout = self.timeout.max(Duration::from_secs(300));
        self.on_leader(|mut client| async move {
            let mut call = tonic::Request::new(pb::SaveBackupRequest {});
            call.set_timeout(timeout);
            let mut stream = client.save_backup(call).await?.into_inner();
            let mut bytes = Vec::new();
            while let Some(chunk) = stream.message().await? {
                bytes.extend_from_slice(&chunk.data);
            }
            Ok(bytes)
        })
        .await
    }

    /// Runs `f` on the leader's client, wherever the leader is, waiting
    /// through an election as [`AdminClient::call`] says.
    async fn on_leader<T, Fut>(
        &mut self,
        f: impl Fn(ControlPlaneClient<Channel>) -> Fut,
    ) -> Result<T, ClientError>
    where
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let deadline = tokio::time::Instant::now() + self.election_wait;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.on_leader_once(&f).await {
                Err(ClientError::NoLeader(message)) => {
                    if tokio::time::Instant::now() + pause > deadline {
                        return Err(ClientError::NoLeader(message));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// How long [`AdminClient::call`] waits for a leader to be elected.
    pub fn with_election_wait(mut self, wait: Duration) -> AdminClient {
        self.election_wait = wait;
        self
    }

    async fn on_leader_once<T, Fut>(
        &mut self,
        f: &impl Fn(ControlPlaneClient<Channel>) -> Fut,
    ) -> Result<T, ClientError>
    where
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let mut tried = Vec::new();
        let mut failed = std::collections::BTreeSet::new();
        let mut no_leader = None;
        let mut queue: Vec<String> = self.endpoints.clone();
        let mut redirects = 0;
        while !queue.is_empty() {
            let addr = queue.remove(0);
            if failed.contains(&addr) {
                continue;
            }
            match self.on(&addr, f).await {
                Ok(answer) => {
                    self.endpoints.retain(|e| *e != addr);
                    self.endpoints.insert(0, addr);
                    return Ok(answer);
                }
                Err(status)
                    if status.code() == Code::FailedPrecondition
                        && status.message().starts_with(NOT_LEADER) =>
                {
                    let leader = status
                        .metadata()
                        .get(LEADER_METADATA)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    match leader {
                        // A leader this round could not reach is gone: the
                        // others just have not noticed yet (an election follows).
                        Some(leader)
                            if redirects < MAX_REDIRECTS
                                && leader != addr
                                && !failed.contains(&leader) =>
                        {
                            redirects += 1;
                            queue.retain(|e| *e != leader);
                            queue.insert(0, leader);
                        }
                        Some(leader) if failed.contains(&leader) => {
                            no_leader = Some(format!(
                                "{addr} still follows {leader}, which does not answer"
                            ));
                        }
                        _ => no_leader = Some(format!("{addr}: {}", status.message())),
                    }
                }
                Err(status) if transport_failure(&status) => {
                    tried.push(format!("{addr}: {}", status.message()));
                    failed.insert(addr);
                }
                Err(status) => return Err(status_error(&addr, status)),
            }
        }
        match no_leader {
            Some(message) => Err(ClientError::NoLeader(format!(
                "no leader to take the request ({message}); if nodes were lost, a majority must be running for the cluster to elect one"
            ))),
            None => Err(ClientError::Unreachable {
                tried: tried.join("; "),
            }),
        }
    }
}

/// The call never reached a working node: down, refused, timed out, or a
/// protocol mismatch (a plaintext client against a TLS node, or the reverse).
fn transport_failure(status: &tonic::Status) -> bool {
    match status.code() {
        Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Cancelled => true,
        Code::Internal => {
            let m = status.message();
            m.contains("h2 protocol error") || m.contains("transport error") || m.contains("tls")
        }
        _ => false,
    }
}

fn status_error(addr: &str, status: tonic::Status) -> ClientError {
    if transport_failure(&status) {
        return ClientError::Unreachable {
            tried: format!("{addr}: {}", status.message()),
        };
    }
    match status.code() {
        Code::Internal if status.message().starts_with("unreadable answer") => {
            ClientError::Protocol {
                endpoint: addr.to_string(),
                message: status.message().to_string(),
            }
        }
        code => ClientError::Status {
            code,
            message: status.message().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use quiver_admin::outcome::RefusalCode;
    use tonic::Status;

    use super::*;

    /// A node's refusal read back over the wire is the refusal it made, and
    /// what no node answered is the cluster being unavailable.
    #[test]
    fn a_refusal_read_back_is_the_refusal_the_node_made() {
        let made = [
            AdminError::Refused {
                code: RefusalCode::NotFound,
                message: "no tenant `t`".into(),
            },
            AdminError::Refused {
                code: RefusalCode::AlreadyExists,
                message: "tenant `t` exists".into(),
            },
            AdminError::Refused {
                code: RefusalCode::LimitReached,
                message: "at most 3 keys".into(),
            },
            AdminError::Invalid("bad id".into()),
            AdminError::NoQuorum("no quorum".into()),
            AdminError::Unavailable("shutting down".into()),
        ];
        for error in made {
            let shown = format!("{error:?}");
            let status = Status::from(error);
            let read = AdminError::from(ClientError::Status {
                code: status.code(),
                message: status.message().to_string(),
            });
            assert_eq!(format!("{read:?}"), shown);
        }
        let down = AdminError::from(ClientError::Unreachable {
            tried: "127.0.0.1:1: refused".into(),
        });
        assert!(
            matches!(down, AdminError::Unavailable(ref m) if m.contains("127.0.0.1:1")),
            "{down:?}"
        );
    }
}
