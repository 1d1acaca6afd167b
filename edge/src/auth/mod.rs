//! Who is calling: API keys and OAuth 2.1 bearer tokens, resolved to a tenant
//! before any session sees the request.

pub mod jwks;
pub mod jwt;
pub mod oauth_config;

use std::{fmt, str::FromStr, sync::Arc};

use quiver_proto::tenant::{DEFAULT_TENANT, TenantDirectory};
use serde::{Deserialize, Serialize};

/// Whether the edge requires callers to authenticate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Anonymous callers are the built-in tenant `default`, which sees every
    /// tool; a caller presenting a credential is still checked and served as
    /// its tenant.
    #[default]
    None,
    /// Every MCP request must carry a valid API key or bearer token.
    Required,
}

impl AuthMode {
    /// The lowercase name used in flags and config.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Required => "required",
        }
    }
}

impl fmt::Display for AuthMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AuthMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(AuthMode::None),
            "required" => Ok(AuthMode::Required),
            other => Err(format!(
                "unknown auth mode `{other}`: expected none or required"
            )),
        }
    }
}

/// Who a request comes from, as the edge established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant served.
    pub tenant: Arc<str>,
    /// How it proved it.
    pub credential: Credential,
}

/// How a caller proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// Nothing (`auth = "none"` only): the built-in tenant.
    Anonymous,
    /// An API key; its public id.
    ApiKey {
        /// The key id (the part of `qk_<id>_<secret>` that is not secret).
        key_id: String,
    },
    /// An OAuth bearer token.
    Token {
        /// Its issuer.
        issuer: String,
        /// Its subject.
        subject: String,
        /// The token itself, for an upstream that takes an exchange of it
        /// (RFC 8693, on behalf of the caller); its `Debug` shows nothing.
        bearer: quiver_proto::secret_value::SecretValue,
    },
}

impl Principal {
    /// The built-in tenant of an edge that authenticates nobody.
    pub fn anonymous() -> Principal {
        Principal {
            tenant: DEFAULT_TENANT.into(),
            credential: Credential::Anonymous,
        }
    }

    /// Whether this is the anonymous built-in tenant (which sees every tool).
    pub fn is_anonymous(&self) -> bool {
        self.credential == Credential::Anonymous
    }

    /// The key id or token subject, for audit records and logs.
    pub fn who(&self) -> String {
        match &self.credential {
            Credential::Anonymous => "anonymous".into(),
            Credential::ApiKey { key_id } => format!("key:{key_id}"),
            Credential::Token {
                issuer, subject, ..
            } => format!("token:{subject}@{issuer}"),
        }
    }
}

/// Why a request is refused. The HTTP answer is the same for every way a
/// credential can be wrong, so a prober learns nothing about which it hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthRefusal {
    /// No credential where one is required: 401 without an error code.
    Missing,
    /// A credential that is not valid (malformed, unknown, revoked, expired,
    /// wrong audience or issuer, no such tenant): 401 `invalid_token`. The
    /// reason is for the edge's log only.
    Invalid {
        /// What was wrong, never sent to the caller.
        reason: String,
    },
    /// A valid token without the scopes the edge requires: 403
    /// `insufficient_scope`.
    InsufficientScope {
        /// The scopes required.
        required: Vec<String>,
    },
}

/// The bearer credential of an `Authorization` header value, if it is one.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Whether a bearer credential is shaped like a Quiver API key.
pub fn is_api_key(token: &str) -> bool {
    token.starts_with("qk_")
}

/// The principal of an API key, checked against the tenants' key hashes.
pub fn authenticate_key(key: &str, tenants: &TenantDirectory) -> Result<Principal, AuthRefusal> {
    let owner = tenants.by_key(key).ok_or_else(|| AuthRefusal::Invalid {
        reason: "unknown or revoked API key".into(),
    })?;
    Ok(Principal {
        tenant: owner.tenant.id.as_str().into(),
        credential: Credential::ApiKey {
            key_id: owner.key_id.to_string(),
        },
    })
}
