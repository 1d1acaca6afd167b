//! Why an admin request failed, and how that travels: a gRPC status code, its
//! message, and the leader's address when there is one to follow.

use tonic::Status;

use crate::{
    NodeId,
    outcome::{Refusal, RefusalCode},
};

/// The metadata key carrying the leader's address on a "not the leader" error.
pub const LEADER_METADATA: &str = "quiver-leader";

/// How the message of a "not the leader" status begins; `AdminClient` follows
/// such an answer to the leader.
pub const NOT_LEADER: &str = "not the leader";

/// Why an admin request failed; see `From<AdminError> for Status` for the wire.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// Ask the leader instead.
    #[error("node {this} is not the leader{}", match leader { Some((id, addr)) => format!("; the leader is node {id} at {addr}"), None => "; no leader is elected yet (is a quorum of nodes up?)".to_string() })]
    NotLeader {
        /// This node.
        this: NodeId,
        /// The leader as far as this node knows.
        leader: Option<(NodeId, String)>,
    },
    /// The state machine (or the node, for the same reasons) refused.
    #[error("{message}")]
    Refused {
        /// Why, for machines.
        code: RefusalCode,
        /// What to do.
        message: String,
    },
    /// The request itself is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The cluster cannot answer now (shutting down, a transport failure).
    #[error("{0}")]
    Unavailable(String),
    /// A majority of the voters did not answer in time.
    #[error("{0}")]
    NoQuorum(String),
    /// The answer is not the kind the request asks for (a node of another
    /// release, or a bug).
    #[error("the control plane answered a {asked} request with a {got} answer")]
    Unexpected {
        /// The answer asked for.
        asked: &'static str,
        /// The answer that came.
        got: String,
    },
}

impl AdminError {
    /// `answer` came where an answer of kind `asked` was expected.
    pub fn unexpected(asked: &'static str, answer: &crate::AdminAnswer) -> AdminError {
        AdminError::Unexpected {
            asked,
            got: answer.kind().to_string(),
        }
    }

    /// The error a gRPC status from a node stands for, so a refusal read
    /// back over the wire is the refusal the node made. It undoes
    /// `From<AdminError> for Status` for every refusal but one: a refusal
    /// coded `Invalid` reads back as [`AdminError::Invalid`] (the same status;
    /// the admin client follows "not the leader" itself, so that one never
    /// reaches here).
    pub fn from_status(code: tonic::Code, message: String) -> AdminError {
        use tonic::Code;
        match code {
            Code::NotFound => AdminError::Refused {
                code: RefusalCode::NotFound,
                message,
            },
            Code::AlreadyExists => AdminError::Refused {
                code: RefusalCode::AlreadyExists,
                message,
            },
            Code::InvalidArgument => AdminError::Invalid(message),
            Code::FailedPrecondition | Code::PermissionDenied | Code::OutOfRange => {
                AdminError::Refused {
                    code: RefusalCode::Unsupported,
                    message,
                }
            }
            Code::ResourceExhausted => AdminError::Refused {
                code: RefusalCode::LimitReached,
                message,
            },
            Code::Aborted => AdminError::NoQuorum(message),
            _ => AdminError::Unavailable(message),
        }
    }
}

impl From<Refusal> for AdminError {
    fn from(refusal: Refusal) -> AdminError {
        AdminError::Refused {
            code: refusal.code,
            message: refusal.message,
        }
    }
}

impl From<AdminError> for Status {
    fn from(error: AdminError) -> Status {
        match error {
            AdminError::NotLeader { leader, .. } => {
                let message = match &leader {
                    Some((id, addr)) => format!("{NOT_LEADER}; the leader is node {id} at {addr}"),
                    None => format!(
                        "{NOT_LEADER}, and no leader is elected yet (is a quorum of nodes up?)"
                    ),
                };
                let mut status = Status::failed_precondition(message);
                if let Some((_, addr)) = leader
                    && let Ok(value) = addr.parse()
                {
                    status.metadata_mut().insert(LEADER_METADATA, value);
                }
                status
            }
            AdminError::Refused { code, message } => match code {
                RefusalCode::NotFound => Status::not_found(message),
                RefusalCode::AlreadyExists => Status::already_exists(message),
                RefusalCode::Invalid => Status::invalid_argument(message),
                RefusalCode::Unsupported => Status::failed_precondition(message),
                RefusalCode::LimitReached => Status::resource_exhausted(message),
            },
            AdminError::Invalid(message) => Status::invalid_argument(message),
            AdminError::Unavailable(message) => Status::unavailable(message),
            // Not a transport failure: asking another node would not help.
            AdminError::NoQuorum(message) => Status::aborted(message),
            error @ AdminError::Unexpected { .. } => Status::internal(error.to_string()),
        }
    }
}
