//! How an upstream is configured.

use std::{collections::BTreeMap, time::Duration};

use serde::{Deserialize, Serialize};

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
    pub validation: quiver_proto::manifest::ValidationMode,
    /// Consecutive failed calls that open the circuit breaker (0 disables it). Default 5.
    #[serde(default = "default_breaker_failures")]
    pub breaker_failures: u32,
    /// Seconds the breaker stays open before one probe call. Default 30.
    #[serde(default = "default_breaker_open_secs")]
    pub breaker_open_secs: u64,
    /// Operator tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Operator group.
    #[serde(default)]
    pub group: String,
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
    validation: quiver_proto::manifest::ValidationMode,
    #[serde(default = "default_breaker_failures")]
    breaker_failures: u32,
    #[serde(default = "default_breaker_open_secs")]
    breaker_open_secs: u64,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    group: String,
}

impl TryFrom<RawUpstreamConfig> for UpstreamConfig {
    type Error = String;

    fn try_from(raw: RawUpstreamConfig) -> Result<Self, Self::Error> {
        let id = raw.id.clone();
        let misplaced = |key: &str, transport: &str| {
            format!("upstream `{id}`: `{key}` only applies to transport = \"{transport}\"")
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
                    command: raw.command.ok_or_else(|| {
                        format!("upstream `{id}`: missing `command` (the program to run)")
                    })?,
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
                    url: raw.url.ok_or_else(|| {
                        format!("upstream `{id}`: missing `url` (e.g. \"https://host/mcp\")")
                    })?,
                    headers: raw.headers.unwrap_or_default(),
                }
            }
            other => {
                return Err(format!(
                    "upstream `{id}`: transport = \"{other}\" is not known; use \"stdio\" or \"http\""
                ));
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
            tags: raw.tags,
            group: raw.group,
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
        }
    }

    /// The namespace its tools are exposed under.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or(&self.id)
    }

    /// Circuit breaker settings.
    pub fn breaker(&self) -> crate::breaker::BreakerConfig {
        crate::breaker::BreakerConfig {
            failures: self.breaker_failures,
            open_for: Duration::from_secs(self.breaker_open_secs),
        }
    }

    /// Call time limit.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// Connect time limit.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
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

/// Why a `${VAR}` reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// A `${` without its `}`.
    #[error("unclosed `${{` in a value")]
    Unclosed,
    /// The variable is not set (or not Unicode) and no default was given.
    #[error(
        "environment variable `{name}` is not set (write `${{{name}:-default}}` to give a default)"
    )]
    Unset {
        /// The variable.
        name: String,
        /// Why the environment had no value for it.
        #[source]
        source: std::env::VarError,
    },
}

/// Expands `${VAR}` and `${VAR:-default}` from this process's environment; `$$`
/// is a literal `$`. Upstream `headers` and `env` values are kept in this form
/// (secrets by reference) and expanded by the node that connects.
pub fn expand_references(text: &str) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('{') {
            let end = inner.find('}').ok_or(ExpandError::Unclosed)?;
            let spec = &inner[..end];
            let (name, default) = match spec.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (spec, None),
            };
            match (std::env::var(name), default) {
                (Ok(v), _) => out.push_str(&v),
                (Err(_), Some(d)) => out.push_str(d),
                (Err(source), None) => {
                    return Err(ExpandError::Unset {
                        name: name.to_owned(),
                        source,
                    });
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_expand_from_the_environment_or_their_default() {
        // PATH is set wherever tests run; the other name is set nowhere.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_references("a=${PATH}").unwrap(), format!("a={path}"));
        assert_eq!(
            expand_references("${QUIVER_TEST_NEVER_SET:-fallback} costs $$5").unwrap(),
            "fallback costs $5"
        );
        assert_eq!(expand_references("plain $ sign").unwrap(), "plain $ sign");
    }

    #[test]
    fn unexpandable_references_say_why() {
        assert_eq!(
            expand_references("Bearer ${TOKEN"),
            Err(ExpandError::Unclosed)
        );
        let unset = expand_references("${QUIVER_TEST_NEVER_SET}").unwrap_err();
        assert!(matches!(
            &unset,
            ExpandError::Unset { name, source: std::env::VarError::NotPresent }
                if name == "QUIVER_TEST_NEVER_SET"
        ));
        assert_eq!(
            unset.to_string(),
            "environment variable `QUIVER_TEST_NEVER_SET` is not set \
             (write `${QUIVER_TEST_NEVER_SET:-default}` to give a default)"
        );
    }
}
