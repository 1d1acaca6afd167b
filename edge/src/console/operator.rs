//! The operator's console API: tenants and their usage and audit,
//! upstreams, drift and quarantined changes (with approve), findings,
//! grants and cluster health. Each handler asks the control plane for one
//! typed answer and sends it (or the console's own shape of it) as JSON;
//! the types, not keys read back, decide what a page gets.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderMap, Method},
};
use quiver_admin::{
    AdminTransport, AuthorizationLink, ClusterStatus, DriftReport, FindingsReport, GrantSummary,
    PublicTenant, UpstreamSummary, UsageReport,
};
use serde::Deserialize;

use super::{
    Console,
    api::{Answer, ApiError},
    tenant::{AuditFilter, Changed, Records},
};

/// The control plane, once the request is the operator's.
async fn operator<'a>(
    console: &'a Console,
    method: &Method,
    headers: &HeaderMap,
) -> Result<&'a dyn AdminTransport, ApiError> {
    console.operator(method, headers).await?;
    console.control_plane()
}

/// `GET /console/api/op/tenants`: every tenant (key ids, never hashes).
pub(crate) async fn tenants(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<Vec<PublicTenant>> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.tenants().await?))
}

/// `GET /console/api/op/upstreams`: every upstream and its state.
pub(crate) async fn upstreams(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<Vec<UpstreamSummary>> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.upstreams().await?))
}

/// `GET /console/api/op/drift`: drift events and quarantined changes.
pub(crate) async fn drift(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<DriftReport> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.drift(None).await?))
}

/// `GET /console/api/op/findings`: what screening found in every upstream.
pub(crate) async fn findings(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<FindingsReport> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.findings(None).await?))
}

/// `GET /console/api/op/cluster`: members and every node's stub hash.
pub(crate) async fn cluster(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<ClusterStatus> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.cluster_status().await?))
}

/// `GET /console/api/op/grants`: tenants' OAuth grants (never a token).
pub(crate) async fn grants(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<Vec<GrantSummary>> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.grants(None).await?))
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
) -> Answer<UsageReport> {
    let control_plane = operator(&console, &method, &headers).await?;
    Ok(Json(control_plane.tenant_usage(query.tenant).await?))
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
) -> Answer<Records> {
    let control_plane = operator(&console, &method, &headers).await?;
    let filter = AuditFilter::new(query.tool, query.outcome, query.kind, query.since);
    let tenant = (!query.tenant.is_empty()).then_some(query.tenant);
    let records = control_plane.audit(filter.query(tenant)).await?;
    Ok(Json(Records::kept(records, &filter)))
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
) -> Answer<Changed> {
    let control_plane = operator(&console, &method, &headers).await?;
    if approve.id.trim().is_empty() {
        return Err(ApiError::bad("name the upstream to approve"));
    }
    let tool = approve.tool.filter(|t| !t.trim().is_empty());
    let committed = control_plane.approve(approve.id, tool).await?;
    Ok(Json(Changed::from(committed)))
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
) -> Answer<AuthorizationLink> {
    let control_plane = operator(&console, &method, &headers).await?;
    if grant.upstream.trim().is_empty() || grant.tenant.trim().is_empty() {
        return Err(ApiError::bad("name the upstream and the tenant"));
    }
    let link = control_plane
        .authorize(grant.upstream, grant.tenant, Vec::new())
        .await?;
    Ok(Json(link))
}
