//! The console as an MCP Apps host. A tool's page calls the tool for the
//! signed-in tenant (`POST /console/api/call`), and when the tool links an
//! app's view the page renders it: the view's HTML comes from
//! `GET /console/api/app/view`, read from the tool's own server with the
//! tenant's view, and served under a Content-Security-Policy built from
//! what the resource declares (nothing else reachable; `sandbox
//! allow-scripts`, so the view runs in an opaque origin even if opened
//! directly), inside an iframe sandboxed the same way. The page relays the
//! view's messages; a `tools/call` from the view goes to
//! `POST /console/api/app/call` for the view's own server, which reaches
//! only the tools an app may call there, in the tenant's view, through the
//! same checks, limits and audit as any call.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use base64::Engine;
use quiver_contract::{CallOptions, CallOrigin, forwarded};
use quiver_proto::apps::APP_MIME_TYPE;
use quiver_view::{ToolView, ViewTool};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    Console,
    api::{Answer, ApiError},
};
use crate::modes::call_checked;

/// The most bytes of HTML one view may have.
const MAX_VIEW_BYTES: usize = 4 * 1024 * 1024;

/// The most origins one CSP directive takes from a resource.
const MAX_DOMAINS: usize = 32;

/// A tool call from the console.
#[derive(Deserialize)]
pub(crate) struct ToolCallBody {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// A view's tool call, relayed by the page for the view's server.
#[derive(Deserialize)]
pub(crate) struct ViewCallBody {
    server: String,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// The view to render.
#[derive(Deserialize)]
pub(crate) struct ViewQuery {
    server: String,
    uri: String,
}

/// `POST /console/api/call`: calls a tool of the tenant's view, as
/// `tools/call` in passthrough does; the answer names the app's view when
/// the tool links one.
pub(crate) async fn call(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(body): Json<ToolCallBody>,
) -> Answer {
    let (principal, view) = console.tenant(&method, &headers).await?;
    let Some(tool) = view.by_exposed(&body.name) else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!(
                "no tool `{}` in your view",
                quiver_view::suggest::echoed(&body.name)
            ),
        ));
    };
    let origin = console.gateway.origin_of(&principal);
    let result = run(
        &console,
        &view,
        &principal.tenant,
        &origin,
        tool,
        body.arguments,
    )
    .await?;
    let app = tool
        .tool
        .def
        .app_resource()
        .map(|uri| json!({"server": tool.tool.id.server, "uri": uri}));
    Ok(Json(json!({"result": result, "app": app})))
}

/// `POST /console/api/app/call`: a view's `tools/call`, for the view's own
/// server only, and only of a tool an app may call there.
pub(crate) async fn view_call(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Json(body): Json<ViewCallBody>,
) -> Answer {
    let (principal, view) = console.tenant(&method, &headers).await?;
    let Some(tool) = view.app_call_by_id(&body.server, &body.name) else {
        return Err(ApiError::forbidden(format!(
            "this view may not call `{}`: a view calls only the tools of its own server `{}` that apps may call, in your view",
            quiver_view::suggest::echoed(&body.name),
            quiver_view::suggest::echoed(&body.server),
        )));
    };
    let origin = CallOrigin {
        from_app: true,
        ..console.gateway.origin_of(&principal)
    };
    let result = run(
        &console,
        &view,
        &principal.tenant,
        &origin,
        tool,
        body.arguments,
    )
    .await?;
    Ok(Json(result))
}

/// One checked call; the `CallToolResult` as JSON.
async fn run(
    console: &Console,
    view: &ToolView,
    tenant: &str,
    origin: &CallOrigin,
    tool: ViewTool<'_>,
    arguments: Option<Value>,
) -> Result<Value, ApiError> {
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let options = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let sent = arguments.unwrap_or(Value::Null);
    let dispatch = console.gateway.dispatch().as_ref();
    match call_checked(dispatch, view, tenant, origin, tool, sent, options).await {
        Ok(Ok(result)) => serde_json::to_value(result)
            .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, format!("unreadable result: {e}"))),
        Ok(Err(error)) => Err(ApiError(StatusCode::BAD_GATEWAY, error.message.to_string())),
        Err(errors) => Err(ApiError::bad(errors.message(&tool.tool.exposed_name))),
    }
}

/// `GET /console/api/app/view?server=&uri=`: the HTML of the view a tool of
/// the tenant's view links, under the CSP its resource declares.
pub(crate) async fn view_html(
    State(console): State<Arc<Console>>,
    method: Method,
    headers: HeaderMap,
    Query(query): Query<ViewQuery>,
) -> Result<Response, ApiError> {
    let (_, view) = console.tenant(&method, &headers).await?;
    let linked = view
        .iter()
        .any(|t| t.tool.id.server == query.server && t.tool.def.app_resource() == Some(&query.uri));
    if !linked {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!(
                "no tool of server `{}` in your view links the view `{}`",
                quiver_view::suggest::echoed(&query.server),
                quiver_view::suggest::echoed(&query.uri)
            ),
        ));
    }
    let dispatch = console.gateway.dispatch().as_ref();
    let read = forwarded::send(
        dispatch,
        &query.server,
        "resources/read",
        json!({"uri": query.uri}),
    )
    .await
    .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, e.message.to_string()))?;
    let (html, meta) = view_content(&read, &query.uri)?;
    // The content's own metadata first; the resource's listing entry, as
    // the extension allows, when the content carries none.
    let listed = match meta.and_then(|m| m.pointer("/ui")) {
        Some(_) => None,
        None => listed_meta(dispatch, &query.server, &query.uri).await,
    };
    let csp = view_csp(
        meta.and_then(|m| m.pointer("/ui/csp"))
            .or_else(|| listed.as_ref().and_then(|m| m.pointer("/ui/csp"))),
    );
    let mut response = html.into_response();
    let set = response.headers_mut();
    set.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    let csp = HeaderValue::from_str(&csp)
        .map_err(|_| ApiError(StatusCode::BAD_GATEWAY, "unusable CSP".into()))?;
    set.insert(header::CONTENT_SECURITY_POLICY, csp);
    set.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    Ok(response)
}

/// The `_meta` of `uri`'s entry in its server's `resources/list`, if any
/// (a server that cannot list gives none: the view gets the strictest
/// policy).
async fn listed_meta(
    dispatch: &dyn quiver_contract::Dispatch,
    server: &str,
    uri: &str,
) -> Option<Value> {
    let listed = forwarded::list_from(dispatch, server, "resources/list", "resources")
        .await
        .ok()?;
    let mut entry = listed
        .into_iter()
        .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri))?;
    entry.get_mut("_meta").map(Value::take)
}

/// The HTML of `uri` in a `resources/read` result, and its `_meta`.
fn view_content<'a>(read: &'a Value, uri: &str) -> Result<(String, Option<&'a Value>), ApiError> {
    let unusable = |why: &str| {
        ApiError(
            StatusCode::BAD_GATEWAY,
            format!("the view `{}` {why}", quiver_view::suggest::echoed(uri)),
        )
    };
    let contents = read.get("contents").and_then(Value::as_array);
    let content = contents
        .into_iter()
        .flatten()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| contents.and_then(|c| c.first()))
        .ok_or_else(|| unusable("came back empty"))?;
    let mime = content
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !mime.eq_ignore_ascii_case(APP_MIME_TYPE) {
        return Err(unusable(&format!(
            "is `{}`, not `{APP_MIME_TYPE}`",
            quiver_view::suggest::echoed(mime)
        )));
    }
    let html = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, Some(Value::String(blob))) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|_| unusable("is not base64"))?;
            String::from_utf8(bytes).map_err(|_| unusable("is not UTF-8"))?
        }
        _ => return Err(unusable("has no text")),
    };
    if html.len() > MAX_VIEW_BYTES {
        return Err(unusable(&format!("is over {MAX_VIEW_BYTES} bytes")));
    }
    Ok((html, content.get("_meta")))
}

/// The Content-Security-Policy of a view whose resource declares `csp`
/// (`_meta.ui.csp`): inline script and style of its own, and from elsewhere
/// only the origins it names, each checked to be an origin (a scheme, a
/// host or `*.`-prefixed host, a port) so that no value can add a
/// directive. Nothing declared: nothing reachable.
pub(crate) fn view_csp(csp: Option<&Value>) -> String {
    let origins = |key: &str| -> Vec<&str> {
        csp.and_then(|c| c.get(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|o| is_origin(o))
            .take(MAX_DOMAINS)
            .collect()
    };
    let list = |fixed: &str, extra: &[&str], empty: &str| {
        let mut parts: Vec<&str> = fixed.split_whitespace().collect();
        parts.extend(extra);
        if parts.is_empty() {
            empty.to_string()
        } else {
            parts.join(" ")
        }
    };
    let resources = origins("resourceDomains");
    let connect = origins("connectDomains");
    let frames = origins("frameDomains");
    let base = origins("baseUriDomains");
    [
        "sandbox allow-scripts".to_string(),
        "default-src 'none'".to_string(),
        format!("script-src {}", list("'unsafe-inline'", &resources, "")),
        format!("style-src {}", list("'unsafe-inline'", &resources, "")),
        format!("img-src {}", list("data:", &resources, "")),
        format!("font-src {}", list("data:", &resources, "")),
        format!("media-src {}", list("data:", &resources, "")),
        format!("connect-src {}", list("", &connect, "'none'")),
        format!("frame-src {}", list("", &frames, "'none'")),
        format!("base-uri {}", list("", &base, "'none'")),
        "form-action 'none'".to_string(),
        "frame-ancestors 'self'".to_string(),
    ]
    .join("; ")
}

/// Whether `text` is an origin a CSP source list may name: `https://` or
/// `wss://` (or `http://`/`ws://`), a host (letters, digits, `-`, `.`,
/// optionally starting `*.`), an optional port; nothing else.
fn is_origin(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "https" | "http" | "wss" | "ws") {
        return false;
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let host = host.strip_prefix("*.").unwrap_or(host);
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()));
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_that_declares_nothing_reaches_nothing() {
        let csp = view_csp(None);
        assert!(
            csp.starts_with("sandbox allow-scripts; default-src 'none'"),
            "{csp}"
        );
        assert!(csp.contains("connect-src 'none'"), "{csp}");
        assert!(csp.contains("frame-src 'none'"), "{csp}");
        assert!(csp.contains("script-src 'unsafe-inline';"), "{csp}");
    }

    #[test]
    fn declared_origins_are_added_and_anything_else_is_dropped() {
        let declared = json!({
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example.com", "https://x.com; script-src *", "'unsafe-eval'", "*", "javascript:alert(1)"],
            "frameDomains": ["https://player.example.com/path"],
        });
        let csp = view_csp(Some(&declared));
        assert!(
            csp.contains("connect-src https://api.example.com wss://live.example.com:8443;"),
            "{csp}"
        );
        assert!(
            csp.contains("script-src 'unsafe-inline' https://*.cdn.example.com;"),
            "{csp}"
        );
        assert!(
            !csp.contains("unsafe-eval") && !csp.contains("javascript:"),
            "{csp}"
        );
        assert_eq!(csp.matches("script-src").count(), 1, "{csp}");
        assert!(
            csp.contains("frame-src 'none'"),
            "a path is not an origin: {csp}"
        );
    }

    #[test]
    fn only_the_apps_mime_type_is_rendered() {
        let read = json!({"contents": [{"uri": "ui://a/v.html", "mimeType": "text/html", "text": "<p>x</p>"}]});
        assert!(view_content(&read, "ui://a/v.html").is_err());
        let blob = base64::engine::general_purpose::STANDARD.encode("<p>hi</p>");
        let read = json!({"contents": [{"uri": "ui://a/v.html", "mimeType": APP_MIME_TYPE, "blob": blob, "_meta": {"ui": {}}}]});
        let (html, meta) = view_content(&read, "ui://a/v.html").unwrap();
        assert_eq!(html, "<p>hi</p>");
        assert!(meta.is_some());
    }
}
