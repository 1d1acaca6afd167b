//! Each trusted issuer's signing keys (a JWKS read from a file or an http(s)
//! URL), cached, and re-read on an unknown key id at most once per interval.
//! `jsonwebtoken` parses the keys (`Jwk`) and checks signatures; this module
//! is the edge's policy: which keys it uses for which algorithm, the floor on
//! key strength, and when to re-read. Keys a token names (`jku`, `x5u`, `jwk`)
//! are never fetched or used.

use std::{
    io::{self, Read},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use arc_swap::ArcSwap;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT};
use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse},
};
use serde_json::{Map, Value};

/// The largest JWKS document read from a file or a URL, in bytes.
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// Whether the edge accepts `alg`: RSA (PKCS#1 v1.5 and PSS), ECDSA on
/// P-256 and P-384, and EdDSA. HMAC is refused (a resource server holds no
/// shared secret), and `none` is no `Algorithm` at all.
///
/// ```
/// use jsonwebtoken::Algorithm;
/// use quiver_edge::auth::jwks::is_accepted;
/// assert!(is_accepted(Algorithm::ES256) && !is_accepted(Algorithm::HS256));
/// ```
pub fn is_accepted(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA
    )
}

/// The key type that verifies `alg`: `None` for RSA, else the curve.
fn curve_of(alg: Algorithm) -> Option<EllipticCurve> {
    match alg {
        Algorithm::ES256 => Some(EllipticCurve::P256),
        Algorithm::ES384 => Some(EllipticCurve::P384),
        Algorithm::EdDSA => Some(EllipticCurve::Ed25519),
        _ => None,
    }
}

/// Why bytes are not a JWKS document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The document is bigger than [`MAX_JWKS_BYTES`].
    #[error("the JWKS is larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
    /// The document is not a JSON object.
    #[error("the JWKS is not a JSON object: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The object has no `keys` array.
    #[error("the JWKS has no \"keys\" array; expected {{\"keys\": [ ... ]}}")]
    NoKeysArray,
    /// No key in the set can verify a token signature.
    #[error(
        "the JWKS holds no usable signing key (RSA of 2048-8192 bits, EC P-256 or P-384, or OKP Ed25519, with \"use\" absent or \"sig\"){}",
        if skipped.is_empty() { String::new() } else { format!("; skipped: {}", skipped.join("; ")) }
    )]
    NoUsableKey {
        /// Why each key that was present was left out.
        skipped: Vec<String>,
    },
}

/// What is wrong with a key of a set.
#[derive(Debug, thiserror::Error)]
enum KeyProblem {
    #[error("not a readable JWK ({0})")]
    Unreadable(serde_json::Error),
    #[error("\"alg\": {0:?} does not fit the key type")]
    AlgMismatch(Algorithm),
    #[error("RSA modulus of {0} bits; 2048 to 8192 bits are accepted")]
    RsaBits(usize),
    #[error("{0:?} key members must be {1} bytes each")]
    Length(EllipticCurve, usize),
    #[error("not a usable public key ({0})")]
    NotAKey(jsonwebtoken::errors::Error),
}

/// Why a JWKS could not be read (a re-read keeps the previous keys).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{url}: {source}")]
    Request { url: String, source: reqwest::Error },
    #[error("{url}: answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: body larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{from}: {source}")]
    Document { from: String, source: JwksError },
}

/// Why an issuer has no key for a token (server logs only).
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyFailure {
    /// The set has keys for the token, but none it may use.
    #[error("{0}")]
    Refused(String),
    /// The set has no key for the token; a fresher set might.
    #[error("{0}")]
    Missing(String),
    #[error("{0}, also after re-reading the JWKS")]
    StillMissing(String),
    #[error("{0}; JWKS re-read less than {1:?} ago")]
    RefetchTooSoon(String, Duration),
    #[error("{0}; re-reading the JWKS failed: {1}")]
    RefetchFailed(String, FetchError),
}

/// One usable key of a JWKS.
#[derive(Debug)]
struct SigningKey {
    kid: Option<String>,
    /// The `alg` the key is restricted to, when the JWK names one.
    alg: Option<Algorithm>,
    /// `None` for RSA, else the key's curve.
    curve: Option<EllipticCurve>,
    key: DecodingKey,
}

impl SigningKey {
    /// Whether this key may verify a signature made with `alg`.
    fn accepts(&self, alg: Algorithm) -> bool {
        self.alg.is_none_or(|declared| declared == alg) && curve_of(alg) == self.curve
    }

    /// The key a JWK describes: `Ok(None)` for one not for signatures,
    /// restricted to an algorithm the edge refuses, or of a type it does not
    /// verify (`oct`, other curves); `Err` for one malformed or below the
    /// floor (RSA moduli of 2048 to 8192 bits, EC and Ed25519 members of
    /// their curve's size).
    fn from_jwk(jwk: &Jwk) -> Result<Option<SigningKey>, KeyProblem> {
        let common = &jwk.common;
        let usage = common.public_key_use.as_ref();
        let operations = common.key_operations.as_ref();
        if !usage.is_none_or(|usage| *usage == PublicKeyUse::Signature)
            || !operations.is_none_or(|ops| ops.contains(&KeyOperations::Verify))
        {
            return Ok(None);
        }
        // A key restricted to an algorithm the edge refuses (HS256, RSA-OAEP)
        // can never verify a token.
        let alg = match common.key_algorithm.map(|named| named.to_string().parse()) {
            Some(Ok(alg)) if is_accepted(alg) => Some(alg),
            Some(_) => return Ok(None),
            None => None,
        };
        let (curve, members, size) = match &jwk.algorithm {
            AlgorithmParameters::RSA(rsa) => (None, vec![&rsa.n], 0),
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                (Some(ec.curve.clone()), vec![&ec.x, &ec.y], 32)
            }
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P384 => {
                (Some(ec.curve.clone()), vec![&ec.x, &ec.y], 48)
            }
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                (Some(okp.curve.clone()), vec![&okp.x], 32)
            }
            _ => return Ok(None),
        };
        if let Some(alg) = alg
            && curve_of(alg) != curve
        {
            return Err(KeyProblem::AlgMismatch(alg));
        }
        // jsonwebtoken refuses members that are not base64url; the sizes are
        // checked here.
        let key = DecodingKey::from_jwk(jwk).map_err(KeyProblem::NotAKey)?;
        let decoded = |text: &str| URL_SAFE_NO_PAD_INDIFFERENT.decode(text).unwrap_or_default();
        match &curve {
            None => {
                let bits = decoded(members[0]).iter().skip_while(|b| **b == 0).count() * 8;
                if !(2048..=8192).contains(&bits) {
                    return Err(KeyProblem::RsaBits(bits));
                }
            }
            Some(curve) if members.iter().any(|member| decoded(member).len() != size) => {
                return Err(KeyProblem::Length(curve.clone(), size));
            }
            Some(_) => {}
        }
        let kid = common.key_id.clone();
        Ok(Some(SigningKey {
            kid,
            alg,
            curve,
            key,
        }))
    }
}

/// The usable signing keys of one JWKS document.
#[derive(Debug, Default)]
pub struct KeySet {
    keys: Vec<SigningKey>,
    /// Why each malformed key was left out, for the operator's log.
    skipped: Vec<String>,
}

impl KeySet {
    /// The signing keys of a JWKS document (`{"keys": [...]}`). Keys not for
    /// signatures (`use` other than `sig`), of a type the edge does not
    /// verify, or malformed are left out; a document left with no key at all
    /// is an error.
    pub fn from_json(document: &[u8]) -> Result<KeySet, JwksError> {
        if document.len() > MAX_JWKS_BYTES {
            return Err(JwksError::TooLarge);
        }
        let object: Map<String, Value> =
            serde_json::from_slice(document).map_err(JwksError::NotJson)?;
        let entries = object.get("keys").and_then(Value::as_array);
        let mut set = KeySet::default();
        for (index, entry) in entries.ok_or(JwksError::NoKeysArray)?.iter().enumerate() {
            if !entry.is_object() {
                set.skipped.push(format!("keys[{index}] is not an object"));
                continue;
            }
            let key = serde_json::from_value(entry.clone())
                .map_err(KeyProblem::Unreadable)
                .and_then(|jwk| SigningKey::from_jwk(&jwk));
            match key {
                Ok(Some(key)) => set.keys.push(key),
                Ok(None) => {}
                Err(problem) => {
                    let kid = entry.get("kid").and_then(Value::as_str);
                    let kid = kid.map_or("key without kid".into(), |kid| format!("key {kid:?}"));
                    set.skipped.push(format!("keys[{index}] {kid}: {problem}"));
                }
            }
        }
        if set.keys.is_empty() {
            return Err(JwksError::NoUsableKey {
                skipped: set.skipped,
            });
        }
        Ok(set)
    }

    /// How many usable signing keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set holds no usable signing key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Why each malformed key of the document was left out.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// The key for a token signed with `alg` under `kid`; without a `kid`,
    /// the one key that can verify `alg`, if there is exactly one.
    fn choose(&self, kid: Option<&str>, alg: Algorithm) -> Result<&DecodingKey, KeyFailure> {
        let fitting = |key: &&SigningKey| key.accepts(alg);
        let Some(kid) = kid else {
            let mut keys = self.keys.iter().filter(fitting);
            return match (keys.next(), keys.next()) {
                (Some(key), None) => Ok(&key.key),
                (None, _) => Err(KeyFailure::Missing(format!("no kid and no {alg:?} key"))),
                _ => Err(KeyFailure::Refused(format!(
                    "no kid and several {alg:?} keys to choose from"
                ))),
            };
        };
        let mut named = self
            .keys
            .iter()
            .filter(|key| key.kid.as_deref() == Some(kid));
        let Some(first) = named.next() else {
            return Err(KeyFailure::Missing(format!("no key with kid {kid:?}")));
        };
        match std::iter::once(first).chain(named).find(fitting) {
            Some(key) => Ok(&key.key),
            None => Err(KeyFailure::Refused(format!(
                "key {kid:?} cannot verify {alg:?}"
            ))),
        }
    }
}

/// Where an issuer's JWKS comes from.
#[derive(Debug)]
pub(crate) enum JwksSource {
    /// A local file, re-read on refetch.
    File(PathBuf),
    /// An http(s) URL, fetched with the shared client (5-second timeout).
    Url(reqwest::Url, reqwest::Client),
}

impl JwksSource {
    /// The current key set at the source. A URL's body past
    /// [`MAX_JWKS_BYTES`] is refused as it arrives.
    async fn fetch(&self) -> Result<KeySet, FetchError> {
        let (from, document) = match self {
            JwksSource::File(path) => {
                let reading = path.clone();
                let read = tokio::task::spawn_blocking(move || read_file(&reading)).await;
                let path = path.clone();
                let document = (read.unwrap_or_else(|stopped| Err(io::Error::other(stopped))))
                    .map_err(|source| FetchError::Read {
                        path: path.clone(),
                        source,
                    })?;
                (path.display().to_string(), document)
            }
            JwksSource::Url(url, client) => {
                let url_text = url.to_string();
                let request = |source| FetchError::Request {
                    url: url_text.clone(),
                    source,
                };
                let accept = (reqwest::header::ACCEPT, "application/json");
                let answer = client.get(url.clone()).header(accept.0, accept.1).send();
                let mut response = answer.await.map_err(request)?;
                if !response.status().is_success() {
                    let status = response.status().as_u16();
                    return Err(FetchError::Status {
                        url: url_text,
                        status,
                    });
                }
                let mut body = Vec::new();
                while let Some(chunk) = response.chunk().await.map_err(request)? {
                    if body.len() + chunk.len() > MAX_JWKS_BYTES {
                        return Err(FetchError::TooLarge { url: url_text });
                    }
                    body.extend_from_slice(&chunk);
                }
                (url_text, body)
            }
        };
        KeySet::from_json(&document).map_err(|source| FetchError::Document { from, source })
    }
}

/// A JWKS file's first [`MAX_JWKS_BYTES`] + 1 bytes (more is refused as
/// [`JwksError::TooLarge`]).
pub(crate) fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut document = Vec::new();
    let file = std::fs::File::open(path)?;
    (file.take(MAX_JWKS_BYTES as u64 + 1)).read_to_end(&mut document)?;
    Ok(document)
}

/// The HTTP client for JWKS URLs: rustls with ring, a 5-second timeout.
pub(crate) fn jwks_http_client() -> Result<reqwest::Client, reqwest::Error> {
    // reqwest takes the process-wide crypto provider; the edge ships ring
    // only. A concurrent caller may win the race; either way ring is installed.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let timeout = Duration::from_secs(5);
    let builder = reqwest::Client::builder().timeout(timeout);
    builder.connect_timeout(timeout).build()
}

/// One issuer's keys: the cached set, its source, and when a token last made
/// it be re-read (`None` until one does; held across the fetch so that
/// concurrent misses fetch once).
#[derive(Debug)]
pub(crate) struct IssuerKeys {
    issuer: String,
    source: JwksSource,
    keys: ArcSwap<KeySet>,
    last_refetch: tokio::sync::Mutex<Option<Instant>>,
}

impl IssuerKeys {
    /// Keys for `issuer` from `source`, starting with `initial` (empty for a
    /// URL, fetched on first use).
    pub(crate) fn new(issuer: String, source: JwksSource, initial: KeySet) -> IssuerKeys {
        log_skipped_keys(&issuer, &initial);
        IssuerKeys {
            issuer,
            source,
            keys: ArcSwap::from_pointee(initial),
            last_refetch: tokio::sync::Mutex::new(None),
        }
    }

    /// The key `kid` names, or the only key for `alg`. A key the cached
    /// set lacks makes the set be re-read, at most once per `interval`.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        interval: Duration,
    ) -> Result<DecodingKey, KeyFailure> {
        let missing = match self.keys.load().choose(kid, alg) {
            Err(KeyFailure::Missing(missing)) => missing,
            chosen => return chosen.cloned(),
        };
        let refetched = self.refetch(interval).await;
        // Another task may have refreshed the set while this one waited.
        match self.keys.load().choose(kid, alg) {
            Err(KeyFailure::Missing(_)) => Err(match refetched {
                Some(Ok(())) => KeyFailure::StillMissing(missing),
                Some(Err(error)) => KeyFailure::RefetchFailed(missing, error),
                None => KeyFailure::RefetchTooSoon(missing, interval),
            }),
            chosen => chosen.cloned(),
        }
    }

    /// Re-reads the set unless it was re-read within `interval` (`None`); a
    /// failed read keeps the old set.
    async fn refetch(&self, interval: Duration) -> Option<Result<(), FetchError>> {
        let mut last = self.last_refetch.lock().await;
        if last.is_some_and(|at| at.elapsed() < interval) {
            return None;
        }
        *last = Some(Instant::now());
        let issuer = &self.issuer;
        Some(match self.source.fetch().await {
            Ok(keys) => {
                tracing::info!(issuer, keys = keys.len(), "JWKS re-read");
                log_skipped_keys(issuer, &keys);
                self.keys.store(Arc::new(keys));
                Ok(())
            }
            Err(error) => {
                tracing::warn!(issuer, %error, "JWKS re-read failed; keeping the previous keys");
                Err(error)
            }
        })
    }
}

/// Tells the operator which keys of `issuer`'s JWKS were left out and why.
fn log_skipped_keys(issuer: &str, keys: &KeySet) {
    if !keys.skipped().is_empty() {
        tracing::warn!(issuer, skipped = %keys.skipped().join("; "), "JWKS keys left out");
    }
}
