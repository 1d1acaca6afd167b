//! OAuth 2.1 bearer tokens as a resource server sees them: a compact JWS whose
//! signature and registered claims (`iss`, `aud`, `exp`, `nbf`) are checked
//! by `jsonwebtoken` against its issuer's JWKS, then the edge's own policy
//! (accepted algorithms, no `crit` extensions, `iat` not in the future,
//! subject, tenant, scopes). It says who is calling; the reason for a
//! refusal is for the server log only and must never reach the caller.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde_json::{Map, Value};

use super::jwks::{self, IssuerKeys, JwksSource, KeySet};
use super::oauth_config::KeySource;
pub use super::oauth_config::{IssuerConfig, JwtConfigError, OAuthConfig};

/// Tokens longer than this many bytes are refused without being parsed.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The shortest time between two re-reads of one issuer's JWKS caused by
/// tokens naming a key the cached set lacks.
pub const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// The longest `kid` a token may carry.
const MAX_KID_BYTES: usize = 256;

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
            let (source, initial) = match issuer.key_source(index)? {
                KeySource::File(path) => {
                    let document =
                        jwks::read_file(path).map_err(|source| JwtConfigError::ReadJwksFile {
                            index,
                            issuer: name.clone(),
                            path: path.to_owned(),
                            source,
                        })?;
                    let set = KeySet::from_json(&document).map_err(|source| {
                        JwtConfigError::BadJwksFile {
                            index,
                            issuer: name.clone(),
                            path: path.to_owned(),
                            source,
                        }
                    })?;
                    (JwksSource::File(path.to_owned()), set)
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
                        None => http
                            .insert(jwks::jwks_http_client().map_err(JwtConfigError::HttpClient)?)
                            .clone(),
                    };
                    (JwksSource::Url(url, client), KeySet::default())
                }
            };
            keys.push(IssuerKeys::new(name, source, initial));
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
        let (alg, kid) = screen(token)?;
        // `iss` picks the keys; nothing else in the payload is read until the
        // signature verifies.
        let unverified: Map<String, Value> = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|e| invalid(format!("payload is not a JSON object ({e})")))?;
        let issuer_name = match unverified.get("iss") {
            Some(Value::String(issuer)) => issuer.as_str(),
            _ => return Err(invalid("no string \"iss\" claim")),
        };
        let mut issuers = self.config.issuers.iter().zip(&self.keys);
        let Some((issuer, keys)) = issuers.find(|(issuer, _)| issuer.issuer == issuer_name) else {
            return Err(invalid(format!(
                "untrusted issuer {}",
                excerpt(issuer_name)
            )));
        };
        let mut rules = Validation::new(alg);
        rules.leeway = self.config.leeway_secs;
        rules.validate_nbf = true;
        rules.set_required_spec_claims(&["exp", "iss", "aud"]);
        rules.set_issuer(&[&issuer.issuer]);
        rules.set_audience(&[&self.config.resource]);
        let key = (keys.key(kid.as_deref(), alg, self.refetch_interval).await)
            .map_err(|failure| invalid(format!("issuer {}: {failure}", issuer.issuer)))?;
        let claims = self.decode(token, &key, &rules, alg)?;
        self.check_claims(issuer, &claims)
    }

    /// The claims of `token` if `key` signed it and its registered claims
    /// hold under `rules`; else why not.
    fn decode(
        &self,
        token: &str,
        key: &DecodingKey,
        rules: &Validation,
        alg: Algorithm,
    ) -> Result<Map<String, Value>, JwtRejection> {
        let (leeway, now) = (rules.leeway, unix_now());
        let audience = || format!("\"aud\" does not contain {:?}", self.config.resource);
        let decoded = jsonwebtoken::decode::<Map<String, Value>>(token, key, rules);
        decoded.map(|data| data.claims).map_err(|error| {
            invalid(match error.kind() {
                ErrorKind::InvalidSignature => format!("{alg:?} signature does not verify"),
                ErrorKind::ExpiredSignature => {
                    format!("expired (beyond the leeway of {leeway} s), now {now}")
                }
                ErrorKind::ImmatureSignature => format!(
                    "not valid before its \"nbf\" (beyond the leeway of {leeway} s), now {now}"
                ),
                ErrorKind::InvalidAudience => audience(),
                ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => audience(),
                ErrorKind::MissingRequiredClaim(claim) => format!("no \"{claim}\" claim"),
                ErrorKind::InvalidClaimFormat(claim) => {
                    format!("\"{claim}\" is not a whole number of seconds")
                }
                _ => format!("refused by jsonwebtoken: {error}"),
            })
        })
    }

    /// The identity in `claims`, which carry a verified signature of
    /// `issuer` and registered claims `jsonwebtoken` checked.
    fn check_claims(
        &self,
        issuer: &IssuerConfig,
        claims: &Map<String, Value>,
    ) -> Result<TokenIdentity, JwtRejection> {
        let now = unix_now();
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid("no \"exp\" claim"))?;
        let latest = now.saturating_add(self.config.leeway_secs) as f64;
        match claims.get("iat") {
            None => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|iat| iat <= latest) => {}
            Some(Value::Number(n)) => {
                return Err(invalid(format!("issued in the future at {n}, now {now}")));
            }
            Some(_) => return Err(invalid("\"iat\" is not a number of seconds")),
        }
        let subject = match claims.get("sub") {
            Some(Value::String(subject)) if !subject.is_empty() => subject.clone(),
            _ => return Err(invalid("no non-empty string \"sub\" claim")),
        };
        let claim = &issuer.tenant_claim;
        let tenant = match claims.get(claim) {
            Some(Value::String(tenant)) if is_tenant_name(tenant) => tenant.clone(),
            Some(_) => Err(invalid(format!(
                "tenant claim {claim:?} is not a string of 1 to 64 letters, digits, '_' or '-'"
            )))?,
            None => Err(invalid(format!("no tenant claim {claim:?}")))?,
        };
        let scopes = token_scopes(claims)?;
        let required = &self.config.required_scopes;
        if !required.iter().all(|scope| scopes.contains(scope)) {
            let required = required.clone();
            return Err(JwtRejection::InsufficientScope { required });
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

/// What the edge refuses before any key is looked up: oversized tokens,
/// anything but a compact JWS (a JWE has five segments), algorithms other
/// than the accepted asymmetric ones (`none` and HMAC among them), `crit`
/// extensions (RFC 7515 §4.1.11: the edge understands none), and overlong
/// key ids. The algorithm and key id, when it passes.
fn screen(token: &str) -> Result<(Algorithm, Option<String>), JwtRejection> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(invalid(format!(
            "{} bytes; tokens of at most {MAX_TOKEN_BYTES} are read",
            token.len()
        )));
    }
    match token.matches('.').count() {
        2 => {}
        4 => {
            return Err(invalid(
                "an encrypted JWE is not accepted, only a signed JWS",
            ));
        }
        _ => return Err(invalid("not a compact JWS (header.payload.signature)")),
    }
    let header = jsonwebtoken::decode_header(token).map_err(|error| {
        // jsonwebtoken reads only algorithms it knows: say which was named.
        match header_alg(token) {
            Some(Value::String(name)) => {
                invalid(format!("algorithm {} is not accepted", excerpt(&name)))
            }
            Some(_) => invalid("header has no string \"alg\""),
            None => invalid(format!("header is not a JWS header ({error})")),
        }
    })?;
    let alg = header.alg;
    if !jwks::is_accepted(alg) {
        return Err(invalid(format!("algorithm \"{alg:?}\" is not accepted")));
    }
    if header.crit.is_some() {
        return Err(invalid("header lists \"crit\" extensions"));
    }
    if header
        .kid
        .as_ref()
        .is_some_and(|kid| kid.len() > MAX_KID_BYTES)
    {
        let too_long = format!("\"kid\" is not a string of at most {MAX_KID_BYTES} bytes");
        return Err(invalid(too_long));
    }
    Ok((alg, header.kid))
}

/// The `alg` member of a header `jsonwebtoken` would not read (`Null` when
/// absent), for the refusal's reason only; `None` when the header is not a
/// JSON object at all.
fn header_alg(token: &str) -> Option<Value> {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let segment = token.split('.').next()?;
    let bytes = URL_SAFE_NO_PAD.decode(segment).ok()?;
    let header: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    Some(header.get("alg").cloned().unwrap_or(Value::Null))
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
    let split = |scopes: &str| -> Vec<String> {
        scopes
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scopes)), _) | (None, Some(Value::String(scopes))) => Ok(split(scopes)),
        (Some(_), _) => Err(invalid("\"scope\" is not a string")),
        (None, Some(Value::Array(scopes))) => (scopes.iter())
            .map(|scope| scope.as_str().map(str::to_owned))
            .collect::<Option<_>>()
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
