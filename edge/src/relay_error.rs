//! Why the control plane did not do what the edge relayed to it (a console
//! request, an OAuth callback): typed, so the console and the callback page
//! answer each failure with its own HTTP status.

use axum::http::StatusCode;

/// Why a request the edge relayed to the control plane failed. The message
/// is the control plane's, worded for the person who asked; it never holds a
/// token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The request was refused: a value is wrong, a limit is reached, or
    /// the state it depends on is gone (a spent or unknown OAuth flow).
    #[error("{0}")]
    Refused(String),
    /// What the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The control plane cannot answer now (unreachable, no leader, no
    /// quorum, shutting down).
    #[error("{0}")]
    Unavailable(String),
    /// The control plane answered, but not with an answer to this request
    /// (another release on the other side).
    #[error("the control plane answered a {asked} request with a {got} answer")]
    Unexpected {
        /// What was asked.
        asked: &'static str,
        /// What the answer answers.
        got: String,
    },
}

impl From<quiver_admin::AdminError> for RelayError {
    /// A refusal stays a refusal (a missing thing `NotFound`), an answer of
    /// the wrong kind stays unexpected, and anything else (not the leader,
    /// no quorum, unreachable, shutting down) is the control plane being
    /// unavailable.
    fn from(error: quiver_admin::AdminError) -> RelayError {
        use quiver_admin::{AdminError, outcome::RefusalCode};
        match error {
            AdminError::Refused {
                code: RefusalCode::NotFound,
                message,
            } => RelayError::NotFound(message),
            AdminError::Refused { message, .. } | AdminError::Invalid(message) => {
                RelayError::Refused(message)
            }
            AdminError::Unexpected { asked, got } => RelayError::Unexpected { asked, got },
            other => RelayError::Unavailable(other.to_string()),
        }
    }
}

impl RelayError {
    /// The HTTP status that says this failure.
    pub fn status(&self) -> StatusCode {
        match self {
            RelayError::Refused(_) => StatusCode::BAD_REQUEST,
            RelayError::NotFound(_) => StatusCode::NOT_FOUND,
            RelayError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            RelayError::Unexpected { .. } => StatusCode::BAD_GATEWAY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_own_status_and_keeps_the_reason() {
        let cases = [
            (RelayError::Refused("key limit".into()), 400, "key limit"),
            (
                RelayError::NotFound("no tenant `t`".into()),
                404,
                "no tenant `t`",
            ),
            (
                RelayError::Unavailable("no leader".into()),
                503,
                "no leader",
            ),
        ];
        for (error, status, text) in cases {
            assert_eq!(error.status().as_u16(), status);
            assert_eq!(error.to_string(), text);
        }
        let odd = RelayError::Unexpected {
            asked: "key issue",
            got: "tenant list".into(),
        };
        assert_eq!(odd.status(), StatusCode::BAD_GATEWAY);
        assert!(odd.to_string().contains("tenant list"), "{odd}");
    }

    #[test]
    fn refusals_stay_refusals_and_outages_stay_outages() {
        use quiver_admin::{AdminError, outcome::RefusalCode};
        let missing = RelayError::from(AdminError::Refused {
            code: RefusalCode::NotFound,
            message: "no tenant `t`".into(),
        });
        assert!(matches!(missing, RelayError::NotFound(ref m) if m == "no tenant `t`"));
        let capped = RelayError::from(AdminError::Refused {
            code: RefusalCode::LimitReached,
            message: "at most 3 keys".into(),
        });
        assert!(matches!(capped, RelayError::Refused(ref m) if m == "at most 3 keys"));
        assert!(matches!(
            RelayError::from(AdminError::NoQuorum("no quorum".into())),
            RelayError::Unavailable(_)
        ));
        assert!(matches!(
            RelayError::from(AdminError::Unavailable("cluster unreachable".into())),
            RelayError::Unavailable(_)
        ));
        let odd = RelayError::from(AdminError::Unexpected {
            asked: "TenantList",
            got: "audit".into(),
        });
        assert_eq!(odd.status(), StatusCode::BAD_GATEWAY);
    }
}
