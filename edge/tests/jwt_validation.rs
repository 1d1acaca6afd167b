//! Bearer tokens checked by the edge's JWT validator against keys generated
//! here: each accepted algorithm, each way a token can be refused, and key
//! rotation through a JWKS file and through a JWKS URL served by a small axum
//! server that counts its fetches.

use std::{
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use axum::{
    Router, body::Body, extract::State, http::StatusCode, response::IntoResponse, routing::get,
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use quiver_edge::auth::jwt::{
    IssuerConfig, JwtConfigError, JwtRejection, JwtValidator, OAuthConfig, TokenIdentity,
};
use ring::{
    hmac,
    rand::SystemRandom,
    signature::{
        self, ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair,
        Ed25519KeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents,
    },
};
use rustls_pki_types::{PrivatePkcs8KeyDer, pem::PemObject};
use serde_json::{Value, json};
use tempfile::TempDir;
use tracing::info;

const ISSUER: &str = "https://idp.example.test";
const RESOURCE: &str = "https://mcp.example.test/mcp";
/// Long enough that no test waits it out: a re-read within it is refused.
const NEVER_AGAIN: Duration = Duration::from_secs(3600);

/// A 2048-bit RSA key for tests only. ring (and rcgen on ring) cannot
/// generate RSA keys, so this one was made once with
/// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`.
const TEST_RSA_PKCS8_PEM: &str = "
-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCzws/OQic/9qRp
0I3q1sdbd7VNRhb68WAgf2ss0egKOZ+gQdZmzkvHLYVReYny4wag9+OIZirI5b1B
RGKSg68iu65RKdUi8tZjK+aQLpB3PxXm8Mml1dXIqyGbP9TTUQEMbGP6qhJPmcLt
uU26bVUNQHG4MAWpV3cf/ggbCxMJrSsROQX4XYix5/pDBDM/ixy3lS4RXGylDYGj
0fgtCXKH8nuntNRDUO9Uaj72NhhjcJlpSqexuBQUVFIPJG748AyNcugKl6G/+uFW
FFOBh8Qrvz7J3BBDwYOclwh6i20ZES5TbcCbBcUQj86VMA3kRCkdHR0DjcEUb9Ht
3BWLEs79AgMBAAECggEACkywMWYy74RHOVTcvMbfl0sNlUbdzDUGR/ZlAqVoQSW6
EqmTCkLprpjaGaf4EnWVjKWHYOpRqz8Wj+XGLBTldP0B6N6Xuq/lPrtmM36ngl2X
+Kp1M05EOIIto8KNhCoRAFA5jkQuVmc99vb2ECdxhxfZLC98M46yYZ/hgQMqbRRp
V4w72UOPC5BfAHRy274NglEqbM/aaQ9bRbf0DPrkMTDRN465Q5HV80sdqFpInrtn
ztk70b+ms/WhCVoq4CZKNVgDpqQuFEQvvXwpyVpyvFSPWf+G5NkdrJ1fEX3F3YuL
R8UajyC5SEpVxY23YNpWPvWIBACqNA+aelZlcqvpwQKBgQDfxJZ5SKUuBtOKHDOP
0hw+iLVyHUGBV33ldAgeHpg2WHJ+9ZcMjmcH6jNva+H4I4Ze7VpTgcYIh6tLf3hZ
8kewq3w13BmnMfiUUDcXIlWDbNL5/l/KSenPIpIZkm9Idd/yUq8cTJFDHjbvLCPG
x4NLMKQ465OGJl4uLxtU6R6NcQKBgQDNp3lYKDojx0a2lswMnBJEoEW+Iv25imPA
HDTnSXyKYKdu3VgDrm4hJqW8a1AJi8r3lh2NUd1s3OFoQiR3CohKujO2tGadDilM
Bc13/Y13TS+DAFR3T0QjE3rUqxp7ijZKkjShszMZXTRk+Wk0u/aVKPWWEG6GJYJM
JK8tgTSETQKBgEgGuESrzHdnPRocf8BQakT6riTgI+ClL+H2mlJPmMENcTVKiedB
wwo6KXo46JB9ptfRYJy2je7a9Jklm7CgGtFUMXQIt70oiZH7y+/HXm0iTzqm1WCA
sCC7SPmwN9/ECWSvlqvuPWe0RwxvUci/GZTPQF0N/vtUSEZnZU3Mh8gRAoGAGvSO
lR2AsVvXSuttB2IViuUu/wL7Gqym8nFABei96C1PBNsCRElCqhm0s4OlU/r8uYL1
kKZgTXqOGOpCeU/qGVFaoeH3aTKH+yzvh4C2YCK/zX3nlFPRbH+LJADhUbwF7bRI
LcGdOv/adDm0rnLMmTRrLCYvNmoIMA7G30IGLikCgYAlsn1gQmHnAylWXOEUhwFB
E/rwSgnpjlHsNNv7L8/AyQ7JixDxrKJOHlEFz4wqTq0mcI1uA1w5SnqHF3VDQ7kO
njpP1rpR69fspSgU1+Ahe2J3FBLEOPDbI01DpUcfbqltexcgHYDGaqWXp9s3rbsR
WWsBAAG/RvENuVNkqI46zA==
-----END PRIVATE KEY-----
";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A private key of one of the accepted families.
enum KeyPairKind {
    Ed25519(Ed25519KeyPair),
    Ecdsa {
        pair: EcdsaKeyPair,
        crv: &'static str,
        size: usize,
    },
    Rsa(RsaKeyPair),
}

/// A key an authorization server signs with, under a `kid`, for one `alg`.
struct SigningKey {
    kid: String,
    alg: &'static str,
    pair: KeyPairKind,
}

impl SigningKey {
    fn ed25519(kid: &str) -> SigningKey {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("generate Ed25519");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("parse Ed25519");
        SigningKey {
            kid: kid.into(),
            alg: "EdDSA",
            pair: KeyPairKind::Ed25519(pair),
        }
    }

    fn es256(kid: &str) -> SigningKey {
        SigningKey::ecdsa(kid, "ES256", &ECDSA_P256_SHA256_FIXED_SIGNING, "P-256", 32)
    }

    fn es384(kid: &str) -> SigningKey {
        SigningKey::ecdsa(kid, "ES384", &ECDSA_P384_SHA384_FIXED_SIGNING, "P-384", 48)
    }

    fn ecdsa(
        kid: &str,
        alg: &'static str,
        algorithm: &'static signature::EcdsaSigningAlgorithm,
        crv: &'static str,
        size: usize,
    ) -> SigningKey {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(algorithm, &rng).expect("generate ECDSA");
        let pair = EcdsaKeyPair::from_pkcs8(algorithm, pkcs8.as_ref(), &rng).expect("parse ECDSA");
        SigningKey {
            kid: kid.into(),
            alg,
            pair: KeyPairKind::Ecdsa { pair, crv, size },
        }
    }

    /// The fixed test RSA key, signing with `alg` (RS256, RS384, RS512 or PS256).
    fn rsa(kid: &str, alg: &'static str) -> SigningKey {
        let der = PrivatePkcs8KeyDer::from_pem_slice(TEST_RSA_PKCS8_PEM.as_bytes()).expect("PEM");
        let pair = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).expect("parse RSA");
        SigningKey {
            kid: kid.into(),
            alg,
            pair: KeyPairKind::Rsa(pair),
        }
    }

    /// The public JWK of this key, as the issuer publishes it.
    fn jwk(&self) -> Value {
        let mut jwk = match &self.pair {
            KeyPairKind::Ed25519(pair) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())})
            }
            KeyPairKind::Ecdsa { pair, crv, size } => {
                // An uncompressed point: 04 || x || y.
                let point = pair.public_key().as_ref();
                let (x, y) = point[1..].split_at(*size);
                json!({"kty": "EC", "crv": crv, "x": b64(x), "y": b64(y)})
            }
            KeyPairKind::Rsa(pair) => {
                let public = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
                json!({"kty": "RSA", "n": b64(&public.n), "e": b64(&public.e)})
            }
        };
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        jwk
    }

    fn sign(&self, input: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match &self.pair {
            KeyPairKind::Ed25519(pair) => pair.sign(input).as_ref().to_vec(),
            KeyPairKind::Ecdsa { pair, .. } => pair
                .sign(&rng, input)
                .expect("ECDSA sign")
                .as_ref()
                .to_vec(),
            KeyPairKind::Rsa(pair) => {
                let padding: &dyn signature::RsaEncoding = match self.alg {
                    "RS256" => &signature::RSA_PKCS1_SHA256,
                    "RS384" => &signature::RSA_PKCS1_SHA384,
                    "RS512" => &signature::RSA_PKCS1_SHA512,
                    "PS256" => &signature::RSA_PSS_SHA256,
                    other => panic!("no RSA padding for {other}"),
                };
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(padding, &rng, input, &mut signature)
                    .expect("RSA sign");
                signature
            }
        }
    }

    /// A token with `claims`, its header naming this key's `alg` and `kid`.
    fn token(&self, claims: &Value) -> String {
        self.token_with_header(
            &json!({"alg": self.alg, "kid": self.kid, "typ": "at+jwt"}),
            claims,
        )
    }

    fn token_with_header(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = self.sign(input.as_bytes());
        format!("{input}.{}", b64(&signature))
    }
}

/// The claims of a token the edge accepts: right issuer and audience, valid
/// now, with a subject, a tenant and two scopes.
fn claims() -> Value {
    let now = now();
    json!({
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "user-42",
        "tenant": "acme",
        "scope": "mcp:tools mcp:read",
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    })
}

fn without(mut claims: Value, name: &str) -> Value {
    claims
        .as_object_mut()
        .expect("claims are an object")
        .remove(name);
    claims
}

fn jwks(keys: &[&SigningKey]) -> String {
    json!({ "keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>() }).to_string()
}

/// A JWKS file in a temporary directory, rewritten to rotate keys.
struct JwksFile {
    _dir: TempDir,
    path: PathBuf,
}

impl JwksFile {
    fn with(keys: &[&SigningKey]) -> JwksFile {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("jwks.json");
        let file = JwksFile { _dir: dir, path };
        file.write(keys);
        file
    }

    fn write(&self, keys: &[&SigningKey]) {
        std::fs::write(&self.path, jwks(keys)).expect("write JWKS");
    }
}

fn config(jwks_file: Option<PathBuf>, jwks_url: Option<String>) -> OAuthConfig {
    OAuthConfig {
        resource: RESOURCE.into(),
        issuers: vec![IssuerConfig {
            issuer: ISSUER.into(),
            jwks_file,
            jwks_url,
            tenant_claim: "tenant".into(),
        }],
        required_scopes: vec!["mcp:tools".into()],
        leeway_secs: 60,
    }
}

fn validator_for(file: &JwksFile) -> JwtValidator {
    JwtValidator::new(config(Some(file.path.clone()), None)).expect("validator")
}

async fn accepted(validator: &JwtValidator, token: &str) -> TokenIdentity {
    match validator.validate(token).await {
        Ok(identity) => identity,
        Err(error) => panic!("token refused: {error}"),
    }
}

/// Asserts the token is refused as `Invalid` for the reason `because` names.
async fn assert_invalid(validator: &JwtValidator, token: &str, because: &str) {
    match validator.validate(token).await {
        Err(JwtRejection::Invalid { reason }) => {
            assert!(
                reason.contains(because),
                "refused, but not because {because:?}: {reason}"
            )
        }
        other => panic!("expected a refusal because {because:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn valid_token_yields_issuer_subject_tenant_and_scopes() {
    let key = SigningKey::es256("es-1");
    let file = JwksFile::with(&[&key]);
    let validator = validator_for(&file);
    let claims = claims();
    let identity = accepted(&validator, &key.token(&claims)).await;
    assert_eq!(
        identity,
        TokenIdentity {
            issuer: ISSUER.into(),
            subject: "user-42".into(),
            tenant: "acme".into(),
            scopes: vec!["mcp:tools".into(), "mcp:read".into()],
            expires_at: claims["exp"].as_u64().expect("exp"),
        }
    );
    assert_eq!(validator.config().resource, RESOURCE);
}

#[tokio::test]
async fn every_accepted_algorithm_verifies() {
    let keys = [
        SigningKey::ed25519("ed"),
        SigningKey::es256("p256"),
        SigningKey::es384("p384"),
        SigningKey::rsa("rs256", "RS256"),
        SigningKey::rsa("rs384", "RS384"),
        SigningKey::rsa("rs512", "RS512"),
        SigningKey::rsa("ps256", "PS256"),
    ];
    let file = JwksFile::with(&keys.iter().collect::<Vec<_>>());
    let validator = validator_for(&file);
    for key in &keys {
        let identity = accepted(&validator, &key.token(&claims())).await;
        assert_eq!(identity.tenant, "acme", "{}", key.alg);
        let mut tampered = key.token(&claims()).into_bytes();
        // One character near the end of the signature.
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).expect("ASCII");
        assert_invalid(&validator, &tampered, "signature does not verify").await;
    }
}

#[tokio::test]
async fn expired_token_is_refused_beyond_the_leeway() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let mut within_leeway = claims();
    within_leeway["exp"] = json!(now() - 30);
    accepted(&validator, &key.token(&within_leeway)).await;
    let mut expired = claims();
    expired["exp"] = json!(now() - 120);
    assert_invalid(&validator, &key.token(&expired), "expired").await;
    assert_invalid(
        &validator,
        &key.token(&without(claims(), "exp")),
        "no \"exp\"",
    )
    .await;
}

#[tokio::test]
async fn token_not_yet_valid_is_refused() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let mut soon = claims();
    soon["nbf"] = json!(now() + 30);
    accepted(&validator, &key.token(&soon)).await;
    let mut later = claims();
    later["nbf"] = json!(now() + 600);
    assert_invalid(&validator, &key.token(&later), "not valid before").await;
    let mut issued_later = claims();
    issued_later["iat"] = json!(now() + 600);
    assert_invalid(
        &validator,
        &key.token(&issued_later),
        "issued in the future",
    )
    .await;
}

#[tokio::test]
async fn token_for_another_audience_is_refused() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let mut among_others = claims();
    among_others["aud"] = json!(["https://other.example.test", RESOURCE]);
    accepted(&validator, &key.token(&among_others)).await;
    let mut other = claims();
    other["aud"] = json!("https://other.example.test/mcp");
    assert_invalid(&validator, &key.token(&other), "\"aud\" does not contain").await;
    let mut others = claims();
    others["aud"] = json!(["https://other.example.test", "https://mcp.example.test"]);
    assert_invalid(&validator, &key.token(&others), "\"aud\" does not contain").await;
    assert_invalid(
        &validator,
        &key.token(&without(claims(), "aud")),
        "\"aud\" does not contain",
    )
    .await;
}

#[tokio::test]
async fn token_from_an_untrusted_issuer_is_refused() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let mut other = claims();
    other["iss"] = json!("https://evil.example.test");
    assert_invalid(
        &validator,
        &key.token(&other),
        "untrusted issuer \"https://evil.example.test\"",
    )
    .await;
    assert_invalid(
        &validator,
        &key.token(&without(claims(), "iss")),
        "no string \"iss\"",
    )
    .await;
}

#[tokio::test]
async fn token_under_an_unknown_kid_is_refused() {
    let known = SigningKey::ed25519("known");
    let file = JwksFile::with(&[&known]);
    let validator = validator_for(&file).with_refetch_interval(Duration::ZERO);
    let stranger = SigningKey::ed25519("stranger");
    assert_invalid(
        &validator,
        &stranger.token(&claims()),
        "no key with kid \"stranger\", also after re-reading the JWKS",
    )
    .await;
    // The stranger's key under a known kid does not verify either.
    let impostor = SigningKey {
        kid: "known".into(),
        ..SigningKey::ed25519("x")
    };
    assert_invalid(
        &validator,
        &impostor.token(&claims()),
        "signature does not verify",
    )
    .await;
}

#[tokio::test]
async fn tampered_payload_or_signature_is_refused() {
    let key = SigningKey::es256("es");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let token = key.token(&claims());
    let mut segments: Vec<String> = token.split('.').map(str::to_owned).collect();
    let mut other_tenant = claims();
    other_tenant["tenant"] = json!("globex");
    let genuine_payload =
        std::mem::replace(&mut segments[1], b64(other_tenant.to_string().as_bytes()));
    assert_invalid(
        &validator,
        &segments.join("."),
        "ES256 signature does not verify",
    )
    .await;
    segments[1] = genuine_payload;
    let mut signature = URL_SAFE_NO_PAD.decode(&segments[2]).expect("signature");
    signature[10] ^= 0x01;
    segments[2] = b64(&signature);
    assert_invalid(
        &validator,
        &segments.join("."),
        "ES256 signature does not verify",
    )
    .await;
}

#[tokio::test]
async fn unsigned_alg_none_token_is_refused() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let payload = b64(claims().to_string().as_bytes());
    for alg in ["none", "None", "NONE"] {
        let header = b64(json!({"alg": alg, "kid": "ed"}).to_string().as_bytes());
        let unsigned = format!("{header}.{payload}.");
        assert_invalid(
            &validator,
            &unsigned,
            &format!("algorithm \"{alg}\" is not accepted"),
        )
        .await;
        let with_signature = format!("{header}.{payload}.{}", b64(b"signature"));
        assert_invalid(&validator, &with_signature, "is not accepted").await;
    }
    let no_alg = format!(
        "{}.{payload}.{}",
        b64(b"{\"kid\":\"ed\"}"),
        b64(b"signature")
    );
    assert_invalid(&validator, &no_alg, "no string \"alg\"").await;
}

#[tokio::test]
async fn hmac_token_keyed_with_the_public_key_is_refused() {
    // The classic confusion: HS256 with the issuer's public key as the secret.
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    let public = match &key.pair {
        KeyPairKind::Ed25519(pair) => pair.public_key().as_ref().to_vec(),
        _ => unreachable!("an Ed25519 key"),
    };
    for (alg, algorithm) in [
        ("HS256", hmac::HMAC_SHA256),
        ("HS384", hmac::HMAC_SHA384),
        ("HS512", hmac::HMAC_SHA512),
    ] {
        let header = b64(json!({"alg": alg, "kid": "ed"}).to_string().as_bytes());
        let input = format!("{header}.{}", b64(claims().to_string().as_bytes()));
        let tag = hmac::sign(&hmac::Key::new(algorithm, &public), input.as_bytes());
        let token = format!("{input}.{}", b64(tag.as_ref()));
        assert_invalid(
            &validator,
            &token,
            &format!("algorithm \"{alg}\" is not accepted"),
        )
        .await;
    }
}

#[tokio::test]
async fn token_signed_with_another_algorithm_than_its_key_is_refused() {
    let ed = SigningKey::ed25519("ed");
    let es = SigningKey::es256("es");
    let validator = validator_for(&JwksFile::with(&[&ed, &es]));
    // An ES256 token claiming the Ed25519 key's kid.
    let header = json!({"alg": "ES256", "kid": "ed"});
    assert_invalid(
        &validator,
        &es.token_with_header(&header, &claims()),
        "key \"ed\" cannot verify ES256",
    )
    .await;
}

#[tokio::test]
async fn without_a_kid_the_only_key_of_the_type_is_used() {
    let ed = SigningKey::ed25519("ed");
    let es = SigningKey::es256("es");
    let validator = validator_for(&JwksFile::with(&[&ed, &es]));
    accepted(
        &validator,
        &ed.token_with_header(&json!({"alg": "EdDSA"}), &claims()),
    )
    .await;
    accepted(
        &validator,
        &es.token_with_header(&json!({"alg": "ES256"}), &claims()),
    )
    .await;

    let second = SigningKey::ed25519("ed-2");
    let two_of_a_kind = validator_for(&JwksFile::with(&[&ed, &second]));
    assert_invalid(
        &two_of_a_kind,
        &ed.token_with_header(&json!({"alg": "EdDSA"}), &claims()),
        "no kid and several EdDSA keys",
    )
    .await;
}

#[tokio::test]
async fn token_without_a_valid_tenant_or_subject_is_refused() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    assert_invalid(
        &validator,
        &key.token(&without(claims(), "tenant")),
        "no tenant claim \"tenant\"",
    )
    .await;
    for bad in [
        json!("acme/../root"),
        json!(""),
        json!("x".repeat(65)),
        json!(7),
        json!(["acme"]),
    ] {
        let mut claims = claims();
        claims["tenant"] = bad.clone();
        assert_invalid(
            &validator,
            &key.token(&claims),
            "is not a string of 1 to 64",
        )
        .await;
    }
    assert_invalid(&validator, &key.token(&without(claims(), "sub")), "\"sub\"").await;

    info!("--- an issuer naming its tenant claim `org` reads that claim instead");
    let file = JwksFile::with(&[&key]);
    let mut config = config(Some(file.path.clone()), None);
    config.issuers[0].tenant_claim = "org".into();
    let org_validator = JwtValidator::new(config).expect("validator");
    let mut with_org = claims();
    with_org["org"] = json!("initech");
    assert_eq!(
        accepted(&org_validator, &key.token(&with_org)).await.tenant,
        "initech"
    );
    assert_invalid(
        &org_validator,
        &key.token(&claims()),
        "no tenant claim \"org\"",
    )
    .await;
}

#[tokio::test]
async fn valid_token_without_a_required_scope_lacks_scope() {
    let key = SigningKey::ed25519("ed");
    let file = JwksFile::with(&[&key]);
    let mut config = config(Some(file.path.clone()), None);
    config.required_scopes = vec!["mcp:tools".into(), "mcp:admin".into()];
    let validator = JwtValidator::new(config).expect("validator");
    let outcome = validator.validate(&key.token(&claims())).await;
    assert_eq!(
        outcome,
        Err(JwtRejection::InsufficientScope {
            required: vec!["mcp:tools".into(), "mcp:admin".into()]
        })
    );
    assert_eq!(
        outcome.expect_err("refused").to_string(),
        "insufficient scope: requires mcp:tools mcp:admin"
    );
    let mut scp = without(claims(), "scope");
    scp["scp"] = json!(["mcp:admin", "mcp:tools"]);
    assert_eq!(
        accepted(&validator, &key.token(&scp)).await.scopes,
        vec!["mcp:admin".to_owned(), "mcp:tools".to_owned()]
    );
    // A token that is invalid for another reason is not reported as lacking scope.
    let mut expired = without(claims(), "scope");
    expired["exp"] = json!(now() - 3600);
    assert_invalid(&validator, &key.token(&expired), "expired").await;
}

mod key_sets;

mod key_sources;

mod attacks;

mod malformed;
