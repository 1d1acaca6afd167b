//! The MCP Streamable HTTP listener: `/mcp` (default mode), each mode at
//! `/{mode}/mcp` (`/passthrough/mcp`, `/search/mcp`, `/code/mcp`: clients such
//! as the MCP Inspector CLI expect the path to end in `/mcp`) and, for existing
//! clients, at `/mcp/{mode}`; plus `/healthz`, `/readyz`, and, when the edge
//! authenticates nobody, `/metrics` and `/status` (an edge that authenticates
//! its clients serves those on its admin listener only); and, for the
//! operator on this machine only, search's outcome signals (`/search/stats`,
//! `/search/reset/{tenant}`). Plain TCP or rustls TLS. Host and Origin are
//! checked against DNS rebinding; bodies over the limit are refused without
//! touching a session.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Json, Router,
    body::Body,
    extract::{ConnectInfo, Path, Request, State},
    http::{Method, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    access,
    gateway::Gateway,
    mode::Mode,
    serve_error::ServeError,
    session::GatewaySession,
    sessions::{self, EdgeSessions},
    tls,
};

/// The axum router serving every mode and `health`'s `/healthz` and
/// `/readyz` — plus `/metrics` and `/status` when the edge authenticates
/// nobody (metrics name tenants; an edge that requires credentials serves
/// them on its admin listener only).
pub fn router(
    gateway: Arc<Gateway>,
    bound: SocketAddr,
    sessions: CancellationToken,
    health: &quiver_telemetry::Health,
) -> Router {
    let config = gateway.config().clone();
    let mut hosts = config.effective_allowed_hosts(bound);
    // Clients send the port in Host; accept `name:port` for every allowed name.
    let with_ports: Vec<String> = hosts
        .iter()
        .map(|h| format!("{h}:{}", bound.port()))
        .collect();
    hosts.extend(with_ports);
    let operator_hosts: Arc<[String]> = hosts.clone().into();
    let edge_sessions = Arc::new(EdgeSessions::new(
        gateway.sessions().clone(),
        gateway.session_records(),
        gateway.peers().cloned(),
        config.max_body_bytes,
        config.session_limits(),
    ));
    edge_sessions.follow_records(sessions.child_token());
    let mut http_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(config.effective_allowed_origins())
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_cancellation_token(sessions.child_token());
    http_config.session_store = edge_sessions.store();
    let sessions = edge_sessions.clone();
    // `/mcp` serves each tenant its own mode (the edge's default when it names none).
    let service_for = |mode: Option<Mode>| {
        let gateway = gateway.clone();
        StreamableHttpService::new(
            move || {
                Ok(match mode {
                    Some(mode) => GatewaySession::new(gateway.clone(), mode),
                    None => GatewaySession::at_default_path(gateway.clone()),
                })
            },
            sessions.clone(),
            http_config.clone(),
        )
    };
    let mut router = Router::new().nest_service("/mcp", service_for(None));
    for mode in Mode::ALL {
        router = router
            .nest_service(&format!("/{mode}/mcp"), service_for(Some(mode)))
            .nest_service(&format!("/mcp/{mode}"), service_for(Some(mode)));
    }
    let router = router
        .layer(middleware::from_fn_with_state(
            gateway.clone(),
            check_json_rpc,
        ))
        .layer(middleware::from_fn_with_state(
            edge_sessions,
            sessions::check_session,
        ))
        .layer(middleware::from_fn_with_state(
            access::Access {
                gateway: gateway.clone(),
                hosts: operator_hosts.clone(),
            },
            access::authenticate,
        ))
        .layer(middleware::from_fn(session_end_status))
        .merge(access::metadata_routes(access::Access {
            gateway: gateway.clone(),
            hosts: operator_hosts.clone(),
        }))
        .merge(crate::oauth_callback::routes(gateway.grant_callback()));
    let router = router.merge(crate::console::routes(
        gateway.clone(),
        operator_hosts.clone(),
    ));
    let operator_token = gateway.console_link().and_then(|l| l.operator_token_sha256);
    let router = search_signal_routes(router, operator_hosts.clone(), operator_token);
    // `/metrics` and `/status` name tenants, upstreams and their errors:
    // on this listener only when it authenticates nobody, and then only
    // to a Host it serves (no DNS rebinding); else on the admin listener.
    let probes = if gateway.config().auth == crate::auth::AuthMode::None {
        health.routes().layer(middleware::from_fn_with_state(
            operator_hosts,
            check_operator_host,
        ))
    } else {
        health.probe_routes()
    };
    router.merge(probes)
}

/// Reads a request's whole body within `timeout` (a client sending it a
/// byte at a time is cut off: 408) and at most `max` bytes (413), before
/// any route sees it.
async fn body_in_time(
    State((timeout, max)): State<(std::time::Duration, usize)>,
    request: Request,
    next: middleware::Next,
) -> Response {
    use axum::http::header::CONTENT_LENGTH;
    let empty = request.method() == Method::GET
        || request.method() == Method::HEAD
        || request.method() == Method::DELETE
        || request
            .headers()
            .get(CONTENT_LENGTH)
            .is_some_and(|v| v == "0");
    if empty {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(_)) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Json(json!({"error": format!("the request body exceeds the limit of {max} bytes")})),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            [(axum::http::header::CONNECTION, "close")],
            Json(json!({"error": format!(
                "the request body did not arrive within {} s",
                timeout.as_secs()
            )})),
        )
            .into_response(),
    }
}

/// Refuses a request for `/metrics` or `/status` whose `Host` this edge does
/// not serve (a page rebinding its own name to this address).
async fn check_operator_host(
    State(hosts): State<Arc<[String]>>,
    request: Request,
    next: middleware::Next,
) -> Response {
    let path = request.uri().path();
    if (path == "/metrics" || path == "/status") && !host_served(&request, &hosts) {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"error": "a Host this edge does not serve"})),
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether `request`'s Host (or HTTP/2 authority) is one this edge serves.
fn host_served(request: &Request, hosts: &[String]) -> bool {
    crate::hosts::request_host(request).is_some_and(|h| crate::hosts::host_allowed(hosts, h))
}

/// `status` with every error text redacted (credentials, URLs, addresses,
/// paths), as `/status` shows it: any string under a key that names an
/// error.
pub fn redact_status(mut status: serde_json::Value) -> serde_json::Value {
    fn walk(value: &mut serde_json::Value, under_error: bool) {
        match value {
            serde_json::Value::String(text) if under_error => {
                *text = quiver_view::redact::redact(text);
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|v| walk(v, under_error));
            }
            serde_json::Value::Object(fields) => {
                for (key, v) in fields.iter_mut() {
                    walk(v, under_error || key.contains("error"));
                }
            }
            _ => {}
        }
    }
    walk(&mut status, false);
    status
}

fn search_signal_routes(
    router: Router,
    hosts: Arc<[String]>,
    operator_token: Option<[u8; 32]>,
) -> Router {
    use quiver_view::search::signals;
    let operator = Operator {
        hosts,
        token: operator_token,
    };
    let stats_operator = operator.clone();
    let one_operator = operator.clone();
    router
        .route(
            "/search/stats",
            get(move |request: Request| async move {
                if let Some(refused) = refuse_unless_operator(&request, &stats_operator) {
                    return refused;
                }
                let stats: Vec<_> = signals::installed().map_or_else(Vec::new, |store| {
                    store.tenants().iter().map(|t| store.stats(t)).collect()
                });
                Json(json!({ "tenants": stats })).into_response()
            }),
        )
        .route(
            "/search/stats/{tenant}",
            get(
                move |Path(tenant): Path<String>, request: Request| async move {
                    if let Some(refused) = refuse_unless_operator(&request, &one_operator) {
                        return refused;
                    }
                    let stats = signals::installed().map(|store| store.stats(&tenant));
                    Json(json!({ "tenants": stats.into_iter().collect::<Vec<_>>() }))
                        .into_response()
                },
            ),
        )
        .route(
            "/search/reset/{tenant}",
            post(
                move |Path(tenant): Path<String>, request: Request| async move {
                    if let Some(refused) = refuse_unless_operator(&request, &operator) {
                        return refused;
                    }
                    let Some(store) = signals::installed() else {
                        return Json(json!({"tenant": tenant, "reset": true})).into_response();
                    };
                    match tokio::task::spawn_blocking(move || store.reset(&tenant).map(|()| tenant))
                        .await
                    {
                        Ok(Ok(tenant)) => {
                            Json(json!({"tenant": tenant, "reset": true})).into_response()
                        }
                        Ok(Err(e)) => (
                            StatusCode::INTERNAL_SERVER_ERROR,
                            Json(json!({"error": format!("{e:#}")})),
                        )
                            .into_response(),
                        Err(e) => (
                            StatusCode::INTERNAL_SERVER_ERROR,
                            Json(json!({"error": e.to_string()})),
                        )
                            .into_response(),
                    }
                },
            ),
        )
}

/// The refusal of a request that does not come from this machine's
/// operator (a loopback peer, a `Host` the edge accepts, no `Origin`);
/// `None` lets it through.
/// Who may read search signals: a request to a Host this edge serves,
/// carrying the console's operator token.
#[derive(Clone)]
struct Operator {
    hosts: Arc<[String]>,
    /// SHA-256 of the console's operator token, if the edge has one.
    token: Option<[u8; 32]>,
}

fn refuse_unless_operator(request: &Request, operator: &Operator) -> Option<Response> {
    let refuse = |why: &str| {
        let body = json!({"error": format!("{why}; search signals are served to the operator on this machine only, with the console's operator token (quiver ctl search --operator-token-file FILE on the edge's host)")});
        Some((StatusCode::FORBIDDEN, Json(body)).into_response())
    };
    let hosts = &operator.hosts;
    let loopback = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|ConnectInfo(peer)| peer.ip().is_loopback());
    if !loopback {
        return refuse("not a loopback connection");
    }
    if request.headers().contains_key(axum::http::header::ORIGIN) {
        return refuse("a browser request (it carries an Origin header)");
    }
    if !host_served(request, hosts) {
        return refuse("a Host this edge does not serve");
    }
    let Some(expected) = operator.token else {
        return refuse("this edge has no operator token ([edge.console] operator_token_file)");
    };
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(crate::console_link::operator_digest);
    let matches = given.is_some_and(|given| crate::console::session::same_bytes(&given, &expected));
    if !matches {
        return refuse("no or a wrong operator token");
    }
    None
}

/// Serves every mode on `listener` (TLS when configured) until `shutdown`,
/// then drains: no new connection is accepted, requests in flight finish
/// (up to [`crate::drain::DRAIN_LIMIT`]), and only then are the sessions
/// ended.
pub async fn serve(
    gateway: Arc<Gateway>,
    listener: TcpListener,
    shutdown: CancellationToken,
    health: &quiver_telemetry::Health,
) -> Result<(), ServeError> {
    let address = listener.local_addr().map_err(ServeError::ListenerAddress)?;
    let sessions = CancellationToken::new();
    let in_flight = crate::drain::InFlight::default();
    let app = router(gateway.clone(), address, sessions.clone(), health).layer(
        middleware::from_fn_with_state(in_flight.clone(), crate::drain::count),
    );
    let ending = sessions.clone();
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        stopping.cancelled().await;
        let waiting = in_flight.count();
        if !in_flight.drained(crate::drain::DRAIN_LIMIT).await {
            tracing::warn!(
                "{} requests still in flight after {:?}: ending them",
                in_flight.count(),
                crate::drain::DRAIN_LIMIT
            );
        } else if waiting > 0 {
            tracing::info!("drained: {waiting} requests in flight finished");
        }
        ending.cancel();
    });
    let acceptor = match &gateway.config().tls {
        None => None,
        Some(tls_config) => match tls::acceptor(tls_config) {
            Ok(acceptor) => Some(acceptor),
            Err(source) => return Err(ServeError::Tls { address, source }),
        },
    };
    let limits = gateway.config().connection_limits();
    let app = app.layer(middleware::from_fn_with_state(
        (limits.body_timeout, gateway.config().max_body_bytes),
        body_in_time,
    ));
    crate::connections::serve(listener, acceptor, app, limits, shutdown, sessions.clone()).await;
    let served = Ok(());
    sessions.cancel();
    // What searches learned since the last periodic write.
    quiver_view::search::signals::flush_installed();
    served
}

/// A JSON-RPC error response with HTTP status `status`.
pub(crate) fn json_rpc_error(status: StatusCode, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, Json(body)).into_response()
}

/// Refuses, before any session sees them, POST bodies that are too large, not
/// JSON, or not JSON-RPC 2.0 messages, with a JSON-RPC error that says why.
/// A resumed call (`requestState`) another edge of the fleet holds is
/// handed to that edge (see `peers`).
async fn check_json_rpc(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    let limit = gateway.config().max_body_bytes;
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return json_rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                format!("request body exceeds the limit of {limit} bytes; send a smaller message"),
            );
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(e) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                format!("parse error: the body is not valid JSON ({e})"),
            );
        }
        Ok(message) if !is_json_rpc(&message) => {
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                -32600,
                "invalid request: expected a JSON-RPC 2.0 message such as {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{…}}".into(),
            );
        }
        Ok(message) => {
            let holder = gateway
                .peers()
                .zip(resumed_state(&message))
                .and_then(|(peers, state)| Some((peers, peers.holder(state)?)));
            // A resume forwarded once is answered where it landed.
            let forwarded = parts.headers.contains_key(crate::peers::FORWARDED_BY);
            if let (Some((peers, holder)), false) = (holder, forwarded) {
                let id = message.get("id").cloned().unwrap_or_default();
                return peers.forward(&holder, parts, bytes, id).await;
            }
            // A request about a task another edge holds goes to that edge
            // while it lives; once it is gone, this edge answers from the
            // task's record.
            // (A session's request cannot move: its session lives here.)
            let in_session = parts.headers.contains_key("mcp-session-id");
            let task_holder = gateway
                .peers()
                .zip(task_of(&message).filter(|_| !in_session))
                .and_then(|(peers, task)| Some((peers, peers.holder(task)?)));
            if let (Some((peers, holder)), false) = (task_holder, forwarded) {
                match peers
                    .try_forward(&holder, parts.clone(), bytes.clone())
                    .await
                {
                    Ok(response) => return response,
                    Err(e) => tracing::info!(
                        "the edge at {holder} holding a task is unreachable ({e}); answering from its record"
                    ),
                }
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The `taskId` of a `tasks/get`, `tasks/update` or `tasks/cancel`.
fn task_of(message: &serde_json::Value) -> Option<&str> {
    let method = message.get("method")?.as_str()?;
    if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") {
        return None;
    }
    message.get("params")?.get("taskId")?.as_str()
}

/// The `requestState` of a `tools/call` that resumes a parked call.
fn resumed_state(message: &serde_json::Value) -> Option<&str> {
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    message.get("params")?.get("requestState")?.as_str()
}

/// Answers a successful session `DELETE` with 204 No Content. rmcp answers
/// 202 Accepted, which the Python `mcp` SDK reports as "Session termination
/// failed: 202" (it and the TypeScript SDK treat 200 and 204 as success; 202
/// fits a message queued for later, not a session that is already gone).
async fn session_end_status(request: Request, next: Next) -> Response {
    let is_delete = request.method() == Method::DELETE;
    let response = next.run(request).await;
    if is_delete && response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}

/// A request, notification or response object (or a batch of them).
fn is_json_rpc(message: &serde_json::Value) -> bool {
    match message {
        serde_json::Value::Array(items) => !items.is_empty() && items.iter().all(is_json_rpc),
        serde_json::Value::Object(obj) => {
            obj.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")
                && (obj.get("method").is_some_and(serde_json::Value::is_string)
                    || obj.contains_key("result")
                    || obj.contains_key("error"))
        }
        _ => false,
    }
}
