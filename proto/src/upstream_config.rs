//! How an upstream is configured.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use serde::{Deserialize, Serialize};

use crate::references::{ExpandError, TENANT_SECRET_PREFIX, check_references, tenant_secret_names};

mod oauth;
mod wire;

pub use oauth::{OAuthGrant, UpstreamOAuth};
pub use wire::UpstreamMessageError;

/// One downstream MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawUpstreamConfig")]
pub struct UpstreamConfig {
    /// Unique id, `[a-zA-Z0-9_-]{1,48}`; the default namespace of its tools.
    pub id: String,
    /// Prefix of exposed tool names (`<namespace>__<tool>`). Default: the id.
    /// An empty string exposes the tools under their own names.
    #[serde(default)]
    pub namespace: Option<String>,
    /// One-line description shown in code mode's `list` (default: the server's own
    /// `instructions`/name as reported at initialize).
    #[serde(default)]
    pub description: Option<String>,
    /// How to reach it.
    #[serde(flatten)]
    pub transport: Transport,
    /// Time limit of one tool call, in milliseconds. Default 30 000.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Time limit of connecting and initializing, in milliseconds. Default 10 000.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How often to re-list tools, in seconds (0 = only on `list_changed` and on demand). Default 60.
    #[serde(default = "default_refresh_secs")]
    pub refresh_interval_secs: u64,
    /// Argument validation before forwarding: `schema` (default), `strict` (also
    /// rejects unknown fields) or `off`.
    #[serde(default)]
    pub validation: crate::manifest::ValidationMode,
    /// Consecutive failed calls that open the circuit breaker (0 disables it). Default 5.
    #[serde(default = "default_breaker_failures")]
    pub breaker_failures: u32,
    /// Seconds the breaker stays open before one probe call. Default 30.
    #[serde(default = "default_breaker_open_secs")]
    pub breaker_open_secs: u64,
    /// From which severity of screening finding this upstream's tools are
    /// held back until an operator approves them: `high` (default),
    /// `medium`, `low` or `never`.
    #[serde(default, skip_serializing_if = "is_default_hold")]
    pub hold_findings: crate::finding::HoldAt,
    /// Operator tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Operator group.
    #[serde(default)]
    pub group: String,
    /// For an upstream whose header or env values reference
    /// `${tenant_secret:NAME}` (a per-tenant upstream): the tenant whose
    /// secrets discovery lists its tools with. Default: the first tenant, by
    /// id, that holds every secret the upstream references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_tenant: Option<String>,
    /// Which MCP generation to speak to it: `auto` (default: the newest it
    /// supports, asked with `server/discover`, falling back to `initialize`),
    /// `2025-11-25` (sessions opened by `initialize`, no probe) or
    /// `2026-07-28` (stateless only).
    #[serde(default, skip_serializing_if = "UpstreamProtocol::is_auto")]
    pub protocol: UpstreamProtocol,
    /// How Quiver authorizes itself to an HTTP upstream behind OAuth 2.1
    /// (none: the upstream needs no authorization, or takes a static
    /// header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<UpstreamOAuth>,
}

/// The MCP generation spoken to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpstreamProtocol {
    /// The newest revision the upstream supports: `server/discover` first,
    /// `initialize` when it does not answer that (or within 10 s).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// MCP 2025-11-25 (or older) sessions, opened by `initialize`.
    #[serde(rename = "2025-11-25")]
    Sessions,
    /// MCP 2026-07-28, stateless: `server/discover`, `_meta` on every request.
    #[serde(rename = "2026-07-28")]
    Stateless,
}

impl UpstreamProtocol {
    /// Whether it is the default.
    pub fn is_auto(&self) -> bool {
        *self == UpstreamProtocol::Auto
    }
}

/// The transport of an upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// Program to run (a path or a name on `PATH`).
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Environment given to it (the child otherwise inherits only `PATH`, `HOME`, `LANG`).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory.
        #[serde(default)]
        cwd: Option<String>,
    },
    /// MCP Streamable HTTP.
    Http {
        /// Endpoint URL, e.g. `https://mcp.example.com/mcp`.
        url: String,
        /// Extra headers (e.g. `Authorization`), sent on every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

/// A configuration mistake, naming the upstream and key.
#[derive(Debug, Clone, thiserror::Error)]
#[error("upstream `{id}`: {key}: {message}")]
pub struct ConfigError {
    /// Upstream id (or its position when the id itself is bad).
    pub id: String,
    /// The offending key.
    pub key: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// An `[[upstreams]]` entry whose keys do not fit its transport.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportKeyError {
    /// A key of the other transport.
    #[error("upstream `{id}`: `{key}` only applies to transport = \"{transport}\"")]
    Misplaced {
        /// Upstream id.
        id: String,
        /// The key.
        key: &'static str,
        /// The transport it belongs to.
        transport: &'static str,
    },
    /// A key the transport needs is missing.
    #[error("upstream `{id}`: missing `{key}` ({hint})")]
    Missing {
        /// Upstream id.
        id: String,
        /// The key.
        key: &'static str,
        /// What it holds.
        hint: &'static str,
    },
    /// Neither `stdio` nor `http`.
    #[error("upstream `{id}`: transport = \"{transport}\" is not known; use \"stdio\" or \"http\"")]
    UnknownTransport {
        /// Upstream id.
        id: String,
        /// The transport given.
        transport: String,
    },
}

fn is_default_hold(hold: &crate::finding::HoldAt) -> bool {
    *hold == crate::finding::HoldAt::default()
}

/// The TOML shape: every key of every transport, so unknown keys are rejected
/// by name and keys of the wrong transport are explained.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstreamConfig {
    id: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    description: Option<String>,
    transport: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default = "default_call_timeout_ms")]
    call_timeout_ms: u64,
    #[serde(default = "default_connect_timeout_ms")]
    connect_timeout_ms: u64,
    #[serde(default = "default_refresh_secs")]
    refresh_interval_secs: u64,
    #[serde(default)]
    validation: crate::manifest::ValidationMode,
    #[serde(default = "default_breaker_failures")]
    breaker_failures: u32,
    #[serde(default = "default_breaker_open_secs")]
    breaker_open_secs: u64,
    #[serde(default)]
    hold_findings: crate::finding::HoldAt,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    group: String,
    #[serde(default)]
    discovery_tenant: Option<String>,
    #[serde(default)]
    protocol: UpstreamProtocol,
    #[serde(default)]
    oauth: Option<UpstreamOAuth>,
}

impl TryFrom<RawUpstreamConfig> for UpstreamConfig {
    type Error = TransportKeyError;

    fn try_from(raw: RawUpstreamConfig) -> Result<Self, Self::Error> {
        let id = raw.id.clone();
        let misplaced = |key: &'static str, transport: &'static str| TransportKeyError::Misplaced {
            id: id.clone(),
            key,
            transport,
        };
        let missing = |key: &'static str, hint: &'static str| TransportKeyError::Missing {
            id: id.clone(),
            key,
            hint,
        };
        let transport = match raw.transport.as_str() {
            "stdio" => {
                if raw.url.is_some() {
                    return Err(misplaced("url", "http"));
                }
                if raw.headers.is_some() {
                    return Err(misplaced("headers", "http"));
                }
                Transport::Stdio {
                    command: raw
                        .command
                        .ok_or_else(|| missing("command", "the program to run"))?,
                    args: raw.args.unwrap_or_default(),
                    env: raw.env.unwrap_or_default(),
                    cwd: raw.cwd,
                }
            }
            "http" => {
                for (key, present) in [
                    ("command", raw.command.is_some()),
                    ("args", raw.args.is_some()),
                    ("env", raw.env.is_some()),
                    ("cwd", raw.cwd.is_some()),
                ] {
                    if present {
                        return Err(misplaced(key, "stdio"));
                    }
                }
                Transport::Http {
                    url: raw
                        .url
                        .ok_or_else(|| missing("url", "e.g. \"https://host/mcp\""))?,
                    headers: raw.headers.unwrap_or_default(),
                }
            }
            other => {
                return Err(TransportKeyError::UnknownTransport {
                    id: id.clone(),
                    transport: other.to_string(),
                });
            }
        };
        Ok(UpstreamConfig {
            id: raw.id,
            namespace: raw.namespace,
            description: raw.description,
            transport,
            call_timeout_ms: raw.call_timeout_ms,
            connect_timeout_ms: raw.connect_timeout_ms,
            refresh_interval_secs: raw.refresh_interval_secs,
            validation: raw.validation,
            breaker_failures: raw.breaker_failures,
            breaker_open_secs: raw.breaker_open_secs,
            hold_findings: raw.hold_findings,
            tags: raw.tags,
            group: raw.group,
            discovery_tenant: raw.discovery_tenant,
            protocol: raw.protocol,
            oauth: raw.oauth,
        })
    }
}

fn default_breaker_failures() -> u32 {
    5
}
fn default_breaker_open_secs() -> u64 {
    30
}
fn default_call_timeout_ms() -> u64 {
    30_000
}
fn default_connect_timeout_ms() -> u64 {
    10_000
}
fn default_refresh_secs() -> u64 {
    60
}

impl UpstreamConfig {
    /// A stdio upstream with defaults for everything else.
    pub fn stdio(id: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self::with_transport(
            id,
            Transport::Stdio {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// An HTTP upstream with defaults for everything else.
    pub fn http(id: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            id,
            Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn with_transport(id: impl Into<String>, transport: Transport) -> Self {
        UpstreamConfig {
            id: id.into(),
            namespace: None,
            description: None,
            transport,
            call_timeout_ms: default_call_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            refresh_interval_secs: default_refresh_secs(),
            validation: Default::default(),
            breaker_failures: default_breaker_failures(),
            breaker_open_secs: default_breaker_open_secs(),
            tags: Vec::new(),
            group: String::new(),
            discovery_tenant: None,
            protocol: UpstreamProtocol::Auto,
            hold_findings: Default::default(),
            oauth: None,
        }
    }

    /// The namespace its tools are exposed under.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or(&self.id)
    }

    /// Call time limit.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// Connect time limit.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// The `NAME`s of the `${tenant_secret:NAME}` references in its header or
    /// env values: empty for an upstream shared by every tenant.
    /// For an upstream behind OAuth where a person grants access, the
    /// tenant secret holding each tenant's access token as well (see
    /// [`UpstreamConfig::oauth_grant_secret`]).
    pub fn tenant_secret_names(&self) -> BTreeSet<String> {
        let values = match &self.transport {
            Transport::Stdio { env, .. } => env.values(),
            Transport::Http { headers, .. } => headers.values(),
        };
        let mut names: BTreeSet<String> = values.flat_map(|v| tenant_secret_names(v)).collect();
        names.extend(self.oauth_grant_secret());
        names
    }

    /// For an HTTP upstream behind OAuth where a person grants access (the
    /// authorization-code grant): the name of the tenant secret that holds
    /// a tenant's current access token, `oauth-<id>`. The control plane
    /// writes it when the tenant's grant arrives or is refreshed (operators
    /// cannot set names with this prefix); each tenant's connection sends it
    /// as its bearer token.
    pub fn oauth_grant_secret(&self) -> Option<String> {
        let oauth = self.oauth.as_ref()?;
        (oauth.grant == OAuthGrant::AuthorizationCode
            && matches!(self.transport, Transport::Http { .. }))
        .then(|| format!("{OAUTH_GRANT_SECRET_PREFIX}{}", self.id))
    }

    /// Whether each call is authorized on behalf of its caller: an HTTP
    /// upstream whose OAuth grant is a token exchange (RFC 8693) of the
    /// caller's own access token; its calls travel on a connection per
    /// caller.
    pub fn acts_for_caller(&self) -> bool {
        self.oauth
            .as_ref()
            .is_some_and(|o| o.grant == OAuthGrant::TokenExchange)
            && matches!(self.transport, Transport::Http { .. })
    }

    /// The tenant secret name of the OAuth access token a per-tenant or
    /// per-caller connection sends, `oauth-<id>`.
    pub fn oauth_token_name(&self) -> String {
        format!("{OAUTH_GRANT_SECRET_PREFIX}{}", self.id)
    }

    /// Whether its connections are made per tenant, with that tenant's secrets.
    pub fn is_per_tenant(&self) -> bool {
        !self.tenant_secret_names().is_empty()
    }

    /// Checks the `${…}` references: they parse, tenant secrets have valid
    /// names and appear only in header and env values, and
    /// `discovery_tenant` is set only where it means something.
    fn validate_references(&self) -> Result<(), ConfigError> {
        let err = |key, message: String| ConfigError {
            id: self.id.clone(),
            key,
            message,
        };
        let (secret_key, values, elsewhere) = match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut elsewhere = vec![("command", command.as_str())];
                elsewhere.extend(args.iter().map(|a| ("args", a.as_str())));
                elsewhere.extend(cwd.iter().map(|c| ("cwd", c.as_str())));
                ("env", env, elsewhere)
            }
            Transport::Http { url, headers } => ("headers", headers, vec![("url", url.as_str())]),
        };
        for (name, value) in values {
            if let Err(ExpandError::Unclosed) = check_references(value) {
                return Err(err(
                    secret_key,
                    format!("the value of `{name}` has a `${{` without its `}}`"),
                ));
            }
            for secret in tenant_secret_names(value) {
                if secret.starts_with(OAUTH_GRANT_SECRET_PREFIX) {
                    return Err(err(
                        secret_key,
                        format!(
                            "`${{tenant_secret:{secret}}}`: secrets named `{OAUTH_GRANT_SECRET_PREFIX}…` hold OAuth tokens for their own upstream only; use `oauth` settings to authorize this one"
                        ),
                    ));
                }
                if !valid_secret_name(&secret) {
                    return Err(err(
                        secret_key,
                        format!(
                            "`${{{TENANT_SECRET_PREFIX}{secret}}}` in `{name}`: a secret name is 1-64 characters of a-z, A-Z, 0-9, _ and -"
                        ),
                    ));
                }
            }
        }
        let marker = format!("${{{TENANT_SECRET_PREFIX}");
        if let Some((key, _)) = elsewhere.iter().find(|(_, v)| v.contains(&marker)) {
            return Err(err(
                key,
                format!("`${{{TENANT_SECRET_PREFIX}NAME}}` may appear only in {secret_key} values"),
            ));
        }
        if let Some(tenant) = &self.discovery_tenant
            && !self.is_per_tenant()
        {
            return Err(err(
                "discovery_tenant",
                format!(
                    "`{tenant}` is given, but no {secret_key} value references `${{{TENANT_SECRET_PREFIX}NAME}}`; remove it, or reference the tenant's secrets"
                ),
            ));
        }
        Ok(())
    }

    /// Checks the values serde cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |key, message: String| ConfigError {
            id: self.id.clone(),
            key,
            message,
        };
        let valid_name = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if self.id.is_empty() || self.id.len() > 48 || !valid_name(&self.id) {
            return Err(err(
                "id",
                "must be 1-48 characters of [a-zA-Z0-9_-], e.g. `github`".into(),
            ));
        }
        if let Some(ns) = &self.namespace
            && (ns.len() > 32 || !valid_name(ns))
        {
            return Err(err(
                "namespace",
                "must be at most 32 characters of [a-zA-Z0-9_-] (or \"\" for none)".into(),
            ));
        }
        if self.call_timeout_ms == 0 {
            return Err(err("call_timeout_ms", "must be greater than 0".into()));
        }
        if self.connect_timeout_ms == 0 {
            return Err(err("connect_timeout_ms", "must be greater than 0".into()));
        }
        self.validate_references()?;
        if let Some(oauth) = &self.oauth {
            if let Some((key, message)) = oauth.problem() {
                return Err(err(key, message));
            }
            match &self.transport {
                Transport::Stdio { .. } => {
                    return Err(err(
                        "oauth",
                        "applies to HTTP upstreams only (a stdio server takes its credentials in `env`)"
                            .into(),
                    ));
                }
                Transport::Http { headers, .. }
                    if headers
                        .keys()
                        .any(|h| h.eq_ignore_ascii_case("authorization")) =>
                {
                    return Err(err(
                        "oauth",
                        "and an `Authorization` header both authorize the upstream; keep one"
                            .into(),
                    ));
                }
                Transport::Http { .. } => {}
            }
        }
        match &self.transport {
            Transport::Stdio { command, .. } if command.trim().is_empty() => {
                Err(err("command", "must name the program to run".into()))
            }
            Transport::Http { url, headers } => {
                let parsed = url
                    .parse::<http::Uri>()
                    .map_err(|e| err("url", format!("`{url}` is not a URL: {e}")))?;
                if !matches!(parsed.scheme_str(), Some("http" | "https")) {
                    return Err(err(
                        "url",
                        format!("`{url}` must start with http:// or https://"),
                    ));
                }
                for (name, value) in headers {
                    http::HeaderName::try_from(name.as_str()).map_err(|_| {
                        err("headers", format!("`{name}` is not a valid header name"))
                    })?;
                    http::HeaderValue::try_from(value.as_str()).map_err(|_| {
                        err(
                            "headers",
                            format!("the value of `{name}` is not a valid header value"),
                        )
                    })?;
                }
                Ok(())
            }
            Transport::Stdio { .. } => Ok(()),
        }
    }
}

/// The prefix of the tenant secrets that hold OAuth access tokens
/// ([`UpstreamConfig::oauth_grant_secret`]): reserved for the control plane.
pub const OAUTH_GRANT_SECRET_PREFIX: &str = "oauth-";

/// Whether `name` may name a tenant secret: 1-64 characters of a-z, A-Z,
/// 0-9, `_` and `-`.
pub fn valid_secret_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http_with(header: &str) -> UpstreamConfig {
        let mut config = UpstreamConfig::http("remote", "https://mcp.example.com/mcp");
        if let Transport::Http { headers, .. } = &mut config.transport {
            headers.insert("Authorization".into(), header.into());
        }
        config
    }

    #[test]
    fn a_tenant_secret_reference_makes_an_upstream_per_tenant() {
        let shared = http_with("Bearer ${SHARED_TOKEN}");
        assert!(!shared.is_per_tenant());
        shared.validate().unwrap();
        let mut per_tenant = http_with("Bearer ${tenant_secret:API_TOKEN}");
        assert_eq!(
            per_tenant.tenant_secret_names(),
            BTreeSet::from(["API_TOKEN".to_string()])
        );
        per_tenant.discovery_tenant = Some("acme".into());
        per_tenant.validate().unwrap();
        // The registry's JSON round-trips the new key (and omits it when unset).
        let json = serde_json::to_string(&per_tenant).unwrap();
        assert_eq!(
            serde_json::from_str::<UpstreamConfig>(&json).unwrap(),
            per_tenant
        );
        assert!(
            !serde_json::to_string(&shared)
                .unwrap()
                .contains("discovery_tenant")
        );
    }

    #[test]
    fn misplaced_tenant_secret_references_are_refused_by_key() {
        let bad_name = http_with("Bearer ${tenant_secret:API TOKEN}").validate();
        assert!(
            matches!(&bad_name, Err(e) if e.key == "headers"),
            "{bad_name:?}"
        );
        let in_url = UpstreamConfig::http("remote", "https://h/${tenant_secret:X}/mcp").validate();
        assert!(matches!(&in_url, Err(e) if e.key == "url"), "{in_url:?}");
        // Another upstream's OAuth token is not this one's to send.
        let borrowed = http_with("Bearer ${tenant_secret:oauth-tracker}").validate();
        assert!(
            matches!(&borrowed, Err(e) if e.key == "headers" && e.message.contains("their own upstream only")),
            "{borrowed:?}"
        );
        let mut pointless = http_with("Bearer ${SHARED_TOKEN}");
        pointless.discovery_tenant = Some("acme".into());
        let error = pointless.validate().unwrap_err();
        assert_eq!(error.key, "discovery_tenant", "{error}");
    }
}
