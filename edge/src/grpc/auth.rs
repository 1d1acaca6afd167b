//! Who sends a gRPC request: the `authorization` metadata resolved to a
//! [`Principal`] with the same rules as the HTTP middleware
//! (`crate::access`), answered as gRPC statuses. It decides nothing about
//! what the principal may see; that is its view.

use tonic::{Status, metadata::MetadataMap};

use crate::{
    auth::{self, AuthMode, AuthRefusal, Principal},
    gateway::Gateway,
};

/// What every caller without a valid credential is told, whatever was wrong
/// (missing, malformed, unknown, revoked, expired): a prober learns nothing
/// about which case it hit.
pub(crate) const UNAUTHENTICATED: &str =
    "authentication required: send metadata `authorization: Bearer <API key or access token>`";

/// The principal of a request carrying `metadata`. A presented credential is
/// always checked, even where anonymous callers are accepted.
pub(crate) async fn principal(
    gateway: &Gateway,
    metadata: &MetadataMap,
) -> Result<Principal, Status> {
    let result = match metadata.get("authorization") {
        None if gateway.config().auth == AuthMode::None => Ok(Principal::anonymous()),
        None => Err(AuthRefusal::Missing),
        Some(value) => match value.to_str().ok().and_then(auth::bearer) {
            None => Err(AuthRefusal::Invalid {
                reason: "the authorization metadata is not a bearer credential".into(),
            }),
            Some(credential) => gateway.authenticate(credential).await,
        },
    };
    result.map_err(|refusal| refused(gateway, &refusal))
}

/// The status answering `refusal`.
fn refused(gateway: &Gateway, refusal: &AuthRefusal) -> Status {
    match refusal {
        AuthRefusal::Missing => Status::unauthenticated(UNAUTHENTICATED),
        AuthRefusal::Invalid { reason } => {
            tracing::info!("gRPC: refused a credential: {reason}");
            Status::unauthenticated(UNAUTHENTICATED)
        }
        AuthRefusal::InsufficientScope { required } => {
            let required = if required.is_empty() {
                gateway.required_scopes()
            } else {
                required.clone()
            };
            Status::permission_denied(format!(
                "the access token lacks a scope this server requires ({}); ask its issuer for a token with them",
                required.join(" ")
            ))
        }
    }
}
