//! The rest of MCP beyond tools: resources (list, templates, read, subscribe),
//! prompts (namespaced like tools) and completion, forwarded over a
//! [`Dispatch`] to the upstreams that declared them. Only servers in the
//! caller's view are asked. Every mode of the edge serves them this way, and
//! a code-mode script's `resources` reads through the same functions.

use crate::{CallOptions, Dispatch, UpstreamError};
use quiver_proto::{manifest::ManifestServer, naming::assign_exposed_names};
use rmcp::{ErrorData, model::ClientRequest};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use quiver_view::{ToolView, redact::redact_for_caller};

/// Most pages followed when listing from one upstream.
const MAX_PAGES: usize = 100;

fn client_request(method: &str, params: Value) -> Result<ClientRequest, ErrorData> {
    serde_json::from_value(json!({"method": method, "params": params}))
        .map_err(|e| ErrorData::internal_error(format!("cannot build {method} request: {e}"), None))
}

/// An upstream's failure as the caller hears it: redacted, keeping what the
/// caller itself sent in `params` (the URI it asked for, say).
fn upstream_error(e: UpstreamError, params: &Value) -> ErrorData {
    match e {
        UpstreamError::Remote {
            code,
            message,
            data,
            ..
        } => ErrorData::new(
            rmcp::model::ErrorCode(code),
            redact_for_caller(&message, params),
            data.map(|d| *d),
        ),
        other => ErrorData::internal_error(redact_for_caller(&other.to_string(), params), None),
    }
}

/// Converts an upstream result into the type a handler returns.
pub fn convert<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    // An upstream of an older revision sends no `resultType`; a complete
    // result says so (rmcp strips it again for clients of older revisions).
    if let Value::Object(result) = &mut value {
        result
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
    }
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("unexpected upstream result: {e}"), None))
}

/// Servers of the view that declared `feature`.
fn servers_with<'a>(
    view: &'a ToolView,
    feature: &'a str,
) -> impl Iterator<Item = &'a ManifestServer> + 'a {
    view.servers()
        .filter(move |s| s.features.iter().any(|f| f == feature))
}

/// Sends `method` with `params` to `server` and returns the result as JSON.
pub async fn send(
    dispatch: &dyn Dispatch,
    server: &str,
    method: &str,
    params: Value,
) -> Result<Value, ErrorData> {
    let request = client_request(method, params.clone())?;
    let result = dispatch
        .request(server, request, CallOptions::default())
        .await
        .map_err(|e| upstream_error(e, &params))?;
    serde_json::to_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// Every item under `key` of a paginated list from one server.
pub async fn list_from(
    dispatch: &dyn Dispatch,
    server: &str,
    method: &str,
    key: &str,
) -> Result<Vec<Value>, ErrorData> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = send(dispatch, server, method, params).await?;
        items.extend(
            page.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    Ok(items)
}

/// Items under `key` from every server of the view with `feature`, tagged by server.
/// An upstream that fails is skipped (and logged), never failing the whole list.
async fn list_all(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    feature: &str,
    method: &str,
    key: &str,
) -> Vec<(String, Value)> {
    let mut all = Vec::new();
    for server in servers_with(view, feature) {
        match list_from(dispatch, &server.id, method, key).await {
            Ok(items) => all.extend(items.into_iter().map(|item| (server.id.clone(), item))),
            Err(e) => tracing::warn!(upstream = %server.id, "{method} failed: {}", e.message),
        }
    }
    all
}

/// `resources/list` or `resources/templates/list` across upstreams.
pub async fn list_resources(dispatch: &dyn Dispatch, view: &ToolView, templates: bool) -> Value {
    let (method, key) = if templates {
        ("resources/templates/list", "resourceTemplates")
    } else {
        ("resources/list", "resources")
    };
    let items: Vec<Value> = list_all(dispatch, view, "resources", method, key)
        .await
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    json!({ key: items })
}

/// Whether `uri` matches an RFC 6570 template (each `{…}` expression matches one or more characters).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        match rest[open..].find('}') {
            Some(close) => {
                pattern.push_str(".+?");
                rest = &rest[open + close + 1..];
            }
            None => {
                pattern.push_str(&regex::escape(&rest[open..]));
                rest = "";
            }
        }
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(uri))
}

/// The upstream that serves `uri`: the only one with resources, or the one that
/// lists it, or the one with a matching template.
pub async fn route_uri(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    uri: &str,
) -> Result<String, ErrorData> {
    let candidates: Vec<&ManifestServer> = servers_with(view, "resources").collect();
    match candidates.as_slice() {
        [] => {
            return Err(ErrorData::resource_not_found(
                format!("no upstream serves resources; `{uri}` is unknown"),
                None,
            ));
        }
        [only] => return Ok(only.id.clone()),
        _ => {}
    }
    for server in &candidates {
        if let Ok(items) = list_from(dispatch, &server.id, "resources/list", "resources").await
            && items
                .iter()
                .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
        {
            return Ok(server.id.clone());
        }
    }
    for server in &candidates {
        if let Ok(items) = list_from(
            dispatch,
            &server.id,
            "resources/templates/list",
            "resourceTemplates",
        )
        .await
            && items
                .iter()
                .filter_map(|t| t.get("uriTemplate").and_then(Value::as_str))
                .any(|t| template_matches(t, uri))
        {
            return Ok(server.id.clone());
        }
    }
    Err(ErrorData::resource_not_found(
        format!("no upstream lists resource `{uri}`; call resources/list"),
        None,
    ))
}

/// What a code-mode script's `resources.read(uri)` gets: the `contents` of
/// `resources/read` at the upstream of `view` that serves `uri`.
pub async fn read_resource_contents(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    uri: &str,
) -> Result<Value, ErrorData> {
    let server = route_uri(dispatch, view, uri).await?;
    let mut result = send(dispatch, &server, "resources/read", json!({"uri": uri})).await?;
    Ok(result
        .get_mut("contents")
        .map(Value::take)
        .unwrap_or_else(|| Value::Array(Vec::new())))
}

/// Prompts of every upstream with their exposed names: `(exposed, server, prompt JSON)`.
async fn named_prompts(dispatch: &dyn Dispatch, view: &ToolView) -> Vec<(String, String, Value)> {
    let mut prompts = list_all(dispatch, view, "prompts", "prompts/list", "prompts").await;
    prompts.sort_by(|a, b| {
        (a.0.as_str(), a.1.get("name").and_then(Value::as_str))
            .cmp(&(b.0.as_str(), b.1.get("name").and_then(Value::as_str)))
    });
    let namespaces: Vec<String> = prompts
        .iter()
        .map(|(server, _)| {
            view.server(server)
                .map(|s| s.namespace.clone())
                .unwrap_or_default()
        })
        .collect();
    let names: Vec<String> = prompts
        .iter()
        .map(|(_, p)| {
            p.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let pairs: Vec<(&str, &str)> = namespaces
        .iter()
        .zip(&names)
        .map(|(n, p)| (n.as_str(), p.as_str()))
        .collect();
    let exposed = assign_exposed_names(&pairs);
    prompts
        .into_iter()
        .zip(exposed)
        .map(|((server, prompt), name)| (name, server, prompt))
        .collect()
}

/// `prompts/list` across upstreams, names namespaced.
pub async fn list_prompts(dispatch: &dyn Dispatch, view: &ToolView) -> Value {
    let prompts: Vec<Value> = named_prompts(dispatch, view)
        .await
        .into_iter()
        .map(|(name, _, mut prompt)| {
            prompt["name"] = Value::String(name);
            prompt
        })
        .collect();
    json!({"prompts": prompts})
}

/// The upstream and original name of the prompt exposed as `name`.
pub async fn route_prompt(
    dispatch: &dyn Dispatch,
    view: &ToolView,
    name: &str,
) -> Result<(String, String), ErrorData> {
    let prompts = named_prompts(dispatch, view).await;
    if let Some((_, server, prompt)) = prompts.iter().find(|(exposed, _, _)| exposed == name) {
        let original = prompt
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_string();
        return Ok((server.clone(), original));
    }
    let suggestions =
        quiver_view::suggest::closest(name, prompts.iter().map(|(n, _, _)| n.as_str()), 3);
    Err(ErrorData::invalid_params(
        quiver_view::suggest::unknown_tool_message(
            name,
            &suggestions,
            "call prompts/list for the available names",
        )
        .replace("tool", "prompt"),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_expanded_uris() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/123/data"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b.txt"));
    }
}
