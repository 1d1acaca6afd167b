//! The host side of a code-mode script over a tenant's view, for one session: every tool call is
//! resolved and validated against the session's view (hidden tools do not
//! exist here either), dispatched once, and its result turned into the value
//! the script sees. Errors are redacted before the script sees them.

use std::sync::Arc;

use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use quiver_contract::{
    AppView, CallOptions, CallOrigin, CallSink, Dispatch, MAX_APP_VIEW_RESULT_BYTES, MAX_APP_VIEWS,
    forwarded,
};
use quiver_telemetry::{instruments, quiver_span, spans};
use quiver_view::{
    SearchResult, ToolView, ViewTool,
    redact::redact_for_caller,
    search_telemetry::SearchSurface,
    suggest::{closest, unknown_tool_message},
};
use rmcp::model::CallToolResult;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::{
    ipc::HostError,
    pool::Owner,
    script::{ResourceOp, ScriptContext, StashOp},
    stash::{ReplicaError, ReplicaUnavailable, StashError, StashStore},
};

/// One execution's context.
pub struct ViewScriptContext {
    dispatch: Arc<dyn Dispatch>,
    stash: Arc<StashStore>,
    view: Arc<ToolView>,
    owner: Owner,
    /// The stash's key for the session: `tenant/session`.
    stash_key: String,
    cancel: CancellationToken,
    sink: Option<Arc<dyn CallSink>>,
    origin: CallOrigin,
    /// The execution's span, the parent of each tool call's span.
    span: tracing::Span,
    /// Whether the stash was loaded from the replica (the store has one);
    /// cleared when this process's copy was dropped, so it is read again.
    stash_loaded: tokio::sync::Mutex<bool>,
    /// The calls of tools that link an MCP App's view, when the request
    /// asked to keep them (`None`: not asked).
    app_views: Option<std::sync::Mutex<Vec<AppView>>>,
}

impl ViewScriptContext {
    /// A context over `view` for `owner`'s session; calls stop when `cancel` fires.
    pub fn new(
        dispatch: Arc<dyn Dispatch>,
        stash: Arc<StashStore>,
        view: Arc<ToolView>,
        owner: Owner,
        cancel: CancellationToken,
    ) -> ViewScriptContext {
        ViewScriptContext {
            dispatch,
            stash,
            view,
            stash_key: format!("{}/{}", owner.tenant, owner.session),
            owner,
            cancel,
            sink: None,
            origin: CallOrigin::default(),
            span: tracing::Span::none(),
            stash_loaded: tokio::sync::Mutex::new(false),
            app_views: None,
        }
    }

    /// Keeps the calls of tools that link an MCP App's view, with their
    /// results, when `keep` (see [`ViewScriptContext::take_app_views`]).
    pub fn keeping_app_views(mut self, keep: bool) -> ViewScriptContext {
        self.app_views = keep.then(Default::default);
        self
    }

    /// The app views kept so far (none unless asked to keep them).
    pub fn take_app_views(&self) -> Vec<AppView> {
        self.app_views
            .as_ref()
            .map(|kept| std::mem::take(&mut *kept.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    /// Keeps the call of `tool` with `args` that gave `result`, when asked
    /// to and the tool links a view: at most [`MAX_APP_VIEWS`], each result
    /// at most [`MAX_APP_VIEW_RESULT_BYTES`] of JSON.
    fn keep_app_view(&self, tool: ViewTool<'_>, args: &Value, result: &CallToolResult) {
        let (Some(kept), Some(uri)) = (&self.app_views, tool.tool.def.app_resource()) else {
            return;
        };
        let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= MAX_APP_VIEWS {
            return;
        }
        if serde_json::to_vec(result).map_or(usize::MAX, |json| json.len())
            > MAX_APP_VIEW_RESULT_BYTES
        {
            return;
        }
        let Ok(result) = serde_json::to_value(result) else {
            return;
        };
        kept.push(AppView {
            server: tool.tool.id.server.clone(),
            tool: tool.tool.exposed_name.clone(),
            uri: uri.to_string(),
            arguments: args.clone(),
            result,
        });
    }

    /// Makes every tool call of the script a child span of `span`, the
    /// execution's (the calls arrive over IPC, outside any caller's span).
    pub fn traced_by(mut self, span: tracing::Span) -> ViewScriptContext {
        self.span = span;
        self
    }

    /// Marks every call of the script as made by `origin` (its audit records
    /// name the caller, the edge and the script).
    pub fn made_by(mut self, origin: CallOrigin) -> ViewScriptContext {
        self.origin = origin;
        self
    }

    /// Relays what upstreams send during the script's tool calls (progress,
    /// logs, sampling and elicitation requests) to `sink`, the calling session.
    pub fn relaying_to(mut self, sink: Option<Arc<dyn CallSink>>) -> ViewScriptContext {
        self.sink = sink;
        self
    }

    fn unknown(&self, name: &str) -> HostError {
        // No tool name is this long: neither echo it back nor compare it
        // with every name (edit distance grows with its length).
        const LONGEST_NAME: usize = 256;
        if name.len() > LONGEST_NAME {
            return format!(
                "unknown tool: the name is {} bytes, and tool names are at most 64 characters; use search() to find tool names",
                name.len()
            )
            .into();
        }
        let suggestions = closest(name, self.view.exposed_names(), 3);
        unknown_tool_message(name, &suggestions, "use search() to find tool names").into()
    }
}

/// What a script receives from a tool result: structured content when present,
/// else the text parsed as JSON, else the text; several blocks become an array.
/// An error result's text is redacted, keeping what the script sent in
/// `arguments` (the path it asked for, say) so it can correct the call.
pub fn script_value(result: &CallToolResult, arguments: &Value) -> Result<Value, HostError> {
    let texts: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .map(|block| match block.get("text").and_then(Value::as_str) {
            Some(text) => text.to_string(),
            None => block.to_string(),
        })
        .collect();
    if result.is_error == Some(true) {
        return Err(redact_for_caller(&texts.join("\n"), arguments).into());
    }
    if let Some(structured) = &result.structured_content {
        return Ok(structured.clone());
    }
    let values: Vec<Value> = result
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .map(|block| match block.get("text").and_then(Value::as_str) {
            Some(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
            }
            None => block,
        })
        .collect();
    Ok(match values.len() {
        0 => Value::Null,
        1 => values.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(values),
    })
}

impl ScriptContext for ViewScriptContext {
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        self.view.names().script_names(server)
    }

    fn has_tool_name(&self, server: &str, tool: Option<&str>) -> bool {
        self.view.names().script_has(server, tool)
    }

    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let Some(tool) = self.view.resolve(&name) else {
                return Err(self.unknown(&name));
            };
            // A script's call without arguments reaches the upstream as `{}`.
            let args = if args.is_null() {
                Value::Object(Default::default())
            } else {
                args
            };
            let call = match self.view.prepare_call(&self.owner.tenant, tool, &args) {
                Ok(mut call) => {
                    call.origin = self.origin.clone();
                    call
                }
                Err(errors) => return Err(errors.message(&tool.tool.exposed_name).into()),
            };
            let options = CallOptions {
                timeout: None,
                cancel: self.cancel.clone(),
                sink: self.sink.clone(),
                input_responses: None,
            };
            let span = self
                .span
                .in_scope(|| quiver_span!("quiver.script.call_tool", "internal"));
            span.record("gen_ai.tool.name", tool.tool.exposed_name.as_str());
            span.record("quiver.tenant", self.owner.tenant.as_str());
            let outcome = self
                .dispatch
                .call_tool(call, options)
                .instrument(span.clone())
                .await;
            // A script's calls teach search as direct calls do.
            let succeeded = matches!(&outcome, Ok(r) if r.is_error != Some(true));
            self.view.record_call(&self.owner.tenant, tool, succeeded);
            match outcome {
                Ok(result) => {
                    if result.is_error == Some(true) {
                        spans::record_error(&span, "tool_error");
                    }
                    self.keep_app_view(tool, &args, &result);
                    script_value(&result, &args)
                }
                Err(e) => {
                    spans::record_error(&span, &e.kind());
                    Err(redact_for_caller(&e.to_string(), &args).into())
                }
            }
        })
    }

    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let results: Vec<SearchResult> = self
                .view
                .search_results(SearchSurface::Code, &self.owner.tenant, &query, limit)
                .into_iter()
                .map(|(_, hit)| hit)
                .collect();
            serde_json::to_value(results).map_err(|e| HostError::from(e.to_string()))
        })
    }

    fn describe(&self, name: String) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            match self.view.resolve(&name) {
                Some(t) => {
                    self.view.record_describe(&self.owner.tenant, t);
                    Ok(Value::String(t.tool.stub.declaration.clone()))
                }
                None => Err(self.unknown(&name)),
            }
        })
    }

    fn resources(&self, op: ResourceOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let dispatch = self.dispatch.as_ref();
            let answer = match op {
                ResourceOp::List => {
                    let mut listed = forwarded::list_resources(dispatch, &self.view, false).await;
                    Ok(listed
                        .get_mut("resources")
                        .map(Value::take)
                        .unwrap_or_else(|| Value::Array(Vec::new())))
                }
                ResourceOp::Read(uri) => {
                    tokio::select! {
                        read = forwarded::read_resource_contents(dispatch, &self.view, &uri) => read,
                        () = self.cancel.cancelled() => {
                            return Err("the script was stopped".into());
                        }
                    }
                }
            };
            // Already redacted for the caller (what it sent stays).
            answer.map_err(|e| HostError::from(e.message.into_owned()))
        })
    }

    fn stash(&self, op: StashOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let writes = matches!(op, StashOp::Set(..));
            let answer = self.stash_op(op).await;
            if writes && let Err(refusal) = &answer {
                instruments().stash_refusals.add(
                    1,
                    &[
                        KeyValue::new("quiver.tenant", self.owner.tenant.clone()),
                        KeyValue::new("reason", refusal.reason()),
                    ],
                );
            }
            answer.map_err(|e| HostError::from(e.to_string()))
        })
    }
}

/// Why a stash operation of a script failed.
#[derive(Debug, thiserror::Error)]
enum StashFailure {
    /// A limit or quota refused it.
    #[error("{0}")]
    Refused(#[from] StashError),
    /// The replica could not be read.
    #[error("the stash is unavailable for now ({0})")]
    Unavailable(ReplicaUnavailable),
    /// The replica could not take a change.
    #[error("the stash could not be saved ({0}); the change was not kept")]
    NotSaved(ReplicaUnavailable),
}

impl StashFailure {
    fn reason(&self) -> &'static str {
        match self {
            StashFailure::Refused(e) => e.reason(),
            StashFailure::Unavailable(_) | StashFailure::NotSaved(_) => "unavailable",
        }
    }
}

impl ViewScriptContext {
    async fn stash_op(&self, op: StashOp) -> Result<Value, StashFailure> {
        let stash = &self.stash;
        let session = self.stash_key.as_str();
        let Some(replica) = stash.replica() else {
            return Ok(match op {
                StashOp::Get(key) => stash.get(session, &key)?,
                StashOp::Set(key, value, ttl) => stash.set(session, &key, value, ttl)?,
                StashOp::Delete(key) => stash.delete(session, &key)?,
                StashOp::Keys => stash.keys(session),
            });
        };
        // The stash as the replica holds it, once per execution (again after
        // this process's copy was dropped).
        let mut loaded = self.stash_loaded.lock().await;
        if !*loaded {
            let snapshot = replica
                .load(session)
                .await
                .map_err(StashFailure::Unavailable)?;
            stash.install(session, snapshot)?;
            *loaded = true;
        }
        // This process's copy may now hold what the replica does not: drop
        // it, and read the replica again at the next operation.
        let mut dropped = |failure: StashFailure| {
            stash.forget(session);
            *loaded = false;
            failure
        };
        match op {
            StashOp::Get(key) => Ok(stash.get(session, &key)?),
            StashOp::Keys => Ok(stash.keys(session)),
            StashOp::Set(key, value, ttl) => {
                let stored = stash.set(session, &key, value.clone(), ttl)?;
                let quota = stash.quota(&self.owner.tenant);
                let revision = replica
                    .put(session, &key, &value, stash.ttl(ttl), quota)
                    .await
                    .map_err(|e| match e {
                        ReplicaError::Refused(refusal) => dropped(refusal.into()),
                        ReplicaError::Unavailable(e) => dropped(StashFailure::NotSaved(e)),
                    })?;
                stash.note_revision(session, revision);
                Ok(stored)
            }
            StashOp::Delete(key) => {
                let existed = stash.delete(session, &key)?;
                if existed == Value::Bool(true) {
                    let revision = replica
                        .delete(session, &key)
                        .await
                        .map_err(|e| dropped(StashFailure::NotSaved(e)))?;
                    stash.note_revision(session, revision);
                }
                Ok(existed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quiver_contract::{ToolCall, UpstreamError};
    use quiver_proto::{Manifest, ServerEntry, ToolDef};
    use rmcp::model::{ClientRequest, ContentBlock, ServerResult};
    use serde_json::json;

    use super::*;
    use crate::{script::ScriptContext, stash::StashLimits};

    /// Answers every call with `size` bytes of text.
    struct Answers {
        size: usize,
    }

    impl Dispatch for Answers {
        fn call_tool(
            &self,
            _call: ToolCall,
            _options: CallOptions,
        ) -> BoxFuture<'_, Result<CallToolResult, UpstreamError>> {
            let text = "x".repeat(self.size);
            Box::pin(async move { Ok(CallToolResult::success(vec![ContentBlock::text(text)])) })
        }

        fn request<'a>(
            &'a self,
            server: &'a str,
            _request: ClientRequest,
            _options: CallOptions,
        ) -> BoxFuture<'a, Result<ServerResult, UpstreamError>> {
            Box::pin(async move { Err(UpstreamError::Unknown(server.into())) })
        }
    }

    fn context(size: usize, keep: bool) -> ViewScriptContext {
        let tool = |name: &str, meta: Option<Value>| ToolDef {
            name: name.into(),
            title: None,
            description: format!("{name} things"),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            meta,
        };
        let manifest = Manifest::build(
            1,
            vec![ServerEntry::new(
                "dash",
                vec![
                    tool(
                        "chart",
                        Some(json!({"ui": {"resourceUri": "ui://dash/c.html"}})),
                    ),
                    tool("plain", None),
                ],
            )],
        );
        ViewScriptContext::new(
            Arc::new(Answers { size }),
            Arc::new(StashStore::new(StashLimits::default())),
            Arc::new(ToolView::all(Arc::new(manifest))),
            Owner::new("t", "s"),
            CancellationToken::new(),
        )
        .keeping_app_views(keep)
    }

    #[tokio::test]
    async fn a_run_keeps_at_most_eight_views_of_tools_that_link_one() {
        let kept = context(10, true);
        for i in 0..12 {
            kept.call_tool("dash__chart".into(), json!({"i": i}))
                .await
                .unwrap();
            kept.call_tool("dash__plain".into(), json!({}))
                .await
                .unwrap();
        }
        let views = kept.take_app_views();
        assert_eq!(views.len(), MAX_APP_VIEWS);
        assert_eq!(views[0].uri, "ui://dash/c.html");
        assert_eq!(views[0].tool, "dash__chart");
        assert_eq!(views[3].arguments, json!({"i": 3}));
        assert!(
            views
                .iter()
                .all(|v| v.result["content"][0]["text"] == "xxxxxxxxxx")
        );

        let unasked = context(10, false);
        unasked
            .call_tool("dash__chart".into(), json!({}))
            .await
            .unwrap();
        assert!(unasked.take_app_views().is_empty());

        let large = context(MAX_APP_VIEW_RESULT_BYTES, true);
        large
            .call_tool("dash__chart".into(), json!({}))
            .await
            .unwrap();
        assert!(
            large.take_app_views().is_empty(),
            "a result over the bound is not kept"
        );
    }
}
