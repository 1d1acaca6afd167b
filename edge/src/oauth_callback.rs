//! `GET /oauth/callback`: where an upstream's authorization server sends
//! the person who granted Quiver access, with the code. The edge relays the
//! query to the control plane (whose leader holds the flow and exchanges
//! the code) and shows the person a short page saying what happened. The
//! request carries no Quiver credential: the flow's unguessable `state` and
//! its PKCE verifier, held by the leader, are what bind it. The query is
//! never logged; the page is never cached and sends no referrer.

use std::sync::Arc;

use axum::{
    Router,
    extract::RawQuery,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

use quiver_admin::{AdminTransport, outcome::OAuthGrantChanged};
use quiver_proto::secret_value::SecretValue;

use crate::RelayError;

/// The path the route serves.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// The route, relaying to `control_plane` (none: the page says this edge relays no
/// callbacks).
pub(crate) fn routes(control_plane: Option<Arc<dyn AdminTransport>>) -> Router {
    Router::new().route(
        CALLBACK_PATH,
        get(move |RawQuery(query): RawQuery| {
            let control_plane = control_plane.clone();
            async move {
                let Some(control_plane) = control_plane else {
                    return page(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Not completed",
                        "This Quiver edge follows no control plane, so it cannot complete an authorization. Open the link again from `quiver ctl upstream authorize`, with the upstream's redirect URI pointing at an edge of the cluster.",
                    );
                };
                let query = query.unwrap_or_default();
                if let Some(name) = repeated_parameter(&query) {
                    // The flow reads one `state`, the OAuth client another:
                    // a second one could spend a live flow on a forged code.
                    return page(
                        StatusCode::BAD_REQUEST,
                        "Not authorized",
                        &format!("The callback carries `{name}` more than once. Open the link again from `quiver ctl upstream authorize`."),
                    );
                }
                let url = format!("http://quiver.invalid{CALLBACK_PATH}?{query}");
                let completed = control_plane
                    .complete_authorization(SecretValue::new(url))
                    .await
                    .map_err(RelayError::from);
                match completed {
                    Ok(OAuthGrantChanged { tenant, upstream }) => page(
                        StatusCode::OK,
                        "Authorized",
                        &format!("Quiver can now use upstream `{upstream}` for tenant `{tenant}`. You can close this page."),
                    ),
                    Err(e) => {
                        // A flow the control plane does not know is the
                        // person's bad link, not a missing page.
                        let status = match e {
                            RelayError::NotFound(_) => StatusCode::BAD_REQUEST,
                            ref other => other.status(),
                        };
                        page(status, "Not authorized", &e.to_string())
                    }
                }
            }
        }),
    )
}

/// The first parameter of `query` that appears more than once, if any.
fn repeated_parameter(query: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').map_or(pair, |(name, _)| name))
        .find(|name| !seen.insert(*name))
        .map(str::to_owned)
}

/// A small HTML page: nothing loaded, nothing cached, no referrer, never
/// framed.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Quiver: {title}</title></head><body><h1>{title}</h1><p>{}</p></body></html>",
        escape(text)
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::repeated_parameter;

    #[test]
    fn a_repeated_parameter_is_named() {
        assert_eq!(repeated_parameter("code=a&state=b"), None);
        assert_eq!(
            repeated_parameter("state=b&code=a&state=c").as_deref(),
            Some("state")
        );
        assert_eq!(repeated_parameter("code&code=1").as_deref(), Some("code"));
        assert_eq!(repeated_parameter(""), None);
    }
}
