//! The web console at `/console`: a tenant's tools, search, script
//! playground, keys, usage, audit and findings; the operator's tenants,
//! upstreams, drift approvals and cluster health. Every asset is embedded
//! in the binary and served under a strict Content-Security-Policy (no
//! inline script, nothing from elsewhere). The pages call `/console/api/…`,
//! whose answers come from the same code MCP and gRPC use: a signed-in
//! tenant is authenticated again on every request
//! ([`Gateway::authenticate`]) and sees its own view; what only the control
//! plane knows (usage, audit, findings, keys, operator data) is asked of it
//! through the [`ConsoleLink`]'s transport, as typed answers.

mod api;
mod apps;
mod assets;
mod operator;
pub(crate) mod session;
mod sign_in_limit;
mod tenant;

pub use crate::console_link::{
    ConsoleConfig, ConsoleLink, MIN_OPERATOR_TOKEN, OperatorTokenError, new_operator_token,
    operator_digest, read_operator_token,
};

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};

use crate::gateway::Gateway;

pub(crate) use quiver_proto::clock::now_ms;

/// The console of one edge.
pub(crate) struct Console {
    gateway: Arc<Gateway>,
    sessions: session::Sessions,
    sign_ins: sign_in_limit::SignInLimits,
    hosts: Arc<[String]>,
    link: Option<ConsoleLink>,
    secure_cookie: bool,
}

/// The `/console` routes, answering for `gateway`; requests whose `Host`
/// is not among `hosts` are refused (DNS rebinding).
pub(crate) fn routes(gateway: Arc<Gateway>, hosts: Arc<[String]>) -> Router {
    let config = gateway.config().console.clone();
    if !config.enabled {
        return Router::new();
    }
    let secure_cookie = config
        .secure_cookie
        .unwrap_or(gateway.config().tls.is_some());
    let console = Arc::new(Console {
        link: gateway.console_link().cloned(),
        sessions: session::Sessions::new(Duration::from_secs(
            config.idle_minutes.clamp(1, 7 * 24 * 60) * 60,
        )),
        sign_ins: sign_in_limit::SignInLimits::new(),
        hosts,
        secure_cookie,
        gateway: gateway.clone(),
    });
    let body_limit = gateway.config().max_body_bytes;
    let api = Router::new()
        .route(
            "/session",
            post(api::sign_in).get(api::me).delete(api::sign_out),
        )
        .route("/servers", get(tenant::servers))
        .route("/tools", get(tenant::tools))
        .route("/tool", get(tenant::tool))
        .route("/execute", post(tenant::execute))
        .route("/call", post(apps::call))
        .route("/app/view", get(apps::view_html))
        .route("/app/call", post(apps::view_call))
        .route("/calls", get(tenant::calls))
        .route("/keys", get(tenant::keys).post(tenant::issue_key))
        .route("/keys/revoke", post(tenant::revoke_key))
        .route("/usage", get(tenant::usage))
        .route("/audit", get(tenant::audit))
        .route("/findings", get(tenant::findings))
        .route("/op/tenants", get(operator::tenants))
        .route("/op/upstreams", get(operator::upstreams))
        .route("/op/drift", get(operator::drift))
        .route("/op/approve", post(operator::approve))
        .route("/op/findings", get(operator::findings))
        .route("/op/cluster", get(operator::cluster))
        .route("/op/grants", get(operator::grants))
        .route("/op/authorize", post(operator::authorize))
        .route("/op/usage", get(operator::usage))
        .route("/op/audit", get(operator::audit))
        .fallback(api::not_found)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(console.clone());
    Router::new()
        .nest("/console/api", api)
        .merge(assets::routes())
        .layer(axum::middleware::from_fn_with_state(console, api::guard))
}
