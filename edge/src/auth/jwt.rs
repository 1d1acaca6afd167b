//! OAuth 2.1 bearer tokens as a resource server sees them: a compact JWS whose
//! signature is checked against its issuer's JWKS, then its claims (audience,
//! lifetime, subject, tenant, scopes). It says who is calling; the reason for
//! a refusal is for the server log only and must never reach the caller.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::jwks::{self, IssuerKeys, JwksError, JwksSource, JwsAlgorithm, KeySet};

/// Tokens longer than this many bytes are refused without being parsed.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The shortest time between two re-reads of one issuer's JWKS caused by
/// tokens naming a key the cached set lacks.
pub const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// The longest `kid` a token may carry.
const MAX_KID_BYTES: usize = 256;

/// `[edge.oauth]` in quiver.toml: which bearer tokens the edge accepts.
///
/// ```toml
/// [edge.oauth]
/// resource = "https://mcp.example.com/mcp"
/// required_scopes = ["mcp:tools"]
///
/// [[edge.oauth.issuers]]
/// issuer = "https://idp.example.com"
/// jwks_url = "https://idp.example.com/.well-known/jwks.json"
/// tenant_claim = "org"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The canonical URI of this MCP server (RFC 8707 resource indicator),
    /// e.g. `"https://mcp.example.com/mcp"`. Tokens must carry it in `aud`
    /// (a string or an array of strings), exactly as written here.
    pub resource: String,
    /// The authorization servers whose tokens are trusted.
    pub issuers: Vec<IssuerConfig>,
    /// Scopes every token must carry (in a space-separated `scope` claim, or
    /// an `scp` array). Default: none.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Clock leeway for `exp`, `nbf` and `iat`, in seconds. Default: 60.
    #[serde(default = "default_leeway_secs")]
    pub leeway_secs: u64,
}

fn default_leeway_secs() -> u64 {
    60
}

/// One trusted authorization server, `[[edge.oauth.issuers]]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The exact `iss` value of this server's tokens.
    pub issuer: String,
    /// The server's signing keys from a file (JSON `{"keys": [...]}`), read at
    /// start and re-read when a token names an unknown key. Set this or
    /// `jwks_url`, not both.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// The server's signing keys from an http or https URL, fetched on first
    /// use and again when a token names an unknown key. Set this or
    /// `jwks_file`, not both.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// The claim whose string value names the caller's tenant
    /// (`[A-Za-z0-9_-]{1,64}`). Default: `"tenant"`.
    #[serde(default = "default_tenant_claim")]
    pub tenant_claim: String,
}

fn default_tenant_claim() -> String {
    "tenant".to_owned()
}

/// Where an issuer's keys come from, once its configuration is checked.
enum KeySource<'a> {
    File(&'a Path),
    Url(reqwest::Url),
}

impl IssuerConfig {
    /// The one key source this issuer names, or the error pointing at its
    /// `[[edge.oauth.issuers]]` entry.
    fn key_source(&self, index: usize) -> Result<KeySource<'_>, JwtConfigError> {
        let issuer = self.issuer.clone();
        match (&self.jwks_file, &self.jwks_url) {
            (None, None) => Err(JwtConfigError::NoJwksSource { index, issuer }),
            (Some(_), Some(_)) => Err(JwtConfigError::TwoJwksSources { index, issuer }),
            (Some(path), None) => Ok(KeySource::File(path)),
            (None, Some(url)) => match reqwest::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
                    Ok(KeySource::Url(parsed))
                }
                _ => Err(JwtConfigError::BadJwksUrl {
                    index,
                    issuer,
                    url: url.clone(),
                }),
            },
        }
    }
}

impl OAuthConfig {
    /// Checks what can be checked without reading keys: a resource is set,
    /// each issuer appears once with exactly one of `jwks_file`/`jwks_url`,
    /// URLs are http or https, and claim and scope names are not empty.
    pub fn validate(&self) -> Result<(), JwtConfigError> {
        if self.resource.trim().is_empty() {
            return Err(JwtConfigError::EmptyResource);
        }
        if self.issuers.is_empty() {
            return Err(JwtConfigError::NoIssuers);
        }
        if let Some(scope) = self
            .required_scopes
            .iter()
            .find(|scope| scope.is_empty() || scope.contains(char::is_whitespace))
        {
            return Err(JwtConfigError::BadRequiredScope {
                scope: scope.clone(),
            });
        }
        let mut seen = HashSet::new();
        for (index, issuer) in self.issuers.iter().enumerate() {
            if issuer.issuer.is_empty() {
                return Err(JwtConfigError::EmptyIssuer { index });
            }
            if !seen.insert(issuer.issuer.as_str()) {
                return Err(JwtConfigError::DuplicateIssuer {
                    index,
                    issuer: issuer.issuer.clone(),
                });
            }
            issuer.key_source(index)?;
            if issuer.tenant_claim.is_empty() {
                return Err(JwtConfigError::EmptyTenantClaim {
                    index,
                    issuer: issuer.issuer.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Why `[edge.oauth]` cannot be used. Each message names the key, the issuer
/// or the file, and what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// `resource` is empty.
    #[error(
        "edge.oauth.resource is empty; set it to this server's canonical URI, e.g. \"https://mcp.example.com/mcp\""
    )]
    EmptyResource,
    /// No issuer is configured.
    #[error(
        "edge.oauth.issuers is empty; add an [[edge.oauth.issuers]] entry with `issuer` and `jwks_file` or `jwks_url`"
    )]
    NoIssuers,
    /// A required scope is empty or contains whitespace.
    #[error(
        "edge.oauth.required_scopes: {scope:?} is not a scope; give each scope as its own non-empty string without spaces"
    )]
    BadRequiredScope {
        /// The offending entry.
        scope: String,
    },
    /// An issuer's `issuer` is empty.
    #[error(
        "edge.oauth.issuers[{index}].issuer is empty; set it to the exact `iss` value of the authorization server's tokens"
    )]
    EmptyIssuer {
        /// The position of the entry in `issuers`.
        index: usize,
    },
    /// Two entries name the same issuer.
    #[error(
        "edge.oauth.issuers[{index}]: issuer {issuer:?} is listed twice; keep one entry per issuer"
    )]
    DuplicateIssuer {
        /// The position of the second entry.
        index: usize,
        /// The repeated issuer.
        issuer: String,
    },
    /// An issuer has neither `jwks_file` nor `jwks_url`.
    #[error(
        "edge.oauth.issuers[{index}] ({issuer}): set `jwks_file` or `jwks_url` to where its signing keys are"
    )]
    NoJwksSource {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// An issuer has both `jwks_file` and `jwks_url`.
    #[error(
        "edge.oauth.issuers[{index}] ({issuer}): both `jwks_file` and `jwks_url` are set; keep one"
    )]
    TwoJwksSources {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// `jwks_url` is not an http or https URL.
    #[error(
        "edge.oauth.issuers[{index}].jwks_url ({issuer}): {url:?} is not an http or https URL; give the full JWKS URL, e.g. \"https://idp.example.com/.well-known/jwks.json\""
    )]
    BadJwksUrl {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured value.
        url: String,
    },
    /// `tenant_claim` is empty.
    #[error(
        "edge.oauth.issuers[{index}].tenant_claim ({issuer}) is empty; name the claim that holds the tenant, or remove the key for \"tenant\""
    )]
    EmptyTenantClaim {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// A `jwks_file` could not be read.
    #[error(
        "edge.oauth.issuers[{index}].jwks_file ({issuer}): cannot read {}; check the path and that the edge's user may read it",
        path.display()
    )]
    ReadJwksFile {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured path.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// A `jwks_file` holds no usable JWKS.
    #[error(
        "edge.oauth.issuers[{index}].jwks_file ({issuer}): {} is not a usable JWKS ({source}); give the authorization server's published key set",
        path.display()
    )]
    BadJwksFile {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured path.
        path: PathBuf,
        /// What is wrong with the document.
        #[source]
        source: JwksError,
    },
    /// The HTTP client for `jwks_url` could not be built (a build or
    /// platform problem, not a configuration one).
    #[error(
        "cannot build the HTTP client for JWKS URLs: {0}; use `jwks_file` instead or report this build"
    )]
    HttpClient(#[source] reqwest::Error),
}

/// Who a valid token says is calling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenIdentity {
    /// The `iss` of the token, one of the configured issuers.
    pub issuer: String,
    /// The `sub` of the token.
    pub subject: String,
    /// The value of the issuer's tenant claim.
    pub tenant: String,
    /// The scopes the token carries, in its order.
    pub scopes: Vec<String>,
    /// The token's `exp`, in seconds since the Unix epoch.
    pub expires_at: u64,
}

/// Why a bearer token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtRejection {
    /// Any reason the token is not acceptable (malformed, bad signature,
    /// unknown issuer, unknown kid, expired, not yet valid, wrong audience,
    /// no tenant claim, ...). `reason` is for server logs ONLY: the HTTP
    /// answer must not tell a prober which case it hit.
    #[error("invalid token: {reason}")]
    Invalid {
        /// What was wrong, for the server log.
        reason: String,
    },
    /// A valid token lacking some of the required scopes.
    #[error("insufficient scope: requires {}", required.join(" "))]
    InsufficientScope {
        /// Every scope the edge requires (`edge.oauth.required_scopes`).
        required: Vec<String>,
    },
}

fn invalid(reason: impl Into<String>) -> JwtRejection {
    JwtRejection::Invalid {
        reason: reason.into(),
    }
}

/// Checks bearer tokens against `[edge.oauth]`. Send and Sync; share it in
/// an `Arc`. Keys are cached per issuer and re-read when a token names one
/// the cache lacks, at most once per [`DEFAULT_REFETCH_INTERVAL`].
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use quiver_edge::auth::jwt::{IssuerConfig, JwtValidator, OAuthConfig};
///
/// let validator = JwtValidator::new(OAuthConfig {
///     resource: "https://mcp.example.com/mcp".into(),
///     issuers: vec![IssuerConfig {
///         issuer: "https://idp.example.com".into(),
///         jwks_file: Some("/etc/quiver/idp-jwks.json".into()),
///         jwks_url: None,
///         tenant_claim: "tenant".into(),
///     }],
///     required_scopes: vec!["mcp:tools".into()],
///     leeway_secs: 60,
/// })?;
/// let identity = validator.validate("eyJhbGciOi...").await?;
/// println!("{} of {}", identity.subject, identity.tenant);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct JwtValidator {
    config: OAuthConfig,
    /// One entry per `config.issuers`, in the same order.
    keys: Vec<IssuerKeys>,
    refetch_interval: Duration,
}

impl JwtValidator {
    /// A validator for `config`. Reads every `jwks_file` now (errors name the
    /// issuer and the file); `jwks_url` sets are fetched on first use.
    pub fn new(config: OAuthConfig) -> Result<JwtValidator, JwtConfigError> {
        config.validate()?;
        let mut http: Option<reqwest::Client> = None;
        let mut keys = Vec::with_capacity(config.issuers.len());
        for (index, issuer) in config.issuers.iter().enumerate() {
            let name = issuer.issuer.clone();
            let issuer_keys = match issuer.key_source(index)? {
                KeySource::File(path) => {
                    let document = jwks::read_jwks_file(path).map_err(|source| {
                        JwtConfigError::ReadJwksFile {
                            index,
                            issuer: name.clone(),
                            path: path.to_owned(),
                            source,
                        }
                    })?;
                    let set = KeySet::from_json(&document).map_err(|source| {
                        JwtConfigError::BadJwksFile {
                            index,
                            issuer: name.clone(),
                            path: path.to_owned(),
                            source,
                        }
                    })?;
                    jwks::log_skipped_keys(&name, &set);
                    IssuerKeys::new(name, JwksSource::File(path.to_owned()), set)
                }
                KeySource::Url(url) => {
                    if url.scheme() == "http" {
                        tracing::warn!(
                            issuer = %name,
                            %url,
                            "JWKS fetched over plain http: anyone on the path can substitute signing keys; use https outside tests"
                        );
                    }
                    let client = match &http {
                        Some(client) => client.clone(),
                        None => {
                            let client =
                                jwks::jwks_http_client().map_err(JwtConfigError::HttpClient)?;
                            http = Some(client.clone());
                            client
                        }
                    };
                    IssuerKeys::new(name, JwksSource::Url { url, client }, KeySet::default())
                }
            };
            keys.push(issuer_keys);
        }
        Ok(JwtValidator {
            config,
            keys,
            refetch_interval: DEFAULT_REFETCH_INTERVAL,
        })
    }

    /// The same validator re-reading an issuer's JWKS at most once per
    /// `interval` (`Duration::ZERO`: on every unknown key). For tests.
    #[doc(hidden)]
    pub fn with_refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// The configuration this validator enforces.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// Validates a bearer token (the part after `Bearer `): its signature by
    /// one of its issuer's keys, then `aud`, `exp`, `nbf`, `iat`, `sub`, the
    /// tenant claim and the required scopes.
    pub async fn validate(&self, token: &str) -> Result<TokenIdentity, JwtRejection> {
        let jws = CompactJws::parse(token)?;
        // `iss` picks the keys; nothing else in the payload is read until the
        // signature verifies.
        let issuer_name = match jws.payload.get("iss") {
            Some(Value::String(issuer)) => issuer.as_str(),
            _ => return Err(invalid("no string \"iss\" claim")),
        };
        let Some((issuer, keys)) = self
            .config
            .issuers
            .iter()
            .zip(&self.keys)
            .find(|(issuer, _)| issuer.issuer == issuer_name)
        else {
            return Err(invalid(format!(
                "untrusted issuer {}",
                excerpt(issuer_name)
            )));
        };
        keys.verify(
            jws.kid.as_deref(),
            jws.alg,
            jws.signing_input,
            &jws.signature,
            self.refetch_interval,
        )
        .await
        .map_err(|reason| invalid(format!("issuer {}: {reason}", issuer.issuer)))?;
        self.check_claims(issuer, &jws.payload)
    }

    /// The identity in `claims`, which carry a verified signature of `issuer`.
    fn check_claims(
        &self,
        issuer: &IssuerConfig,
        claims: &Map<String, Value>,
    ) -> Result<TokenIdentity, JwtRejection> {
        let now = unix_now();
        let leeway = self.config.leeway_secs;
        let expires_at = numeric_date(claims, "exp")?.ok_or_else(|| invalid("no \"exp\" claim"))?;
        if now >= expires_at.saturating_add(leeway) {
            return Err(invalid(format!("expired at {expires_at}, now {now}")));
        }
        if let Some(not_before) = numeric_date(claims, "nbf")?
            && not_before > now.saturating_add(leeway)
        {
            return Err(invalid(format!("not valid before {not_before}, now {now}")));
        }
        if let Some(issued_at) = numeric_date(claims, "iat")?
            && issued_at > now.saturating_add(leeway)
        {
            return Err(invalid(format!(
                "issued in the future at {issued_at}, now {now}"
            )));
        }
        if !has_audience(claims, &self.config.resource) {
            return Err(invalid(format!(
                "\"aud\" does not contain {:?}",
                self.config.resource
            )));
        }
        let subject = match claims.get("sub") {
            Some(Value::String(subject)) if !subject.is_empty() => subject.clone(),
            _ => return Err(invalid("no non-empty string \"sub\" claim")),
        };
        let tenant = match claims.get(&issuer.tenant_claim) {
            Some(Value::String(tenant)) if is_tenant_name(tenant) => tenant.clone(),
            Some(_) => {
                return Err(invalid(format!(
                    "tenant claim {:?} is not a string of 1 to 64 letters, digits, '_' or '-'",
                    issuer.tenant_claim
                )));
            }
            None => {
                return Err(invalid(format!(
                    "no tenant claim {:?}",
                    issuer.tenant_claim
                )));
            }
        };
        let scopes = token_scopes(claims)?;
        if !self
            .config
            .required_scopes
            .iter()
            .all(|required| scopes.contains(required))
        {
            return Err(JwtRejection::InsufficientScope {
                required: self.config.required_scopes.clone(),
            });
        }
        Ok(TokenIdentity {
            issuer: issuer.issuer.clone(),
            subject,
            tenant,
            scopes,
            expires_at,
        })
    }
}

/// A token split into its parts; the payload is not yet trusted.
struct CompactJws<'a> {
    alg: JwsAlgorithm,
    kid: Option<String>,
    payload: Map<String, Value>,
    /// `header.payload`, the bytes the signature covers.
    signing_input: &'a [u8],
    signature: Vec<u8>,
}

impl<'a> CompactJws<'a> {
    fn parse(token: &'a str) -> Result<CompactJws<'a>, JwtRejection> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid(format!(
                "{} bytes; tokens of at most {MAX_TOKEN_BYTES} are read",
                token.len()
            )));
        }
        let Some((signing_input, signature)) = token.rsplit_once('.') else {
            return Err(invalid("not a compact JWS (header.payload.signature)"));
        };
        let Some((header, payload)) = signing_input.split_once('.') else {
            return Err(invalid("not a compact JWS (header.payload.signature)"));
        };
        if payload.contains('.') {
            return Err(invalid(
                "more than three segments (an encrypted JWE is not accepted)",
            ));
        }
        let header = json_object(&decode_segment(header, "header")?, "header")?;
        let alg = match header.get("alg") {
            Some(Value::String(name)) => JwsAlgorithm::from_name(name)
                .ok_or_else(|| invalid(format!("algorithm {} is not accepted", excerpt(name))))?,
            _ => return Err(invalid("header has no string \"alg\"")),
        };
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) if kid.len() <= MAX_KID_BYTES => Some(kid.clone()),
            Some(_) => {
                return Err(invalid(format!(
                    "\"kid\" is not a string of at most {MAX_KID_BYTES} bytes"
                )));
            }
        };
        // RFC 7515 §4.1.11: extensions listed in `crit` must be understood,
        // and the edge understands none.
        if header.contains_key("crit") {
            return Err(invalid("header lists \"crit\" extensions"));
        }
        let payload = json_object(&decode_segment(payload, "payload")?, "payload")?;
        let signature = decode_segment(signature, "signature")?;
        if signature.is_empty() {
            return Err(invalid("empty signature"));
        }
        Ok(CompactJws {
            alg,
            kid,
            payload,
            signing_input: signing_input.as_bytes(),
            signature,
        })
    }
}

fn decode_segment(segment: &str, what: &str) -> Result<Vec<u8>, JwtRejection> {
    URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| invalid(format!("{what} is not unpadded base64url")))
}

fn json_object(bytes: &[u8], what: &str) -> Result<Map<String, Value>, JwtRejection> {
    serde_json::from_slice(bytes).map_err(|_| invalid(format!("{what} is not a JSON object")))
}

/// A NumericDate claim (RFC 7519 §2), fractions dropped; `None` when absent.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, JwtRejection> {
    let Some(value) = claims.get(name) else {
        return Ok(None);
    };
    let seconds = match value {
        Value::Number(number) => number.as_u64().or_else(|| {
            number
                .as_f64()
                .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                // Saturates at u64::MAX, which is beyond any real date.
                .map(|seconds| seconds as u64)
        }),
        _ => None,
    };
    seconds.map(Some).ok_or_else(|| {
        invalid(format!(
            "\"{name}\" is not a non-negative number of seconds"
        ))
    })
}

fn has_audience(claims: &Map<String, Value>, resource: &str) -> bool {
    match claims.get("aud") {
        Some(Value::String(audience)) => audience == resource,
        Some(Value::Array(audiences)) => audiences
            .iter()
            .any(|audience| audience.as_str() == Some(resource)),
        _ => false,
    }
}

/// Whether `tenant` matches `^[A-Za-z0-9_-]{1,64}$`.
fn is_tenant_name(tenant: &str) -> bool {
    (1..=64).contains(&tenant.len())
        && tenant
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// The token's scopes: a space-separated `scope` string (RFC 8693 §4.2), or
/// else `scp` as an array or a space-separated string.
fn token_scopes(claims: &Map<String, Value>) -> Result<Vec<String>, JwtRejection> {
    let split = |scopes: &str| {
        scopes
            .split(' ')
            .filter(|scope| !scope.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scopes)), _) => Ok(split(scopes)),
        (Some(_), _) => Err(invalid("\"scope\" is not a string")),
        (None, Some(Value::String(scopes))) => Ok(split(scopes)),
        (None, Some(Value::Array(scopes))) => scopes
            .iter()
            .map(|scope| scope.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| invalid("\"scp\" holds a non-string")),
        (None, Some(_)) => Err(invalid("\"scp\" is neither a string nor an array")),
        (None, None) => Ok(Vec::new()),
    }
}

/// At most 64 characters of a caller-chosen string, quoted, for a log line.
fn excerpt(text: &str) -> String {
    let mut shown: String = text.chars().take(64).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use ring::{
        rand::SystemRandom,
        signature::{Ed25519KeyPair, KeyPair},
    };
    use serde_json::json;

    use super::*;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A validator trusting one Ed25519 key from a JWKS file, and a token
    /// it accepts.
    fn validator_and_token() -> (tempfile::TempDir, JwtValidator, String) {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("generate Ed25519");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("parse Ed25519");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("jwks.json");
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k", "x": b64(pair.public_key().as_ref())}]});
        std::fs::write(&path, jwks.to_string()).expect("write JWKS");
        let validator = JwtValidator::new(OAuthConfig {
            resource: "https://mcp.test/mcp".into(),
            issuers: vec![IssuerConfig {
                issuer: "https://idp.test".into(),
                jwks_file: Some(path),
                jwks_url: None,
                tenant_claim: "tenant".into(),
            }],
            required_scopes: Vec::new(),
            leeway_secs: 60,
        })
        .expect("validator");
        let header = b64(json!({"alg": "EdDSA", "kid": "k"}).to_string().as_bytes());
        let claims = json!({"iss": "https://idp.test", "aud": "https://mcp.test/mcp", "sub": "s",
            "tenant": "t", "exp": unix_now() + 600});
        let payload = b64(claims.to_string().as_bytes());
        let input = format!("{header}.{payload}");
        let token = format!("{input}.{}", b64(pair.sign(input.as_bytes()).as_ref()));
        (dir, validator, token)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    }

    #[test]
    fn garbage_tokens_are_invalid_without_panicking() {
        let (_dir, validator, good) = validator_and_token();
        let header = |json: &str| b64(json.as_bytes());
        let huge_header = format!(
            "{}.e30.c2ln",
            header(&format!(
                "{{\"alg\":\"EdDSA\",\"x\":\"{}\"}}",
                "a".repeat(20_000)
            ))
        );
        let garbage = [
            String::new(),
            ".".into(),
            "..".into(),
            "...".into(),
            "abc".into(),
            "abc.def".into(),
            "a.b.c.d".into(),
            "a.b.c.d.e".into(),
            "!!!.@@@.###".into(),
            "e30=.e30=.c2ln".into(),
            format!("{}.e30.", header("{\"alg\":\"EdDSA\"}")),
            format!("{}.e30.c2ln", header("[1,2,3]")),
            format!("{}.e30.c2ln", header("\"EdDSA\"")),
            format!("{}.e30.c2ln", header("null")),
            format!("{}.e30.c2ln", header("{\"alg\":7}")),
            format!("{}.e30.c2ln", header("{\"alg\":\"EdDSA\",\"kid\":[]}")),
            format!(
                "{}.e30.c2ln",
                header("{\"alg\":\"EdDSA\",\"crit\":[\"b64\"]}")
            ),
            format!(
                "{}.{}.c2ln",
                header("{\"alg\":\"EdDSA\"}"),
                header("[\"iss\"]")
            ),
            format!(
                "{}.{}.c2ln",
                header("{\"alg\":\"EdDSA\"}"),
                header("{\"iss\":1}")
            ),
            format!(
                "{}.{}.c2ln",
                header("{\"alg\":\"EdDSA\"}"),
                header("{\"iss\":\"https://idp.test\"}")
            ),
            format!("{}.{}.c2ln", header(&"[".repeat(5000)), header("{}")),
            huge_header,
            "é.ü.ß".into(),
            good.replace('.', ".."),
            format!("{good}."),
            format!(".{good}"),
            good.chars().rev().collect(),
        ];
        let runtime = runtime();
        for token in &garbage {
            let outcome = runtime.block_on(validator.validate(token));
            assert!(
                matches!(outcome, Err(JwtRejection::Invalid { .. })),
                "{token:.80}: {outcome:?}"
            );
        }
        assert!(
            runtime.block_on(validator.validate(&good)).is_ok(),
            "the unmodified token is valid"
        );
    }

    #[test]
    fn mutated_tokens_never_panic() {
        let (_dir, validator, good) = validator_and_token();
        let seed = unix_now() ^ 0x9e37_79b9_7f4a_7c15;
        println!("seed {seed}");
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"ABCabc019-_.=+/ {}\"";
        let runtime = runtime();
        for _ in 0..500 {
            let mut bytes = good.clone().into_bytes();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() % bytes.len() as u64) as usize;
                match next() % 3 {
                    0 => bytes[at] = alphabet[(next() % alphabet.len() as u64) as usize],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, alphabet[(next() % alphabet.len() as u64) as usize]),
                }
            }
            let token = String::from_utf8(bytes).expect("ASCII stays UTF-8");
            if token == good {
                continue;
            }
            // Base64url is decoded strictly (one encoding per byte string),
            // so every change alters the signed text or the signature.
            if let Ok(identity) = runtime.block_on(validator.validate(&token)) {
                panic!("seed {seed}: mutated token {token} was accepted as {identity:?}");
            }
        }
    }

    #[test]
    fn oversized_tokens_are_refused_before_parsing() {
        let (_dir, validator, good) = validator_and_token();
        let padded = format!("{good}{}", "A".repeat(MAX_TOKEN_BYTES));
        let outcome = runtime().block_on(validator.validate(&padded));
        let Err(JwtRejection::Invalid { reason }) = outcome else {
            panic!("oversized token: {outcome:?}");
        };
        assert!(reason.contains("at most 16384"), "{reason}");
    }

    #[test]
    fn numeric_dates_accept_fractions_and_refuse_negatives() {
        let claims = |value: Value| {
            json!({ "exp": value })
                .as_object()
                .cloned()
                .expect("object")
        };
        assert_eq!(numeric_date(&claims(json!(5)), "exp"), Ok(Some(5)));
        assert_eq!(numeric_date(&claims(json!(5.9)), "exp"), Ok(Some(5)));
        assert_eq!(
            numeric_date(&claims(json!(1e300)), "exp"),
            Ok(Some(u64::MAX))
        );
        assert!(numeric_date(&claims(json!(-1)), "exp").is_err());
        assert!(numeric_date(&claims(json!("5")), "exp").is_err());
        assert_eq!(numeric_date(&claims(json!(5)), "nbf"), Ok(None));
    }

    #[test]
    fn tenant_names_follow_the_pattern() {
        for good in ["a", "acme-corp_2", &"x".repeat(64)] {
            assert!(is_tenant_name(good), "{good}");
        }
        for bad in ["", "a b", "a/b", "ü", "a.b", &"x".repeat(65)] {
            assert!(!is_tenant_name(bad), "{bad}");
        }
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims = |value: Value| value.as_object().cloned().expect("object");
        assert_eq!(
            token_scopes(&claims(json!({"scope": "a  b"}))),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            token_scopes(&claims(json!({"scp": ["a", "b"]}))),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            token_scopes(&claims(json!({"scp": "a b"}))),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(token_scopes(&claims(json!({}))), Ok(Vec::new()));
        assert!(token_scopes(&claims(json!({"scope": ["a"]}))).is_err());
        assert!(token_scopes(&claims(json!({"scp": [1]}))).is_err());
    }

    #[test]
    fn configuration_errors_name_the_offending_key() {
        let issuer = |name: &str| IssuerConfig {
            issuer: name.into(),
            jwks_file: Some("/nonexistent/jwks.json".into()),
            jwks_url: None,
            tenant_claim: "tenant".into(),
        };
        let base = OAuthConfig {
            resource: "https://mcp.test/mcp".into(),
            issuers: vec![issuer("a")],
            required_scopes: Vec::new(),
            leeway_secs: 60,
        };
        let error_of = |change: &dyn Fn(&mut OAuthConfig)| {
            let mut config = base.clone();
            change(&mut config);
            config.validate().expect_err("invalid").to_string()
        };
        assert!(error_of(&|c| c.resource = " ".into()).contains("edge.oauth.resource"));
        assert!(error_of(&|c| c.issuers.clear()).contains("edge.oauth.issuers is empty"));
        assert!(
            error_of(&|c| c.issuers.push(issuer("a")))
                .contains("issuers[1]: issuer \"a\" is listed twice")
        );
        assert!(
            error_of(&|c| c.issuers[0].jwks_file = None)
                .contains("issuers[0] (a): set `jwks_file` or `jwks_url`")
        );
        assert!(
            error_of(&|c| c.issuers[0].jwks_url = Some("https://idp/jwks".into())).contains("both")
        );
        assert!(
            error_of(&|c| {
                c.issuers[0].jwks_file = None;
                c.issuers[0].jwks_url = Some("file:///etc/jwks".into());
            })
            .contains("issuers[0].jwks_url (a)")
        );
        assert!(
            error_of(&|c| c.issuers[0].tenant_claim.clear()).contains("issuers[0].tenant_claim")
        );
        assert!(error_of(&|c| c.required_scopes = vec!["a b".into()]).contains("required_scopes"));
        let missing = JwtValidator::new(base.clone())
            .expect_err("no such file")
            .to_string();
        assert!(
            missing.contains("issuers[0].jwks_file (a): cannot read /nonexistent/jwks.json"),
            "{missing}"
        );
    }

    #[test]
    fn config_reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let config: OAuthConfig = toml::from_str(
            r#"
            resource = "https://mcp.test/mcp"
            [[issuers]]
            issuer = "https://idp.test"
            jwks_url = "https://idp.test/jwks"
            "#,
        )
        .expect("config");
        assert_eq!(config.leeway_secs, 60);
        assert!(config.required_scopes.is_empty());
        assert_eq!(config.issuers[0].tenant_claim, "tenant");
        assert_eq!(config.validate().map_err(|error| error.to_string()), Ok(()));
        let unknown =
            toml::from_str::<OAuthConfig>("resource = \"r\"\nissuers = []\naudience = \"x\"\n");
        assert!(unknown.is_err());
        let unknown_in_issuer = toml::from_str::<OAuthConfig>(
            "resource = \"r\"\n[[issuers]]\nissuer = \"i\"\njwks = \"x\"\n",
        );
        assert!(unknown_in_issuer.is_err());
    }

    #[test]
    fn validator_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<JwtValidator>();
    }
}
