//! The control plane's failures, as the edge's [`RelayError`]: what the
//! console and the OAuth callback page answer with.

use quiver_control_plane::{
    admin::{AdminAnswer, AdminError},
    client::ClientError,
    outcome::RefusalCode,
};
use quiver_edge::RelayError;
use tonic::Code;

/// An in-process node's failure.
pub(crate) fn from_admin(error: AdminError) -> RelayError {
    match error {
        AdminError::Refused {
            code: RefusalCode::NotFound,
            message,
        } => RelayError::NotFound(message),
        AdminError::Refused { message, .. } | AdminError::Invalid(message) => {
            RelayError::Refused(message)
        }
        // Not the leader, no quorum, shutting down.
        other => RelayError::Unavailable(other.to_string()),
    }
}

/// A failure over the admin API.
pub(crate) fn from_client(error: ClientError) -> RelayError {
    match error {
        ClientError::Status { code, message } => match code {
            Code::NotFound => RelayError::NotFound(message),
            Code::InvalidArgument
            | Code::FailedPrecondition
            | Code::AlreadyExists
            | Code::ResourceExhausted
            | Code::OutOfRange
            | Code::PermissionDenied => RelayError::Refused(message),
            _ => RelayError::Unavailable(message),
        },
        other => RelayError::Unavailable(other.to_string()),
    }
}

/// `answer` answers another request than the `asked` one.
pub(crate) fn unexpected(asked: &'static str, answer: &AdminAnswer) -> RelayError {
    let shown = format!("{answer:?}");
    let got = shown
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_string();
    RelayError::Unexpected { asked, got }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_stay_refusals_and_outages_stay_outages() {
        let missing = from_admin(AdminError::Refused {
            code: RefusalCode::NotFound,
            message: "no tenant `t`".into(),
        });
        assert!(matches!(missing, RelayError::NotFound(ref m) if m == "no tenant `t`"));
        let capped = from_admin(AdminError::Refused {
            code: RefusalCode::LimitReached,
            message: "at most 3 keys".into(),
        });
        assert!(matches!(capped, RelayError::Refused(_)));
        assert!(matches!(
            from_admin(AdminError::NoQuorum("no quorum".into())),
            RelayError::Unavailable(_)
        ));
        let over_wire = from_client(ClientError::Status {
            code: Code::ResourceExhausted,
            message: "at most 3 keys".into(),
        });
        assert!(matches!(over_wire, RelayError::Refused(ref m) if m == "at most 3 keys"));
        let down = from_client(ClientError::Unreachable {
            tried: "127.0.0.1:1: refused".into(),
        });
        assert!(matches!(down, RelayError::Unavailable(_)));
    }
}
