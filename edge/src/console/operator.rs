//! The operator's console API: tenants and their usage and audit,
//! upstreams, drift and quarantined changes (with approve), findings,
//! grants and cluster health. Each answer is the control plane's, as
//! `quiver ctl -o json` prints it.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderMap, Method},
};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::{
    Console, ConsoleCall,
    api::{Answer, ApiError},
    tenant::{AuditFilter, filtered},
};

/// A read-only operator request answered by `call`.
async fn read(
    console: &Console,
    method: &Method,
    headers: &HeaderMap,
    call: ConsoleCall,
) -> Answer {
    console.operator(method, headers).await?;
    console.ask(call).await
}

/// The handler of a `GET` the operator makes that `call` answers as is
/// (`/op/tenants`, `/op/upstreams`, `/op/drift`, `/op/findings`,
/// `/op/cluster`, `/op/grants`).
pub(crate) fn reading(
    call: ConsoleCall,
) -> impl Fn(State<Arc<Console>>, Method, HeaderMap) -> BoxFuture<'static, Answer> + Clone {
    move |State(console), method, headers| {
        let call = call.clone();
        Box::pin(async move { read(&console, &method, &headers, call).await })
    }
}

/// Which tenant.
#[derive(Deserialize)]
pub(crate) struct TenantQuery {
    tenant: String,
}

/// `GET /console/api/op/usage?tenant=`.
pub(crate) async fn usage(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<TenantQuery>,
) -> Answer {
    read(
        &console,
        &method,
        &headers,
        ConsoleCall::Usage {
            tenant: query.tenant,
        },
    )
    .await
}

/// The query of `GET /console/api/op/audit`: [`AuditFilter`]'s fields and a
/// tenant (all when empty). Listed, not flattened: a flattened query would
/// read `since` as a string.
#[derive(Deserialize)]
pub(crate) struct OperatorAudit {
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    since: Option<u64>,
}

/// `GET /console/api/op/audit?tenant=&tool=&outcome=&kind=&since=`.
pub(crate) async fn audit(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<OperatorAudit>,
) -> Answer {
    console.operator(&method, &headers).await?;
    let filter = AuditFilter::new(query.tool, query.outcome, query.kind, query.since);
    let Json(answer) = console
        .ask(ConsoleCall::Audit {
            tenant: (!query.tenant.is_empty()).then_some(query.tenant.clone()),
            since_ms: filter.since(),
            limit: 1_000,
        })
        .await?;
    let records = answer.as_array().cloned().unwrap_or_default();
    Ok(Json(json!({ "records": filtered(records, &filter) })))
}

/// An approval.
#[derive(Deserialize)]
pub(crate) struct Approve {
    id: String,
    #[serde(default)]
    tool: Option<String>,
}

/// `POST /console/api/op/approve`: accepts an upstream's quarantined
/// changes (or serves one held-back tool), as `quiver ctl upstream approve`.
pub(crate) async fn approve(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(approve): Json<Approve>,
) -> Answer {
    console.operator(&method, &headers).await?;
    if approve.id.trim().is_empty() {
        return Err(ApiError::bad("name the upstream to approve"));
    }
    let tool = approve.tool.filter(|t| !t.trim().is_empty());
    console
        .ask(ConsoleCall::Approve {
            id: approve.id,
            tool,
        })
        .await
}

/// A grant to start.
#[derive(Deserialize)]
pub(crate) struct Authorize {
    upstream: String,
    tenant: String,
}

/// `POST /console/api/op/authorize`: the link a person opens to grant an
/// upstream behind OAuth to a tenant, as `quiver ctl upstream authorize`.
pub(crate) async fn authorize(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(grant): Json<Authorize>,
) -> Answer {
    console.operator(&method, &headers).await?;
    if grant.upstream.trim().is_empty() || grant.tenant.trim().is_empty() {
        return Err(ApiError::bad("name the upstream and the tenant"));
    }
    console
        .ask(ConsoleCall::Authorize {
            upstream: grant.upstream,
            tenant: grant.tenant,
        })
        .await
}
