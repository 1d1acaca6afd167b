//! The tenant's console API: its servers and tools (paged, and searched as
//! the model searches them), a tool's TypeScript declaration, the script
//! playground, its keys, usage, audit and findings. The tenant is always
//! the signed-in one; nothing a page sends names another.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderMap, Method, StatusCode},
};
use quiver_admin::{
    Committed, FindingsReport, IssuedKey, KeyRequester, UsageReport, audit::AuditQuery,
};
use quiver_contract::{ExecuteRequest, ScriptOutcome};
use quiver_proto::audit::{AuditKind, AuditRecord};
use quiver_view::{
    redact::{redact, redact_for_caller},
    search_telemetry::SearchSurface,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Console,
    api::{Answer, ApiError},
};
use crate::auth::Credential;

/// Tools on one page, at most.
const MAX_PAGE: usize = 200;

/// Search answers, at most.
const MAX_SEARCH: usize = 50;

/// Longest description sent in a list (the whole one comes with the tool).
const LIST_DESCRIPTION: usize = 240;

/// Audit records fetched for the audit view and its charts.
const AUDIT_LIMIT: u32 = 1_000;

/// `GET /console/api/servers`: the servers the tenant sees, with how many
/// of their tools.
pub(crate) async fn servers(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer {
    let (_, view) = console.tenant(&method, &headers).await?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in view.iter() {
        *counts.entry(tool.tool.id.server.as_str()).or_default() += 1;
    }
    let servers: Vec<Value> = counts
        .into_iter()
        .map(|(server, tools)| json!({ "server": server, "tools": tools }))
        .collect();
    Ok(Json(json!({ "servers": servers })))
}

/// The query of `GET /console/api/tools`.
#[derive(Deserialize)]
pub(crate) struct ToolsQuery {
    /// A search, ranked as the model's search ranks it.
    #[serde(default)]
    q: String,
    /// Only this server's tools (listing only).
    #[serde(default)]
    server: String,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    limit: Option<usize>,
}

fn short(text: &str) -> String {
    match text.char_indices().nth(LIST_DESCRIPTION) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// `GET /console/api/tools?q=&server=&offset=&limit=`: a page of the
/// tenant's tools, or the search's answers for `q`.
pub(crate) async fn tools(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<ToolsQuery>,
) -> Answer {
    let (principal, view) = console.tenant(&method, &headers).await?;
    let limit = query.limit.unwrap_or(50).clamp(1, MAX_PAGE);
    if !query.q.trim().is_empty() {
        let hits = view.search_results(
            SearchSurface::Console,
            &principal.tenant,
            query.q.trim(),
            limit.min(MAX_SEARCH),
        );
        let tools: Vec<Value> = hits
            .into_iter()
            .map(|(tool, hit)| {
                json!({
                    "name": hit.name,
                    "server": hit.server,
                    "tool": hit.tool,
                    "score": hit.score,
                    "description": short(&tool.tool.def.description),
                    "signature": hit.signature,
                })
            })
            .collect();
        return Ok(Json(
            json!({ "total": tools.len(), "offset": 0, "search": true, "tools": tools }),
        ));
    }
    let server = query.server.trim();
    let matching = view
        .iter()
        .filter(|t| server.is_empty() || t.tool.id.server == server);
    let mut total = 0;
    let mut tools = Vec::new();
    for tool in matching {
        if total >= query.offset && tools.len() < limit {
            tools.push(json!({
                "name": tool.tool.exposed_name,
                "server": tool.tool.id.server,
                "tool": tool.tool.id.tool,
                "description": short(&tool.tool.def.description),
                "signature": tool.tool.stub.signature,
            }));
        }
        total += 1;
    }
    Ok(Json(
        json!({ "total": total, "offset": query.offset, "search": false, "tools": tools }),
    ))
}

/// The query of `GET /console/api/tool`.
#[derive(Deserialize)]
pub(crate) struct ToolQuery {
    name: String,
}

/// `GET /console/api/tool?name=`: one tool with its TypeScript declaration
/// and input schema (as `describe` gives them).
pub(crate) async fn tool(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<ToolQuery>,
) -> Answer {
    let (_, view) = console.tenant(&method, &headers).await?;
    let Some(tool) = view.resolve(&query.name) else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!(
                "no tool `{}` in your view",
                quiver_view::suggest::echoed(&query.name)
            ),
        ));
    };
    // A person reading a declaration teaches search nothing (and a GET
    // changes nothing).
    Ok(Json(json!({
        "name": tool.tool.exposed_name,
        "server": tool.tool.id.server,
        "tool": tool.tool.id.tool,
        "description": tool.tool.def.description,
        "declaration": tool.tool.stub.declaration,
        "input_schema": tool.tool.def.input_schema,
        "app": tool.tool.def.app_resource(),
    })))
}

/// A script to run.
#[derive(Deserialize)]
pub(crate) struct Script {
    code: String,
}

/// `POST /console/api/execute`: runs a script on the tenant's view, as the
/// code mode's `execute` runs it (same executor, limits and audit).
pub(crate) async fn execute(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(script): Json<Script>,
) -> Answer {
    let (principal, _) = console.tenant(&method, &headers).await?;
    let Some(scripts) = console.gateway.scripts().cloned() else {
        return Err(ApiError::forbidden("this edge runs no scripts"));
    };
    if script.code.trim().is_empty() {
        return Err(ApiError::bad(
            "write a script first, e.g. `return await tools.list()`",
        ));
    }
    let started_ms = super::now_ms();
    let started = Instant::now();
    let session = format!("console-{}", uuid::Uuid::new_v4().simple());
    // The page renders the views of the app tools the script called.
    let request = ExecuteRequest::new(&*principal.tenant, session, script.code.as_str())
        .from_origin(console.gateway.origin_of(&principal))
        .keeping_app_views();
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let outcome = scripts.execute(request, cancel, None).await;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let digest = quiver_proto::audit::script_digest(&script.code);
    let answer = match outcome {
        Ok(ScriptOutcome {
            result,
            error,
            logs,
            truncated,
            app_views,
        }) => json!({
            "result": result,
            // What the script itself wrote (a path, an id) stays; the rest
            // is redacted as code mode's `execute` redacts it.
            "error": error.map(|e| json!({
                "kind": e.kind,
                "message": redact_for_caller(&e.message, &Value::String(script.code.clone())),
                "line": e.line,
            })),
            "logs": logs,
            "truncated": truncated,
            "app_views": app_views,
        }),
        Err(e) => json!({
            "result": null,
            "error": { "kind": "unavailable", "message": redact(&e.to_string()), "line": null },
            "logs": [],
            "truncated": false,
        }),
    };
    let mut answer = answer;
    answer["script_sha256"] = json!(digest);
    answer["started_ms"] = json!(started_ms);
    answer["elapsed_ms"] = json!(elapsed_ms);
    Ok(Json(answer))
}

/// The query of `GET /console/api/calls`.
#[derive(Deserialize)]
pub(crate) struct CallsQuery {
    script: String,
    since: u64,
}

/// `GET /console/api/calls?script=&since=`: the calls a playground run
/// made, from the audit log (records arrive there within a couple of
/// seconds of the run).
pub(crate) async fn calls(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<CallsQuery>,
) -> Answer<Calls> {
    let (principal, _) = console.tenant(&method, &headers).await?;
    let records = tenant_audit(
        &console,
        &principal.tenant,
        Some(query.since.saturating_sub(1_000)),
    )
    .await?;
    let caller = principal.who();
    let calls = records
        .into_iter()
        .filter(|r| {
            r.kind == AuditKind::Call
                && r.caller == caller
                && r.script_sha256.as_deref() == Some(query.script.as_str())
        })
        .collect();
    Ok(Json(Calls { calls }))
}

/// The calls of one playground run.
#[derive(Serialize)]
pub(crate) struct Calls {
    calls: Vec<AuditRecord>,
}

/// The tenant's audit records since `since_ms`.
async fn tenant_audit(
    console: &Console,
    tenant: &str,
    since_ms: Option<u64>,
) -> Result<Vec<AuditRecord>, ApiError> {
    let query = AuditQuery {
        tenant: Some(tenant.to_string()),
        since_ms,
        limit: Some(AUDIT_LIMIT),
    };
    Ok(console.control_plane()?.audit(query).await?)
}

/// One of the tenant's keys (never the key or its hash).
#[derive(Serialize)]
pub(crate) struct KeyRow {
    key_id: String,
    created_ms: u64,
    /// Whether this session signed in with it.
    current: bool,
}

/// The tenant's keys, and whether it may issue and revoke them here.
#[derive(Serialize)]
pub(crate) struct Keys {
    keys: Vec<KeyRow>,
    self_service: bool,
}

/// `GET /console/api/keys`: the tenant's key ids (never a key or a hash),
/// the one this session uses marked.
pub(crate) async fn keys(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<Keys> {
    let (principal, _) = console.tenant(&method, &headers).await?;
    let current = match &principal.credential {
        Credential::ApiKey { key_id } => Some(key_id.clone()),
        _ => None,
    };
    let views = console.gateway.views();
    let tenant = views.tenants().get(&principal.tenant);
    let keys = tenant
        .into_iter()
        .flat_map(|t| t.keys.iter())
        .map(|(id, key)| KeyRow {
            key_id: id.clone(),
            created_ms: key.created_ms,
            current: current.as_deref() == Some(id.as_str()),
        })
        .collect();
    Ok(Json(Keys {
        keys,
        self_service: tenant.is_some_and(|t| t.self_service_keys)
            && console.link.as_ref().is_some(),
    }))
}

/// The signed-in tenant, when its operator lets it manage its own keys.
async fn key_manager(
    console: &Console,
    method: &Method,
    headers: &HeaderMap,
) -> Result<crate::auth::Principal, ApiError> {
    let (principal, _) = console.tenant(method, headers).await?;
    let allowed = console
        .gateway
        .views()
        .tenants()
        .get(&principal.tenant)
        .is_some_and(|t| t.self_service_keys);
    if !allowed || principal.is_anonymous() {
        return Err(ApiError::forbidden(format!(
            "your operator manages your keys; ask them, or to let you: quiver ctl tenant update {} --self-service-keys true",
            principal.tenant
        )));
    }
    // A short-lived, scoped access token must not mint a key that outlives it.
    if !matches!(principal.credential, Credential::ApiKey { .. }) {
        return Err(ApiError::forbidden(
            "sign in with one of your API keys to issue or revoke keys (an access token cannot mint a key that outlives it)",
        ));
    }
    Ok(principal)
}

/// `POST /console/api/keys`: issues a key for the tenant (shown once).
pub(crate) async fn issue_key(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<IssuedKey> {
    let principal = key_manager(&console, &method, &headers).await?;
    let issued = console
        .control_plane()?
        .issue_key(principal.tenant.to_string(), KeyRequester::Tenant)
        .await?;
    key_shown(&console, &principal.tenant, &issued.key_id, true).await;
    Ok(Json(issued))
}

/// A key to revoke.
#[derive(Deserialize)]
pub(crate) struct Revoke {
    key_id: String,
}

/// What a change the console asked for became: the manifest version after
/// it and its place in the control plane's log.
#[derive(Serialize)]
pub(crate) struct Changed {
    manifest_version: u64,
    log_index: u64,
}

impl From<Committed> for Changed {
    fn from(committed: Committed) -> Changed {
        Changed {
            manifest_version: committed.manifest_version,
            log_index: committed.log_index,
        }
    }
}

/// `POST /console/api/keys/revoke`: revokes one of the tenant's keys (not
/// the one this session uses).
pub(crate) async fn revoke_key(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(revoke): Json<Revoke>,
) -> Answer<Changed> {
    let principal = key_manager(&console, &method, &headers).await?;
    if matches!(&principal.credential, Credential::ApiKey { key_id } if *key_id == revoke.key_id) {
        return Err(ApiError::bad(
            "this session uses that key: sign in with another key first, then revoke it",
        ));
    }
    let committed = console
        .control_plane()?
        .revoke_key(
            principal.tenant.to_string(),
            revoke.key_id.clone(),
            KeyRequester::Tenant,
        )
        .await?;
    key_shown(&console, &principal.tenant, &revoke.key_id, false).await;
    Ok(Json(Changed::from(committed)))
}

/// How long a key change waits for this edge's views to show it.
const KEY_CHANGE_SHOWN: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits, at most [`KEY_CHANGE_SHOWN`], until this edge's views hold
/// `tenant`'s key `key_id` (or no longer do, when `present` is false): the
/// change is committed when the control plane answers, and the key list the
/// page asks for next is read from the views, which follow the commit a
/// moment later.
async fn key_shown(console: &Console, tenant: &str, key_id: &str, present: bool) {
    let mut installed = console.gateway.views_installed();
    let shown = async {
        loop {
            installed.borrow_and_update();
            let views = console.gateway.views();
            let holds = views
                .tenants()
                .get(tenant)
                .is_some_and(|t| t.keys.contains_key(key_id));
            if holds == present || installed.changed().await.is_err() {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(KEY_CHANGE_SHOWN, shown).await;
}

/// The tenant's budget and spending with the limits that apply to it.
#[derive(Serialize)]
pub(crate) struct Usage {
    usage: UsageReport,
    rate_limit_per_minute: Option<u32>,
    tool_rate_limits: BTreeMap<String, u32>,
    prices: BTreeMap<String, f64>,
    calls_last_minute: usize,
}

/// `GET /console/api/usage`: budget and spending, and the limits that apply.
pub(crate) async fn usage(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<Usage> {
    let (principal, _) = console.tenant(&method, &headers).await?;
    let usage = console
        .control_plane()?
        .tenant_usage(principal.tenant.to_string())
        .await?;
    let views = console.gateway.views();
    let tenant = views.tenants().get(&principal.tenant);
    let minute_ago = super::now_ms().saturating_sub(60_000);
    let recent = tenant_audit(&console, &principal.tenant, Some(minute_ago)).await?;
    Ok(Json(Usage {
        usage,
        rate_limit_per_minute: tenant.and_then(|t| t.rate_limit_per_minute),
        tool_rate_limits: tenant
            .map(|t| t.tool_rate_limits.clone())
            .unwrap_or_default(),
        prices: tenant.map(|t| t.prices.clone()).unwrap_or_default(),
        calls_last_minute: recent.iter().filter(|r| r.kind == AuditKind::Call).count(),
    }))
}

/// The query of `GET /console/api/audit`.
#[derive(Deserialize)]
pub(crate) struct AuditFilter {
    /// Only records whose tool contains this.
    #[serde(default)]
    tool: String,
    /// Only this outcome (`ok`, `tool_error`, `error`, `refused`, …).
    #[serde(default)]
    outcome: String,
    /// Only `call`, `execute` or `task` records.
    #[serde(default)]
    kind: String,
    /// Only records at or after this time (ms since the epoch).
    #[serde(default)]
    since: Option<u64>,
}

impl AuditFilter {
    /// A filter of these fields.
    pub(crate) fn new(
        tool: String,
        outcome: String,
        kind: String,
        since: Option<u64>,
    ) -> AuditFilter {
        AuditFilter {
            tool,
            outcome,
            kind,
            since,
        }
    }

    /// What to ask the audit log for: `tenant`'s records (every tenant's
    /// when `None`) since the time asked for.
    pub(crate) fn query(&self, tenant: Option<String>) -> AuditQuery {
        AuditQuery {
            tenant,
            since_ms: self.since,
            limit: Some(AUDIT_LIMIT),
        }
    }

    /// Whether `record` passes.
    fn keeps(&self, record: &AuditRecord) -> bool {
        (self.tool.is_empty()
            || record
                .tool
                .as_deref()
                .is_some_and(|t| t.contains(&self.tool)))
            && (self.outcome.is_empty() || record.outcome.as_str() == self.outcome)
            && (self.kind.is_empty() || record.kind.as_str() == self.kind)
    }
}

/// Audit records a filter kept, newest first.
#[derive(Serialize)]
pub(crate) struct Records {
    records: Vec<AuditRecord>,
}

impl Records {
    /// The records of `records` (oldest first) that `filter` keeps, newest first.
    pub(crate) fn kept(records: Vec<AuditRecord>, filter: &AuditFilter) -> Records {
        let mut records: Vec<AuditRecord> =
            records.into_iter().filter(|r| filter.keeps(r)).collect();
        records.reverse();
        Records { records }
    }
}

/// `GET /console/api/audit?tool=&outcome=&kind=&since=`: the tenant's audit
/// records, newest first.
pub(crate) async fn audit(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(filter): Query<AuditFilter>,
) -> Answer<Records> {
    let (principal, _) = console.tenant(&method, &headers).await?;
    let records = tenant_audit(&console, &principal.tenant, filter.since).await?;
    Ok(Json(Records::kept(records, &filter)))
}

/// `GET /console/api/findings`: what screening found in the tools the
/// tenant sees.
pub(crate) async fn findings(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
) -> Answer<FindingsReport> {
    let (_, view) = console.tenant(&method, &headers).await?;
    let report = console.control_plane()?.findings(None).await?;
    let seen: std::collections::HashSet<(&str, &str)> = view
        .iter()
        .map(|t| (t.tool.id.server.as_str(), t.tool.id.tool.as_str()))
        .collect();
    let tools = report
        .tools
        .into_iter()
        .filter(|t| seen.contains(&(t.upstream.as_str(), t.tool.as_str())))
        .collect();
    Ok(Json(FindingsReport { tools }))
}
