//! What every console request goes through: the Host check, the security
//! headers, the session cookie and CSRF token, and the re-authentication
//! of a tenant's credential; plus sign-in and sign-out.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use quiver_admin::AdminTransport;
use quiver_proto::secret_value::SecretValue;
use quiver_view::ToolView;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Console, ConsoleLink,
    session::{self, CSRF_HEADER, Session, SignedIn},
};
use crate::auth::{AuthMode, AuthRefusal, Principal};

/// The console's Content-Security-Policy: its own scripts, styles and
/// requests only; nothing inline; it frames only its own app views
/// (which carry a policy of their own) and is framed by nothing.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What a signed-out request is told.
const SIGN_IN: &str = "sign in first";

/// An error answer: `{"error": message}` with a status.
#[derive(Debug)]
pub(crate) struct ApiError(pub(crate) StatusCode, pub(crate) String);

impl ApiError {
    pub(crate) fn bad(message: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, message.into())
    }
    pub(crate) fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError(StatusCode::FORBIDDEN, message.into())
    }
    fn signed_out() -> ApiError {
        ApiError(StatusCode::UNAUTHORIZED, SIGN_IN.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

/// A handler's answer.
pub(crate) type Answer<T = Value> = Result<Json<T>, ApiError>;

impl From<quiver_admin::AdminError> for ApiError {
    /// The control plane's failure with the status that says it.
    fn from(error: quiver_admin::AdminError) -> ApiError {
        let error = crate::RelayError::from(error);
        ApiError(error.status(), error.to_string())
    }
}

/// Who a request comes from.
pub(crate) enum Caller {
    /// A tenant, authenticated now, and what it sees now.
    Tenant(Principal, Arc<ToolView>),
    /// The operator.
    Operator,
}

/// Middleware over every console route: refuses a `Host` the edge does not
/// answer to (DNS rebinding) and sets the security headers.
pub(crate) async fn guard(
    State(console): State<Arc<Console>>,
    mut request: Request,
    next: Next,
) -> Response {
    // HTTP/2 names the host in `:authority`, not in a `Host` header: the
    // handlers' checks read `Host`, so it is set from the authority.
    if !request.headers().contains_key(header::HOST)
        && let Some(value) = request
            .uri()
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
    {
        request.headers_mut().insert(header::HOST, value);
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if !crate::hosts::host_allowed(&console.hosts, &host) {
        return ApiError(
            StatusCode::FORBIDDEN,
            format!("host `{host}` is not served here"),
        )
        .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // An app's view sets its own policy and framing (see `apps`); every
    // other answer gets the console's.
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // API answers are never cached; the page and its assets are revalidated.
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

impl Console {
    /// The link to the control plane, or the answer saying there is none.
    pub(crate) fn link(&self) -> Result<&ConsoleLink, ApiError> {
        self.link.as_ref().ok_or_else(|| {
            ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                "this edge follows no control plane, so usage, audit, keys and findings are not available here".into(),
            )
        })
    }

    /// The control plane, or the answer saying this edge follows none.
    pub(crate) fn control_plane(&self) -> Result<&dyn AdminTransport, ApiError> {
        Ok(self.link()?.control_plane.as_ref())
    }

    /// The session of a request, checking its CSRF token and origin when it
    /// changes something.
    fn session(&self, method: &Method, headers: &HeaderMap) -> Result<(String, Session), ApiError> {
        let id = cookie_id(headers).ok_or_else(ApiError::signed_out)?;
        let session = self.sessions.get(id).ok_or_else(ApiError::signed_out)?;
        if method != Method::GET && method != Method::HEAD {
            same_origin(headers, self.secure_cookie)?;
            let sent = headers
                .get(CSRF_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            if !session::same(sent, &session.csrf) {
                return Err(ApiError::forbidden(format!(
                    "missing or wrong {CSRF_HEADER} header; reload the console"
                )));
            }
        }
        Ok((id.to_string(), session))
    }

    /// Who sent the request, authenticated now.
    pub(crate) async fn caller(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<Caller, ApiError> {
        let (id, session) = self.session(method, headers)?;
        match session.who {
            SignedIn::Operator => {
                // The token may have been taken away since (none linked).
                match self.link.as_ref().and_then(|l| l.operator_token_sha256) {
                    Some(_) => Ok(Caller::Operator),
                    None => Err(ApiError::signed_out()),
                }
            }
            SignedIn::Tenant(credential) => {
                let principal = match credential {
                    None if self.gateway.config().auth == AuthMode::None => Principal::anonymous(),
                    None => Err(ApiError::signed_out())?,
                    Some(credential) => {
                        match self.gateway.authenticate(credential.expose()).await {
                            Ok(principal) => principal,
                            Err(_) => {
                                self.sessions.end(&id);
                                return Err(ApiError::signed_out());
                            }
                        }
                    }
                };
                let view = self.gateway.view_for(&principal).ok_or_else(|| {
                    self.sessions.end(&id);
                    ApiError::signed_out()
                })?;
                Ok(Caller::Tenant(principal, view))
            }
        }
    }

    /// The signed-in tenant, or 403 for the operator.
    pub(crate) async fn tenant(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<(Principal, Arc<ToolView>), ApiError> {
        match self.caller(method, headers).await? {
            Caller::Tenant(principal, view) => Ok((principal, view)),
            Caller::Operator => Err(ApiError::forbidden(
                "the operator has no tenant view; sign in with a tenant's API key or token",
            )),
        }
    }

    /// Nothing, or 403 when the caller is not the operator.
    pub(crate) async fn operator(
        &self,
        method: &Method,
        headers: &HeaderMap,
    ) -> Result<(), ApiError> {
        match self.caller(method, headers).await? {
            Caller::Operator => Ok(()),
            Caller::Tenant(..) => Err(ApiError::forbidden("operators only")),
        }
    }
}

/// A request that changes something must come from the console's own
/// origin: its `Origin` (which browsers send on every such request), when
/// present, names the `Host` it was sent to.
fn same_origin(headers: &HeaderMap, secure: bool) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    // The scheme too: a page served over plain HTTP under the same name
    // is another origin than the console reached over TLS.
    let scheme = if secure { "https" } else { "http" };
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .filter(|(s, _)| s.eq_ignore_ascii_case(scheme))
        .map(|(_, rest)| rest);
    match (origin_host, host) {
        (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => Ok(()),
        _ => Err(ApiError::forbidden("cross-origin request refused")),
    }
}

/// The address a request came from, when the listener knows it.
pub(crate) struct ClientAddress(pub(crate) Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(ClientAddress(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|axum::extract::ConnectInfo(peer)| peer.ip()),
        ))
    }
}

/// The session id the request's cookie names.
fn cookie_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .find_map(|h| session::cookie_value(h, session::COOKIE))
}

/// A sign-in.
#[derive(Deserialize)]
pub(crate) struct SignIn {
    /// `tenant` (the default) or `operator`.
    #[serde(default)]
    role: Option<String>,
    /// An API key or access token; the operator token; empty for the
    /// anonymous tenant of an edge that authenticates nobody.
    #[serde(default)]
    credential: String,
}

/// `POST /console/api/session`: checks the credential with the same code MCP
/// uses and starts a session.
pub(crate) async fn sign_in(
    State(console): State<Arc<Console>>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Json(sign_in): Json<SignIn>,
) -> Response {
    match start(&console, address, &headers, sign_in).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn start(
    console: &Console,
    address: Option<std::net::IpAddr>,
    headers: &HeaderMap,
    sign_in: SignIn,
) -> Result<Response, ApiError> {
    same_origin(headers, console.secure_cookie)?;
    let credential = sign_in.credential.trim().to_string();
    let role = sign_in.role.as_deref().unwrap_or("tenant");
    if let Err(wait) = console
        .sign_ins
        .take(address, &format!("{role}\n{credential}"))
    {
        let mut response = ApiError(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "too many sign-ins; try again in {} s",
                wait.as_secs().max(1)
            ),
        )
        .into_response();
        if let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return Ok(response);
    }
    let mut tenant: Option<Arc<str>> = None;
    let who = match role {
        "operator" => {
            let expected = console.link.as_ref().and_then(|l| l.operator_token_sha256);
            let Some(expected) = expected else {
                return Err(ApiError::forbidden(
                    "this edge takes no operator sign-in: it follows no control plane, or [edge.console] operator_token_file is not set",
                ));
            };
            let given = super::operator_digest(&credential);
            if !session::same_bytes(&given, &expected) {
                tracing::info!("console: refused an operator sign-in");
                return Err(ApiError(
                    StatusCode::UNAUTHORIZED,
                    "wrong operator token".into(),
                ));
            }
            SignedIn::Operator
        }
        "tenant" if credential.is_empty() => {
            if console.gateway.config().auth != AuthMode::None {
                return Err(ApiError(
                    StatusCode::UNAUTHORIZED,
                    "enter an API key or an access token".into(),
                ));
            }
            tenant = Some(crate::auth::Principal::anonymous().tenant);
            SignedIn::Tenant(None)
        }
        "tenant" => match console.gateway.authenticate(&credential).await {
            Ok(principal) => {
                tenant = Some(principal.tenant.clone());
                SignedIn::Tenant(Some(SecretValue::new(credential)))
            }
            Err(refusal) => {
                if let AuthRefusal::Invalid { reason } = &refusal {
                    tracing::info!("console: refused a credential: {reason}");
                }
                let message = match refusal {
                    AuthRefusal::InsufficientScope { .. } => {
                        "the access token lacks a scope this edge requires"
                    }
                    _ => "unknown, revoked or expired credential",
                };
                return Err(ApiError(StatusCode::UNAUTHORIZED, message.into()));
            }
        },
        other => {
            return Err(ApiError::bad(format!(
                "role `{other}`: expected tenant or operator"
            )));
        }
    };
    // Signing in again ends the session the browser held.
    if let Some(old) = cookie_id(headers) {
        console.sessions.end(old);
    }
    let (id, session) = console.sessions.begin(who, tenant);
    let mut response = Json(json!({ "csrf": session.csrf })).into_response();
    let cookie = session::set_cookie(&id, console.secure_cookie);
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("cookie is ASCII"),
    );
    Ok(response)
}

/// `GET /console/api/session`: who is signed in, and what the console may
/// offer them.
pub(crate) async fn me(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer {
    let (_, session) = console.session(&method, &headers)?;
    let linked = console.link.as_ref();
    let metrics = linked.map(|l| l.metrics.clone()).unwrap_or_default();
    match console.caller(&method, &headers).await? {
        Caller::Operator => Ok(Json(json!({
            "role": "operator",
            "csrf": session.csrf,
            "linked": linked.is_some(),
            "metrics": metrics,
        }))),
        Caller::Tenant(principal, view) => {
            let tenants = console.gateway.views();
            let tenant = tenants.tenants().get(&principal.tenant);
            let mode = tenant
                .and_then(|t| t.mode)
                .unwrap_or(console.gateway.config().default_mode);
            Ok(Json(json!({
                "role": "tenant",
                "csrf": session.csrf,
                "tenant": &*principal.tenant,
                "who": principal.who(),
                "mode": mode.to_string(),
                "tools": view.len(),
                "manifest_version": view.manifest().version,
                "scripts": console.gateway.scripts().is_some(),
                "self_service_keys": tenant.is_some_and(|t| t.self_service_keys) && linked.is_some(),
                "linked": linked.is_some(),
            })))
        }
    }
}

/// `DELETE /console/api/session`: signs out.
pub(crate) async fn sign_out(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    match console.session(&method, &headers) {
        Ok((id, _)) => console.sessions.end(&id),
        Err(e) => return e.into_response(),
    }
    let mut response = Json(json!({ "signed_out": true })).into_response();
    let cookie = session::set_cookie("", console.secure_cookie);
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("cookie is ASCII"),
    );
    response
}

/// Any other `/console/api/…` path.
pub(crate) async fn not_found() -> ApiError {
    ApiError(StatusCode::NOT_FOUND, "no such console API".into())
}
