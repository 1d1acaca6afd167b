//! JSON Web Key Sets: each trusted issuer's signing keys, read from a file or
//! fetched over HTTP, cached, and re-read on an unknown key id at most once per
//! interval. Keys are parsed and signatures checked by `jsonwebtoken`; this
//! module holds only the edge's policy: which keys of a set it will use for
//! which algorithm, and when to re-read the set. Keys named inside a token
//! (`jku`, `x5u`, `jwk`) are never fetched or used.

use std::{
    io::{self, Read},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use arc_swap::ArcSwap;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD_INDIFFERENT};
use jsonwebtoken::{Algorithm, DecodingKey, jwk::Jwk};
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

/// The key type and curve a JWK must have to verify `alg`.
fn key_type_for(alg: Algorithm) -> (&'static str, Option<&'static str>) {
    match alg {
        Algorithm::ES256 => ("EC", Some("P-256")),
        Algorithm::ES384 => ("EC", Some("P-384")),
        Algorithm::EdDSA => ("OKP", Some("Ed25519")),
        _ => ("RSA", None),
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
        skipped_note(skipped)
    )]
    NoUsableKey {
        /// Why each key that was present was left out.
        skipped: Vec<String>,
    },
}

fn skipped_note(skipped: &[String]) -> String {
    if skipped.is_empty() {
        String::new()
    } else {
        format!("; skipped: {}", skipped.join("; "))
    }
}

/// Why a key of a supported type was left out of a set.
#[derive(Debug, thiserror::Error)]
enum KeyRejection {
    /// Its `kid` is not a string.
    #[error("\"kid\" is not a string")]
    KidNotString,
    /// It is unusable, as `problem` says.
    #[error("{}: {problem}", key_name(.kid.as_deref()))]
    Unusable {
        kid: Option<String>,
        problem: KeyProblem,
    },
}

/// How the operator's log names a key.
fn key_name(kid: Option<&str>) -> String {
    match kid {
        Some(kid) => format!("key {kid:?}"),
        None => "key without kid".to_owned(),
    }
}

/// What is wrong with a key of a supported type.
#[derive(Debug, thiserror::Error)]
enum KeyProblem {
    /// Its `alg` is not a string.
    #[error("\"alg\" is not a string")]
    AlgNotString,
    /// Its `alg` needs another key type.
    #[error("\"alg\": {0:?} does not fit the key type")]
    AlgMismatch(Algorithm),
    /// Too weak, or coordinates of the wrong size.
    #[error(transparent)]
    Size(#[from] KeySizeError),
    /// `jsonwebtoken` cannot read it as a JWK.
    #[error("not a readable JWK ({0})")]
    Unreadable(serde_json::Error),
    /// `jsonwebtoken` cannot make a public key of it.
    #[error("not a usable public key ({0})")]
    NotAKey(jsonwebtoken::errors::Error),
}

/// Why a key falls below the edge's floor on key strength.
#[derive(Debug, thiserror::Error)]
enum KeySizeError {
    /// A member is absent or not a string.
    #[error("\"{0}\" is missing or not a string")]
    Missing(&'static str),
    /// A member is not base64url.
    #[error("\"{0}\" is not base64url")]
    NotBase64(&'static str),
    /// An RSA modulus out of range.
    #[error("RSA modulus of {0} bits; 2048 to 8192 bits are accepted")]
    RsaBits(usize),
    /// EC coordinates not of the curve's size.
    #[error("EC coordinates must be {0} bytes each")]
    EcCoordinates(usize),
    /// An Ed25519 key not of 32 bytes.
    #[error("Ed25519 \"x\" must be 32 bytes")]
    Ed25519Length,
}

/// Why a JWKS could not be re-read (the previous keys stay).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// Reading the file was interrupted.
    #[error("reading {} stopped: {source}", path.display())]
    Stopped {
        path: PathBuf,
        source: tokio::task::JoinError,
    },
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// The file is not a usable JWKS.
    #[error("{}: {source}", path.display())]
    FileDocument { path: PathBuf, source: JwksError },
    /// The URL could not be fetched.
    #[error("{url}: {source}")]
    Url {
        url: reqwest::Url,
        source: UrlFetchError,
    },
    /// The URL's document is not a usable JWKS.
    #[error("{url}: {source}")]
    UrlDocument {
        url: reqwest::Url,
        source: JwksError,
    },
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
struct SigningKey {
    kid: Option<String>,
    /// The `alg` the key is restricted to, when the JWK names one.
    alg: Option<Algorithm>,
    kty: &'static str,
    crv: Option<&'static str>,
    key: DecodingKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("kty", &self.kty)
            .field("crv", &self.crv)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Whether this key may verify a signature made with `alg`.
    fn accepts(&self, alg: Algorithm) -> bool {
        self.alg.is_none_or(|declared| declared == alg) && key_type_for(alg) == (self.kty, self.crv)
    }

    /// The key a JWK object describes: `Ok(None)` for one that is not for
    /// signatures or of a type the edge does not verify, `Err` for one of a
    /// supported type that `jsonwebtoken` cannot read or that is too weak.
    fn from_object(object: &Map<String, Value>) -> Result<Option<SigningKey>, KeyRejection> {
        let kid = match object.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.clone()),
            Some(_) => return Err(KeyRejection::KidNotString),
        };
        let named = |problem: KeyProblem| KeyRejection::Unusable {
            kid: kid.clone(),
            problem,
        };
        if object.get("use").is_some_and(|u| u.as_str() != Some("sig")) {
            return Ok(None);
        }
        if let Some(ops) = object.get("key_ops")
            && !ops
                .as_array()
                .is_some_and(|ops| ops.iter().any(|op| op.as_str() == Some("verify")))
        {
            return Ok(None);
        }
        let alg = match object.get("alg") {
            None => None,
            // A key restricted to an algorithm the edge refuses (HS256,
            // RSA-OAEP for encryption, ...) can never verify a token.
            Some(Value::String(name)) => match accepted_algorithm(name) {
                Some(alg) => Some(alg),
                None => return Ok(None),
            },
            Some(_) => return Err(named(KeyProblem::AlgNotString)),
        };
        let crv = object.get("crv").and_then(Value::as_str);
        let (kty, crv) = match (object.get("kty").and_then(Value::as_str), crv) {
            (Some("RSA"), _) => ("RSA", None),
            (Some("EC"), Some("P-256")) => ("EC", Some("P-256")),
            (Some("EC"), Some("P-384")) => ("EC", Some("P-384")),
            (Some("OKP"), Some("Ed25519")) => ("OKP", Some("Ed25519")),
            // Symmetric ("oct"), other curves and unknown types never verify.
            _ => return Ok(None),
        };
        if let Some(alg) = alg
            && key_type_for(alg) != (kty, crv)
        {
            return Err(named(KeyProblem::AlgMismatch(alg)));
        }
        check_key_size(object, kty, crv).map_err(|e| named(e.into()))?;
        let jwk: Jwk = serde_json::from_value(Value::Object(object.clone()))
            .map_err(|e| named(KeyProblem::Unreadable(e)))?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| named(KeyProblem::NotAKey(e)))?;
        Ok(Some(SigningKey {
            kid,
            alg,
            kty,
            crv,
            key,
        }))
    }
}

/// The edge's floor on key strength, and coordinates of the right length
/// for the curve: RSA moduli of 2048 to 8192 bits, EC coordinates and
/// Ed25519 keys of their curve's size.
fn check_key_size(
    object: &Map<String, Value>,
    kty: &str,
    crv: Option<&str>,
) -> Result<(), KeySizeError> {
    let bytes = |member: &'static str| -> Result<Vec<u8>, KeySizeError> {
        let text = object
            .get(member)
            .and_then(Value::as_str)
            .ok_or(KeySizeError::Missing(member))?;
        URL_SAFE_NO_PAD_INDIFFERENT
            .decode(text)
            .map_err(|_| KeySizeError::NotBase64(member))
    };
    match (kty, crv) {
        ("RSA", _) => {
            let n = bytes("n")?;
            let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
            if !(2048..=8192).contains(&bits) {
                return Err(KeySizeError::RsaBits(bits));
            }
            bytes("e").map(|_| ())
        }
        ("EC", Some(curve)) => {
            let size = if curve == "P-256" { 32 } else { 48 };
            if bytes("x")?.len() != size || bytes("y")?.len() != size {
                return Err(KeySizeError::EcCoordinates(size));
            }
            Ok(())
        }
        _ => match bytes("x")?.len() {
            32 => Ok(()),
            _ => Err(KeySizeError::Ed25519Length),
        },
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
        let mut keys = Vec::new();
        let mut skipped = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let Some(entry) = entry.as_object() else {
                skipped.push(format!("keys[{index}] is not an object"));
                continue;
            };
            match SigningKey::from_object(entry) {
                Ok(Some(key)) => keys.push(key),
                Ok(None) => {}
                Err(reason) => skipped.push(format!("keys[{index}] {reason}")),
            }
        }
        if keys.is_empty() {
            return Err(JwksError::NoUsableKey { skipped });
        }
        Ok(KeySet { keys, skipped })
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
        match self {
            JwksSource::File(path) => {
                let reading = path.clone();
                let document = tokio::task::spawn_blocking(move || read_jwks_file(&reading))
                    .await
                    .map_err(|source| FetchError::Stopped {
                        path: path.clone(),
                        source,
                    })?
                    .map_err(|source| FetchError::Read {
                        path: path.clone(),
                        source,
                    })?;
                KeySet::from_json(&document).map_err(|source| FetchError::FileDocument {
                    path: path.clone(),
                    source,
                })
            }
            JwksSource::Url { url, client } => {
                let document = fetch_url(client, url)
                    .await
                    .map_err(|source| FetchError::Url {
                        url: url.clone(),
                        source,
                    })?;
                KeySet::from_json(&document).map_err(|source| FetchError::UrlDocument {
                    url: url.clone(),
                    source,
                })
            }
        }
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
