//! Authentication at the HTTP layer: every MCP request is resolved to a
//! [`Principal`] before any session sees it, or refused with the status and
//! `WWW-Authenticate` challenge the MCP authorization spec names; and the
//! OAuth protected-resource metadata (RFC 9728) that challenge points to.

use std::sync::Arc;

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;

use crate::{
    auth::{self, AuthMode, AuthRefusal, Principal},
    gateway::Gateway,
};

/// The path of the protected-resource metadata document (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What authentication answers from: the gateway, and the `Host` values
/// the listener serves (only those are ever named back to a client as the
/// resource's address: a made-up `Host` is not reflected).
#[derive(Clone)]
pub struct Access {
    /// The gateway.
    pub gateway: Arc<Gateway>,
    /// `Host` values served (names, and `name:port`).
    pub hosts: Arc<[String]>,
}

/// Middleware: authenticates the request, or answers 401/403 without
/// reading the body. A presented credential is always checked, even where
/// anonymous callers are accepted.
pub async fn authenticate(
    State(access): State<Access>,
    mut request: Request,
    next: Next,
) -> Response {
    let gateway = &access.gateway;
    let presented = request.headers().get(header::AUTHORIZATION);
    let result = match presented {
        None if gateway.config().auth == AuthMode::None => Ok(Principal::anonymous()),
        None => Err(AuthRefusal::Missing),
        Some(value) => match value.to_str().ok().and_then(auth::bearer) {
            None => Err(AuthRefusal::Invalid {
                reason: "the Authorization header is not a bearer credential".into(),
            }),
            Some(credential) => gateway.authenticate(credential).await,
        },
    };
    match result {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refusal) => {
            if let AuthRefusal::Invalid { reason } = &refusal {
                tracing::info!(path = %request.uri().path(), "refused a credential: {reason}");
            }
            challenge(&access, request.headers(), request.uri().path(), &refusal)
        }
    }
}

/// The 401 or 403 answer to a refused request. Every invalid credential gets
/// the same answer.
fn challenge(access: &Access, headers: &HeaderMap, path: &str, refusal: &AuthRefusal) -> Response {
    let metadata = metadata_url(access, headers, path);
    let scopes = access.gateway.required_scopes();
    let mut value = format!("Bearer resource_metadata=\"{metadata}\"");
    let (status, message) = match refusal {
        AuthRefusal::Missing => (
            StatusCode::UNAUTHORIZED,
            "authentication required: send `Authorization: Bearer <API key or access token>`",
        ),
        AuthRefusal::Invalid { .. } => {
            value.push_str(", error=\"invalid_token\"");
            (
                StatusCode::UNAUTHORIZED,
                "authentication required: send `Authorization: Bearer <API key or access token>`",
            )
        }
        AuthRefusal::InsufficientScope { .. } => {
            value.push_str(", error=\"insufficient_scope\"");
            (
                StatusCode::FORBIDDEN,
                "the access token lacks a scope this server requires",
            )
        }
    };
    let required = match refusal {
        AuthRefusal::InsufficientScope { required } => required.clone(),
        _ => scopes,
    };
    if !required.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", required.join(" ")));
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32001, "message": message, "data": {"resource_metadata": metadata}},
    });
    let mut response = (status, Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The resource this edge is, as a URL: the configured OAuth resource, or
/// the request's scheme, `Host` (when it is one the listener serves; else
/// the first `name:port` it serves) and path.
fn resource_url(access: &Access, headers: &HeaderMap, path: &str) -> String {
    let gateway = &access.gateway;
    if let Some(resource) = gateway.oauth_resource() {
        return resource;
    }
    let scheme = if gateway.config().tls.is_some() {
        "https"
    } else {
        "http"
    };
    let served = |h: &&str| crate::hosts::host_allowed(&access.hosts, h);
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(served)
        .map(str::to_string)
        .or_else(|| access.hosts.iter().find(|h| h.contains(':')).cloned())
        .unwrap_or_else(|| gateway.config().listen.to_string());
    format!("{scheme}://{host}{path}")
}

/// Where the metadata of the resource at `path` is served: the
/// path-specific form (RFC 9728 §3.1), inserted between host and path.
fn metadata_url(access: &Access, headers: &HeaderMap, path: &str) -> String {
    let resource = resource_url(access, headers, path);
    match resource.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let path = if path == "/" { "" } else { path };
            format!("{scheme}://{host}{METADATA_PATH}{path}")
        }
        None => resource,
    }
}

/// The protected-resource metadata routes: `/.well-known/oauth-protected-resource`
/// and its path-specific forms (`…/mcp`, `…/code/mcp`, …).
pub fn metadata_routes(access: Access) -> Router {
    let root = access.clone();
    Router::new()
        .route(
            METADATA_PATH,
            get(move |headers: HeaderMap| async move { metadata(&root, &headers, "/mcp") }),
        )
        .route(
            &format!("{METADATA_PATH}/{{*path}}"),
            get(
                move |headers: HeaderMap,
                      axum::extract::Path(path): axum::extract::Path<String>| async move {
                    metadata(&access, &headers, &format!("/{path}"))
                },
            ),
        )
}

fn metadata(access: &Access, headers: &HeaderMap, path: &str) -> Response {
    let gateway = &access.gateway;
    let mut document = json!({
        "resource": resource_url(access, headers, path),
        "authorization_servers": gateway.authorization_servers(),
        "bearer_methods_supported": ["header"],
        "resource_name": "Quiver MCP gateway",
    });
    let scopes = gateway.scopes_supported();
    if !scopes.is_empty() {
        document["scopes_supported"] = json!(scopes);
    }
    Json(document).into_response()
}
