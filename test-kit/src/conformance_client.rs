//! `quiver-test-kit conformance-client URL`: the command the official MCP
//! conformance suite launches for its client scenarios. It is Quiver's own
//! upstream client, not a client of its own: the scenario's server becomes
//! an HTTP upstream ([`UpstreamConfig::http`]) and is used as the executor
//! uses every upstream ([`Upstream::new`], `list_tools`, `call_tool`), its
//! messages during a call reaching a [`CallSink`] that stands in for the
//! person behind the agent (an elicitation form is accepted with the
//! defaults it offers; a sampling request is answered with a fixed text).
//!
//! The suite sets `MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! (the revision under test) and, for some scenarios, `MCP_CONFORMANCE_CONTEXT`
//! (the tool calls to make, a client registered beforehand). The revision is
//! the upstream's `protocol` setting, as an operator pins it for a server of
//! that revision.
//!
//! The upstream is configured for OAuth as an operator would configure one
//! behind an authorization server (`oauth` with Quiver's callback and its
//! client ID metadata document, or the client registered beforehand, its
//! secret by reference); servers that never ask for authorization ignore it.
//! The person who grants access is scripted too: their browser fetches the
//! authorization link, the suite's authorization server approves at once,
//! and the redirect it answers with is what reaches Quiver's callback.
#![allow(deprecated)] // sampling and logging are current in the revisions tested

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use quiver_upstream::{
    CallOptions, CallSink, Consent, ConsentError, OAuthGrant, SinkFuture, Upstream, UpstreamConfig,
    UpstreamOAuth, UpstreamProtocol,
};
use rmcp::{
    ErrorData,
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ElicitationAction, JsonObject, LoggingMessageNotificationParam, Role, SamplingMessage,
        SamplingMessageContentBlock,
    },
};
use serde::Deserialize;
use serde_json::Value;

/// Arguments of `quiver-test-kit conformance-client`.
#[derive(clap::Args)]
pub struct ConformanceClientArgs {
    /// The scenario server's MCP endpoint (the suite appends it).
    url: String,
}

/// A tool call the scenario asks for.
#[derive(Debug, Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// What `MCP_CONFORMANCE_CONTEXT` holds that this command reads.
#[derive(Debug, Default, Deserialize)]
struct ScenarioContext {
    #[serde(default, rename = "toolCalls")]
    tool_calls: Vec<ToolCall>,
    /// A client registered with the scenario's authorization server beforehand.
    #[serde(default)]
    client_id: Option<String>,
    /// Its secret.
    #[serde(default)]
    client_secret: Option<String>,
}

impl ScenarioContext {
    fn from_env() -> anyhow::Result<ScenarioContext> {
        match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(json) => serde_json::from_str(&json).context("MCP_CONFORMANCE_CONTEXT"),
            Err(_) => Ok(ScenarioContext::default()),
        }
    }
}

/// The environment variable the registered client's secret is referenced
/// by, as an operator's configuration references it.
const CLIENT_SECRET_VAR: &str = "QUIVER_CONFORMANCE_CLIENT_SECRET";

/// Quiver's callback in these runs (the scripted browser stops at it).
const CALLBACK: &str = "http://localhost:3000/callback";

/// The client ID metadata document the suite's authorization servers accept
/// for a client that was not registered beforehand.
const CLIENT_METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

/// The registered client's secret, to be put in the environment (under
/// [`CLIENT_SECRET_VAR`]) before any thread starts.
pub fn context_secret() -> Option<(&'static str, String)> {
    let secret = ScenarioContext::from_env().ok()?.client_secret?;
    Some((CLIENT_SECRET_VAR, secret))
}

/// The OAuth settings an operator would give this upstream: a service
/// account for the client-credentials scenarios, else a person's grant.
fn oauth_settings(scenario: &str, context: &ScenarioContext) -> UpstreamOAuth {
    let grant = if scenario.starts_with("auth/client-credentials") {
        OAuthGrant::ClientCredentials
    } else {
        OAuthGrant::AuthorizationCode
    };
    UpstreamOAuth {
        grant,
        redirect_uri: CALLBACK.into(),
        client_id: context.client_id.clone(),
        client_secret: (context.client_id.is_some() && context.client_secret.is_some())
            .then(|| format!("${{{CLIENT_SECRET_VAR}}}")),
        client_metadata_url: Some(CLIENT_METADATA_DOCUMENT.into()),
        scopes: Vec::new(),
    }
}

/// The suite stops a client after 30 s; finishing first keeps its report whole.
const SCENARIO_LIMIT: Duration = Duration::from_secs(25);

/// Runs the scenario against `args.url`.
pub async fn run(args: ConformanceClientArgs) -> anyhow::Result<()> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let context = ScenarioContext::from_env()?;
    let mut config = UpstreamConfig::http("conformance", &args.url);
    config.protocol = protocol_of(&revision);
    config.oauth = Some(oauth_settings(&scenario, &context));
    config.validate()?;
    tracing::info!(%scenario, %revision, url = %args.url, "conformance client scenario");
    let upstream = Upstream::with_consent(config, Arc::new(ScriptedBrowser::new()?));
    let outcome =
        tokio::time::timeout(SCENARIO_LIMIT, exercise(&upstream, &scenario, &context)).await;
    upstream.shutdown().await;
    outcome.map_err(|_| anyhow::anyhow!("scenario `{scenario}` did not finish in 25 s"))?
}

/// The upstream setting for the revision under test: 2026-07-28 and later
/// are negotiated (`server/discover` first, as every upstream is by
/// default); earlier revisions open a session with `initialize`.
fn protocol_of(revision: &str) -> UpstreamProtocol {
    if revision.as_bytes() >= b"2026-07-28".as_slice() {
        UpstreamProtocol::Auto
    } else {
        UpstreamProtocol::Sessions
    }
}

/// Lists the tools, then makes the calls the scenario names, or calls every
/// tool with arguments its schema requires. The schema-preservation scenario
/// instead hands one tool's input schema, as Quiver holds it, to the tool
/// that echoes a `schema` back.
async fn exercise(
    upstream: &Arc<Upstream>,
    scenario: &str,
    context: &ScenarioContext,
) -> anyhow::Result<()> {
    let tools = upstream.list_tools().await?;
    let calls: Vec<(String, Option<JsonObject>)> = if scenario == "json-schema-2020-12-preservation"
    {
        let echo = |t: &&quiver_proto::ToolDef| {
            t.input_schema["required"] == serde_json::json!(["schema"])
        };
        let echoes = tools.iter().find(echo);
        let held = tools.iter().find(|t| !echo(t));
        match (echoes, held) {
            (Some(echoes), Some(held)) => vec![(
                echoes.name.clone(),
                Some(JsonObject::from_iter([(
                    "schema".to_string(),
                    held.input_schema.clone(),
                )])),
            )],
            _ => anyhow::bail!("the scenario lists no echo tool and no tool to echo"),
        }
    } else if context.tool_calls.is_empty() {
        (tools.iter())
            .map(|t| (t.name.clone(), required_arguments(&t.input_schema)))
            .collect()
    } else {
        (context.tool_calls.iter())
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect()
    };
    for (name, arguments) in calls {
        let options = CallOptions {
            sink: Some(Arc::new(ScriptedUser)),
            ..CallOptions::default()
        };
        match upstream.call_tool(&name, arguments, options).await {
            Ok(result) if result.is_error == Some(true) => {
                tracing::info!(tool = %name, "the tool answered with an error result")
            }
            Ok(_) => tracing::info!(tool = %name, "called"),
            Err(e) => tracing::warn!(tool = %name, "the call failed: {e}"),
        }
    }
    Ok(())
}

/// Values for the properties `schema` requires: what a caller that knows
/// nothing else would send.
fn required_arguments(schema: &Value) -> Option<JsonObject> {
    let required = schema.get("required")?.as_array()?;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = JsonObject::new();
    for name in required.iter().filter_map(Value::as_str) {
        let kind = (properties.and_then(|p| p.get(name)))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("number") => Value::from(1.0),
            Some("integer") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(vec![]),
            Some("object") => Value::Object(JsonObject::new()),
            _ => Value::String("test".into()),
        };
        arguments.insert(name.to_string(), value);
    }
    Some(arguments)
}

/// The person who grants access, scripted: their browser opens the
/// authorization link; the suite's authorization server approves at once and
/// redirects to the callback, whose URL is the grant.
struct ScriptedBrowser {
    http: reqwest::Client,
}

impl ScriptedBrowser {
    fn new() -> anyhow::Result<ScriptedBrowser> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(ScriptedBrowser { http })
    }
}

impl Consent for ScriptedBrowser {
    fn grant<'a>(
        &'a self,
        upstream: &'a str,
        link: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, ConsentError>> {
        Box::pin(async move {
            let answer = (self.http.get(link).send().await)
                .map_err(|e| ConsentError(format!("opening the link for `{upstream}`: {e}")))?;
            let location = answer.headers().get(reqwest::header::LOCATION);
            let location = location.and_then(|l| l.to_str().ok()).ok_or_else(|| {
                ConsentError(format!(
                    "the authorization server answered {} without redirecting to the callback",
                    answer.status()
                ))
            })?;
            Ok(location.to_string())
        })
    }
}

/// The person behind the agent, scripted: accepts an elicitation form with
/// the defaults its schema offers, answers sampling with a fixed text.
struct ScriptedUser;

impl CallSink for ScriptedUser {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> SinkFuture<'_, ()> {
        tracing::info!(progress, ?total, ?message, "progress");
        Box::pin(async {})
    }

    fn log(&self, params: LoggingMessageNotificationParam) -> SinkFuture<'_, ()> {
        tracing::info!(level = ?params.level, data = %params.data, "upstream log");
        Box::pin(async {})
    }

    fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> SinkFuture<'_, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async {
            Ok(CreateMessageResult::new(
                SamplingMessage::new(
                    Role::Assistant,
                    SamplingMessageContentBlock::text("A scripted answer."),
                ),
                "quiver-conformance".into(),
            ))
        })
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> SinkFuture<'_, Result<ElicitResult, ErrorData>> {
        Box::pin(async move {
            let schema = match &params {
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                } => serde_json::to_value(requested_schema).unwrap_or_default(),
                _ => Value::Null,
            };
            let defaults: JsonObject = (schema.get("properties").and_then(Value::as_object))
                .into_iter()
                .flatten()
                .filter_map(|(name, p)| Some((name.clone(), p.get("default")?.clone())))
                .collect();
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(defaults)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revision_under_test_pins_the_protocol() {
        assert_eq!(protocol_of("2025-11-25"), UpstreamProtocol::Sessions);
        assert_eq!(protocol_of("2026-07-28"), UpstreamProtocol::Auto);
    }

    #[test]
    fn only_required_properties_get_values_of_their_type() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
            "required": ["a", "c"],
        });
        let arguments = required_arguments(&schema).unwrap();
        assert_eq!(
            Value::Object(arguments),
            serde_json::json!({"a": 1, "c": true})
        );
        assert_eq!(
            required_arguments(&serde_json::json!({"type": "object"})),
            None
        );
    }
}
