//! JSON Web Key Sets: each trusted issuer's signing keys, read from a file or
//! fetched over HTTP, cached, and re-read on an unknown key id at most once per
//! interval. Keys are parsed (`jsonwebtoken::jwk::Jwk`) and signatures checked
//! by `jsonwebtoken`; this module holds only the edge's policy: which keys of
//! a set it will use for which algorithm, the floor on key strength, and when
//! to re-read the set. Keys named inside a token (`jku`, `x5u`, `jwk`) are
//! never fetched or used.

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

/// How long one JWKS fetch over HTTP may take, connection to last byte.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The JWS algorithm a JOSE `alg` value names, if the edge accepts it:
/// RSA (PKCS#1 v1.5 and PSS), ECDSA on P-256 and P-384, and EdDSA. `none`
/// and the HMAC family are refused on purpose: a resource server holds no
/// shared secret, and a token that names them is refused before any key is
/// looked up.
///
/// ```
/// use quiver_edge::auth::jwks::accepted_algorithm;
/// assert_eq!(accepted_algorithm("ES256"), Some(jsonwebtoken::Algorithm::ES256));
/// assert_eq!(accepted_algorithm("HS256"), None);
/// assert_eq!(accepted_algorithm("none"), None);
/// ```
pub fn accepted_algorithm(name: &str) -> Option<Algorithm> {
    name.parse().ok().filter(|alg| is_accepted(*alg))
}

/// Whether the edge accepts `alg` (see [`accepted_algorithm`]).
pub fn is_accepted(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA
    )
}

/// The key types (with their curve) the edge verifies signatures with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyKind {
    /// The kind of key that verifies `alg`.
    fn verifying(alg: Algorithm) -> KeyKind {
        match alg {
            Algorithm::ES256 => KeyKind::P256,
            Algorithm::ES384 => KeyKind::P384,
            Algorithm::EdDSA => KeyKind::Ed25519,
            _ => KeyKind::Rsa,
        }
    }
}

/// Why bytes are not a JWKS document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The document is bigger than [`MAX_JWKS_BYTES`].
    #[error("the JWKS is larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
    /// The document is not JSON, or not an object.
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

/// Why a key was left out of a set, naming it by its `kid`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", match kid { Some(kid) => format!("key {kid:?}"), None => "key without kid".to_owned() })]
struct KeyRejection {
    kid: Option<String>,
    problem: KeyProblem,
}

/// What is wrong with a key.
#[derive(Debug, thiserror::Error)]
enum KeyProblem {
    /// `jsonwebtoken` cannot read it as a JWK.
    #[error("not a readable JWK ({0})")]
    Unreadable(serde_json::Error),
    /// Its `alg` needs another key type.
    #[error("\"alg\": {0:?} does not fit the key type")]
    AlgMismatch(Algorithm),
    /// A member is not base64url.
    #[error("\"{0}\" is not base64url")]
    NotBase64(&'static str),
    /// An RSA modulus out of range.
    #[error("RSA modulus of {0} bits; 2048 to 8192 bits are accepted")]
    RsaBits(usize),
    /// Coordinates or a public key not of the curve's size.
    #[error("{0:?} key members must be {1} bytes each")]
    Length(KeyKind, usize),
    /// `jsonwebtoken` cannot make a public key of it.
    #[error("not a usable public key ({0})")]
    NotAKey(jsonwebtoken::errors::Error),
}

/// Why a JWKS could not be re-read (the previous keys stay).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// The URL could not be fetched.
    #[error("{url}: {source}")]
    Url {
        url: reqwest::Url,
        source: UrlFetchError,
    },
    /// The file's or the URL's document is not a usable JWKS.
    #[error("{from}: {source}")]
    Document { from: String, source: JwksError },
}

/// Why a JWKS URL gave no document.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UrlFetchError {
    /// The request failed.
    #[error("{0}")]
    Request(reqwest::Error),
    /// The server did not answer with success.
    #[error("answered HTTP {0}")]
    Status(reqwest::StatusCode),
    /// The body is too large.
    #[error("body larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
}

/// Why no key verified a token (for server logs only); `E` is why the
/// token's check failed with the key chosen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyFailure<E> {
    /// The key was found; the token's check failed.
    #[error("{0}")]
    Check(E),
    /// The set has keys for the token, but none it may use.
    #[error("{0}")]
    Refused(String),
    /// No key, also after re-reading the set.
    #[error("{missing}, also after re-reading the JWKS")]
    StillMissing { missing: String },
    /// No key, and the set was re-read too recently to read it again.
    #[error("{missing}; JWKS re-read less than {interval:?} ago")]
    RefetchTooSoon { missing: String, interval: Duration },
    /// No key, and re-reading the set failed.
    #[error("{missing}; re-reading the JWKS failed: {source}")]
    RefetchFailed { missing: String, source: FetchError },
}

/// One usable key of a JWKS.
#[derive(Debug)]
struct SigningKey {
    kid: Option<String>,
    /// The `alg` the key is restricted to, when the JWK names one.
    alg: Option<Algorithm>,
    kind: KeyKind,
    key: DecodingKey,
}

impl SigningKey {
    /// Whether this key may verify a signature made with `alg`.
    fn accepts(&self, alg: Algorithm) -> bool {
        self.alg.is_none_or(|declared| declared == alg) && KeyKind::verifying(alg) == self.kind
    }

    /// The key a JWK describes: `Ok(None)` for one that is not for
    /// signatures, restricted to an algorithm the edge refuses, or of a type
    /// the edge does not verify (symmetric `oct`, other curves); `Err` for
    /// one that is malformed or below the floor on key strength (RSA moduli
    /// of 2048 to 8192 bits, EC and Ed25519 members of their curve's size).
    fn from_value(entry: &Value) -> Result<Option<SigningKey>, KeyRejection> {
        let jwk: Jwk = serde_json::from_value(entry.clone()).map_err(|e| KeyRejection {
            kid: entry.get("kid").and_then(Value::as_str).map(str::to_owned),
            problem: KeyProblem::Unreadable(e),
        })?;
        let common = &jwk.common;
        let named = |problem| KeyRejection {
            kid: common.key_id.clone(),
            problem,
        };
        let for_signatures = common
            .public_key_use
            .as_ref()
            .is_none_or(|usage| *usage == PublicKeyUse::Signature)
            && common
                .key_operations
                .as_ref()
                .is_none_or(|ops| ops.contains(&KeyOperations::Verify));
        if !for_signatures {
            return Ok(None);
        }
        let alg = match common.key_algorithm {
            None => None,
            Some(named) => match accepted_algorithm(&named.to_string()) {
                Some(alg) => Some(alg),
                // Restricted to an algorithm the edge refuses (HS256,
                // RSA-OAEP for encryption, ...): it can never verify a token.
                None => return Ok(None),
            },
        };
        let decode = |member: &'static str, text: &str| {
            URL_SAFE_NO_PAD_INDIFFERENT
                .decode(text)
                .map_err(|_| named(KeyProblem::NotBase64(member)))
        };
        let sized = |kind, size, members: &[(&'static str, &str)]| {
            for (member, text) in members {
                if decode(member, text)?.len() != size {
                    return Err(named(KeyProblem::Length(kind, size)));
                }
            }
            Ok(kind)
        };
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(rsa) => {
                let bits = decode("n", &rsa.n)?.iter().skip_while(|b| **b == 0).count() * 8;
                if !(2048..=8192).contains(&bits) {
                    return Err(named(KeyProblem::RsaBits(bits)));
                }
                decode("e", &rsa.e)?;
                KeyKind::Rsa
            }
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                sized(KeyKind::P256, 32, &[("x", &ec.x), ("y", &ec.y)])?
            }
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P384 => {
                sized(KeyKind::P384, 48, &[("x", &ec.x), ("y", &ec.y)])?
            }
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                sized(KeyKind::Ed25519, 32, &[("x", &okp.x)])?
            }
            _ => return Ok(None),
        };
        if let Some(alg) = alg
            && KeyKind::verifying(alg) != kind
        {
            return Err(named(KeyProblem::AlgMismatch(alg)));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| named(KeyProblem::NotAKey(e)))?;
        Ok(Some(SigningKey {
            kid: common.key_id.clone(),
            alg,
            kind,
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

/// Which key of a set verifies a token.
enum KeyChoice<'a> {
    /// This key.
    Key(&'a DecodingKey),
    /// The set has no key for the token; a fresher set might.
    Missing(String),
    /// The set has keys for the token, but none it may use; refetching
    /// cannot help.
    Refused(String),
}

impl KeySet {
    /// The signing keys of a JWKS document (`{"keys": [...]}`).
    ///
    /// Keys that are not for signatures (`use` other than `sig`), of a type
    /// the edge does not verify, or malformed are left out; a document left
    /// with no key at all is an error.
    pub fn from_json(document: &[u8]) -> Result<KeySet, JwksError> {
        if document.len() > MAX_JWKS_BYTES {
            return Err(JwksError::TooLarge);
        }
        let object: Map<String, Value> =
            serde_json::from_slice(document).map_err(JwksError::NotJson)?;
        let entries = object
            .get("keys")
            .and_then(Value::as_array)
            .ok_or(JwksError::NoKeysArray)?;
        let mut set = KeySet::default();
        for (index, entry) in entries.iter().enumerate() {
            if !entry.is_object() {
                set.skipped.push(format!("keys[{index}] is not an object"));
                continue;
            }
            match SigningKey::from_value(entry) {
                Ok(Some(key)) => set.keys.push(key),
                Ok(None) => {}
                Err(reason) => set.skipped.push(format!("keys[{index}] {reason}")),
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

    /// The key for a token signed with `alg` under `kid`. Without a `kid`,
    /// the one key that can verify `alg`, if there is exactly one.
    fn choose(&self, kid: Option<&str>, alg: Algorithm) -> KeyChoice<'_> {
        match kid {
            Some(kid) => {
                let mut named = self
                    .keys
                    .iter()
                    .filter(|key| key.kid.as_deref() == Some(kid))
                    .peekable();
                if named.peek().is_none() {
                    return KeyChoice::Missing(format!("no key with kid {kid:?}"));
                }
                match named.find(|key| key.accepts(alg)) {
                    Some(key) => KeyChoice::Key(&key.key),
                    None => KeyChoice::Refused(format!("key {kid:?} cannot verify {alg:?}")),
                }
            }
            None => {
                let mut fitting = self.keys.iter().filter(|key| key.accepts(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => KeyChoice::Key(&key.key),
                    (None, _) => KeyChoice::Missing(format!("no kid and no {alg:?} key")),
                    (Some(_), Some(_)) => KeyChoice::Refused(format!(
                        "no kid and several {alg:?} keys to choose from"
                    )),
                }
            }
        }
    }
}

/// Where an issuer's JWKS comes from.
#[derive(Debug)]
pub(crate) enum JwksSource {
    /// A local file, re-read on refetch.
    File(PathBuf),
    /// An http or https URL, fetched with a 5-second timeout.
    Url {
        /// The JWKS URL.
        url: reqwest::Url,
        /// The HTTP client every URL issuer shares.
        client: reqwest::Client,
    },
}

impl JwksSource {
    /// The current key set at the source.
    async fn fetch(&self) -> Result<KeySet, FetchError> {
        let (from, document) = match self {
            JwksSource::File(path) => {
                let reading = path.clone();
                let document = tokio::task::spawn_blocking(move || read_jwks_file(&reading))
                    .await
                    .unwrap_or_else(|stopped| Err(io::Error::other(stopped)))
                    .map_err(|source| FetchError::Read {
                        path: path.clone(),
                        source,
                    })?;
                (path.display().to_string(), document)
            }
            JwksSource::Url { url, client } => {
                let document = fetch_url(client, url)
                    .await
                    .map_err(|source| FetchError::Url {
                        url: url.clone(),
                        source,
                    })?;
                (url.to_string(), document)
            }
        };
        KeySet::from_json(&document).map_err(|source| FetchError::Document { from, source })
    }
}

/// The contents of a JWKS file, refused past [`MAX_JWKS_BYTES`].
pub(crate) fn read_jwks_file(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut document = Vec::new();
    file.take(MAX_JWKS_BYTES as u64 + 1)
        .read_to_end(&mut document)?;
    if document.len() > MAX_JWKS_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {MAX_JWKS_BYTES} bytes"),
        ));
    }
    Ok(document)
}

/// The body of a JWKS URL, refused on a non-success status or past
/// [`MAX_JWKS_BYTES`] (checked as the body arrives, not only by its
/// announced length).
async fn fetch_url(client: &reqwest::Client, url: &reqwest::Url) -> Result<Vec<u8>, UrlFetchError> {
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(UrlFetchError::Request)?;
    let status = response.status();
    if !status.is_success() {
        return Err(UrlFetchError::Status(status));
    }
    if response
        .content_length()
        .is_some_and(|length| length > MAX_JWKS_BYTES as u64)
    {
        return Err(UrlFetchError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(UrlFetchError::Request)? {
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(UrlFetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The HTTP client for JWKS URLs: rustls with ring, a 5-second timeout.
pub(crate) fn jwks_http_client() -> Result<reqwest::Client, reqwest::Error> {
    // reqwest is built without a crypto provider and takes the process-wide
    // one; the edge ships rustls with ring only, so make that the default
    // unless the binary already chose one.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // A concurrent caller may win the race; either way ring is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .build()
}

/// One issuer's keys: the cached set, where it came from, and when it was
/// last refetched.
#[derive(Debug)]
pub(crate) struct IssuerKeys {
    issuer: String,
    source: JwksSource,
    keys: ArcSwap<KeySet>,
    /// When a token last made the set be re-read; `None` until one does.
    /// Held across the fetch so that concurrent misses fetch once.
    last_refetch: tokio::sync::Mutex<Option<Instant>>,
}

impl IssuerKeys {
    /// Keys for `issuer` from `source`, starting with `initial` (empty for a
    /// URL, fetched on first use).
    pub(crate) fn new(issuer: String, source: JwksSource, initial: KeySet) -> IssuerKeys {
        IssuerKeys {
            issuer,
            source,
            keys: ArcSwap::from_pointee(initial),
            last_refetch: tokio::sync::Mutex::new(None),
        }
    }

    /// Runs `check` (the token's signature and claims) with the key `kid`
    /// names, or the only key for `alg`. A key the cached set lacks makes the
    /// set be re-read, at most once per `refetch_interval`. `Err` holds the
    /// reason, for server logs only.
    pub(crate) async fn verify<T, E>(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        refetch_interval: Duration,
        check: impl Fn(&DecodingKey) -> Result<T, E>,
    ) -> Result<T, KeyFailure<E>> {
        let cached = self.keys.load_full();
        let missing = match cached.choose(kid, alg) {
            KeyChoice::Key(key) => return check(key).map_err(KeyFailure::Check),
            KeyChoice::Refused(reason) => return Err(KeyFailure::Refused(reason)),
            KeyChoice::Missing(reason) => reason,
        };
        let refetch = self.refetch(refetch_interval).await;
        // Another task may have refreshed the set while this one waited.
        let current = self.keys.load_full();
        match current.choose(kid, alg) {
            KeyChoice::Key(key) => check(key).map_err(KeyFailure::Check),
            KeyChoice::Refused(reason) => Err(KeyFailure::Refused(reason)),
            KeyChoice::Missing(_) => Err(match refetch {
                Refetch::Done => KeyFailure::StillMissing { missing },
                Refetch::TooSoon => KeyFailure::RefetchTooSoon {
                    missing,
                    interval: refetch_interval,
                },
                Refetch::Failed(source) => KeyFailure::RefetchFailed { missing, source },
            }),
        }
    }

    /// Re-reads the set unless it was re-read within `interval`; a failed
    /// read keeps the old set.
    async fn refetch(&self, interval: Duration) -> Refetch {
        let mut last = self.last_refetch.lock().await;
        if let Some(at) = *last
            && at.elapsed() < interval
        {
            return Refetch::TooSoon;
        }
        *last = Some(Instant::now());
        match self.source.fetch().await {
            Ok(keys) => {
                tracing::info!(issuer = %self.issuer, keys = keys.len(), "JWKS re-read");
                log_skipped_keys(&self.issuer, &keys);
                self.keys.store(Arc::new(keys));
                Refetch::Done
            }
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "JWKS re-read failed; keeping the previous keys");
                Refetch::Failed(error)
            }
        }
    }
}

/// Tells the operator which keys of `issuer`'s JWKS were left out and why.
pub(crate) fn log_skipped_keys(issuer: &str, keys: &KeySet) {
    if !keys.skipped().is_empty() {
        tracing::warn!(issuer, skipped = %keys.skipped().join("; "), "JWKS keys left out");
    }
}

/// What an attempt to re-read a JWKS did.
enum Refetch {
    Done,
    TooSoon,
    Failed(FetchError),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn set(keys: Value) -> Result<KeySet, JwksError> {
        KeySet::from_json(json!({ "keys": keys }).to_string().as_bytes())
    }

    #[test]
    fn keys_not_for_signatures_and_symmetric_keys_are_left_out() {
        let ed = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(&[7; 32]), "kid": "ed"});
        let keys = set(json!([
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32]), "use": "enc"},
            {"kty": "oct", "k": b64(b"secret"), "kid": "hmac"},
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[2; 32]), "alg": "HS256"},
            {"kty": "OKP", "crv": "X25519", "x": b64(&[3; 32])},
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[4; 32]), "key_ops": ["encrypt"]},
            ed,
        ]))
        .expect("one usable key");
        assert_eq!(keys.len(), 1);
        assert!(matches!(
            keys.choose(None, Algorithm::EdDSA),
            KeyChoice::Key(_)
        ));
        assert!(matches!(
            keys.choose(Some("ed"), Algorithm::EdDSA),
            KeyChoice::Key(_)
        ));
        assert!(matches!(
            keys.choose(Some("hmac"), Algorithm::EdDSA),
            KeyChoice::Missing(_)
        ));
    }

    #[test]
    fn malformed_keys_are_skipped_and_named() {
        let error = set(json!([
            {"kty": "EC", "crv": "P-256", "x": b64(&[1; 31]), "y": b64(&[1; 32]), "kid": "short"},
            {"kty": "RSA", "n": b64(&[0xff; 128]), "e": b64(&[1, 0, 1]), "kid": "small"},
            {"kty": "OKP", "crv": "Ed25519", "x": "not base64!", "kid": "bad"},
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32]), "alg": "ES256", "kid": "mismatch"},
            "not an object",
        ]))
        .expect_err("nothing usable");
        let message = error.to_string();
        for expected in [
            "\"short\"",
            "\"small\"",
            "1024 bits",
            "\"bad\"",
            "\"mismatch\"",
            "keys[4]",
        ] {
            assert!(
                message.contains(expected),
                "{expected} missing from: {message}"
            );
        }
    }

    #[test]
    fn documents_that_are_not_key_sets_are_refused() {
        assert!(matches!(
            KeySet::from_json(b"[]"),
            Err(JwksError::NotJson(_))
        ));
        assert!(matches!(
            KeySet::from_json(b"{\"keys\": {}}"),
            Err(JwksError::NoKeysArray)
        ));
        assert!(matches!(
            KeySet::from_json(b"\xff\xfe"),
            Err(JwksError::NotJson(_))
        ));
        let huge = vec![b' '; MAX_JWKS_BYTES + 1];
        assert!(matches!(KeySet::from_json(&huge), Err(JwksError::TooLarge)));
    }

    #[test]
    fn a_key_restricted_to_one_algorithm_refuses_another() {
        let n = {
            let mut n = vec![0xc5; 256];
            n.insert(0, 0);
            n
        };
        let keys = set(
            json!([{"kty": "RSA", "n": b64(&n), "e": b64(&[1, 0, 1]), "alg": "PS256", "kid": "r"}]),
        )
        .expect("an RSA key");
        assert!(matches!(
            keys.choose(Some("r"), Algorithm::PS256),
            KeyChoice::Key(_)
        ));
        assert!(matches!(
            keys.choose(Some("r"), Algorithm::RS256),
            KeyChoice::Refused(_)
        ));
        assert!(matches!(
            keys.choose(Some("r"), Algorithm::ES256),
            KeyChoice::Refused(_)
        ));
    }

    #[test]
    fn without_a_kid_two_fitting_keys_are_ambiguous() {
        let keys = set(json!([
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32])},
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[2; 32])},
        ]))
        .expect("two keys");
        assert!(matches!(
            keys.choose(None, Algorithm::EdDSA),
            KeyChoice::Refused(_)
        ));
        assert!(matches!(
            keys.choose(None, Algorithm::ES256),
            KeyChoice::Missing(_)
        ));
    }
}
