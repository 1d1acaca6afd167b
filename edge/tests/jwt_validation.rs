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

#[tokio::test]
async fn rotated_key_is_accepted_after_the_file_is_reread_at_most_once_per_interval() {
    let old = SigningKey::es256("2024");
    let new = SigningKey::es256("2025");
    let newer = SigningKey::ed25519("2026");
    let file = JwksFile::with(&[&old]);
    let validator = validator_for(&file).with_refetch_interval(NEVER_AGAIN);

    info!("--- the key read at start verifies");
    accepted(&validator, &old.token(&claims())).await;

    info!("--- the issuer rotates; a token under the new kid makes the file be re-read");
    file.write(&[&old, &new]);
    accepted(&validator, &new.token(&claims())).await;

    info!("--- a second rotation within the interval is not seen: the file is not re-read");
    file.write(&[&old, &new, &newer]);
    assert_invalid(
        &validator,
        &newer.token(&claims()),
        "no key with kid \"2026\"; JWKS re-read less than",
    )
    .await;
    accepted(&validator, &new.token(&claims())).await;
    accepted(&validator, &old.token(&claims())).await;
}

#[tokio::test]
async fn with_no_refetch_interval_every_unknown_kid_rereads_the_file() {
    let old = SigningKey::es256("2024");
    let new = SigningKey::es256("2025");
    let newer = SigningKey::ed25519("2026");
    let file = JwksFile::with(&[&old]);
    let validator = validator_for(&file).with_refetch_interval(Duration::ZERO);
    file.write(&[&old, &new]);
    accepted(&validator, &new.token(&claims())).await;
    file.write(&[&new, &newer]);
    accepted(&validator, &newer.token(&claims())).await;

    info!("--- the old key left the file with that re-read, so its tokens stop verifying");
    assert_invalid(
        &validator,
        &old.token(&claims()),
        "no key with kid \"2024\", also after re-reading",
    )
    .await;

    info!("--- a file that stops being a JWKS keeps the keys already read");
    std::fs::write(&file.path, "{ not json").expect("write");
    assert_invalid(
        &validator,
        &SigningKey::ed25519("2027").token(&claims()),
        "re-reading the JWKS failed",
    )
    .await;
    accepted(&validator, &newer.token(&claims())).await;
}

#[test]
fn unreadable_or_unusable_jwks_file_is_a_configuration_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing.json");
    let error = JwtValidator::new(config(Some(missing.clone()), None)).expect_err("no file");
    assert!(
        matches!(error, JwtConfigError::ReadJwksFile { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );

    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "keys: []").expect("write");
    let error = JwtValidator::new(config(Some(not_json.clone()), None)).expect_err("not JSON");
    assert!(
        matches!(error, JwtConfigError::BadJwksFile { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&not_json.display().to_string()) && message.contains(ISSUER),
        "{message}"
    );

    let encryption_only = dir.path().join("enc.json");
    let mut jwk = SigningKey::ed25519("enc").jwk();
    jwk["use"] = json!("enc");
    std::fs::write(&encryption_only, json!({ "keys": [jwk] }).to_string()).expect("write");
    let error = JwtValidator::new(config(Some(encryption_only), None)).expect_err("no signing key");
    assert!(
        error.to_string().contains("no usable signing key"),
        "{error}"
    );
}

/// A JWKS URL on 127.0.0.1 answering what the test sets, counting fetches.
struct JwksServer {
    url: String,
    state: Arc<ServerState>,
}

struct ServerState {
    answer: Mutex<Answer>,
    fetches: AtomicUsize,
}

#[derive(Clone)]
enum Answer {
    Keys(String),
    Status(StatusCode),
    /// A streamed body (no Content-Length) of this many bytes.
    Oversized(usize),
}

impl JwksServer {
    async fn start(keys: &[&SigningKey]) -> JwksServer {
        let state = Arc::new(ServerState {
            answer: Mutex::new(Answer::Keys(jwks(keys))),
            fetches: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/jwks.json", get(serve_jwks))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        JwksServer {
            url: format!("http://{address}/jwks.json"),
            state,
        }
    }

    fn answer(&self, answer: Answer) {
        *self.state.answer.lock().expect("answer lock") = answer;
    }

    fn fetches(&self) -> usize {
        self.state.fetches.load(Ordering::SeqCst)
    }

    fn validator(&self, refetch_interval: Duration) -> JwtValidator {
        JwtValidator::new(config(None, Some(self.url.clone())))
            .expect("validator")
            .with_refetch_interval(refetch_interval)
    }
}

async fn serve_jwks(State(state): State<Arc<ServerState>>) -> axum::response::Response {
    state.fetches.fetch_add(1, Ordering::SeqCst);
    let answer = state.answer.lock().expect("answer lock").clone();
    match answer {
        Answer::Keys(body) => ([("content-type", "application/json")], body).into_response(),
        Answer::Status(status) => status.into_response(),
        Answer::Oversized(size) => {
            let chunks = futures::stream::iter(
                std::iter::repeat_n(64 * 1024, size / (64 * 1024) + 1)
                    .map(|length| Ok::<_, std::io::Error>(vec![b' '; length])),
            );
            Body::from_stream(chunks).into_response()
        }
    }
}

#[tokio::test]
async fn jwks_url_is_fetched_on_first_use_then_cached_and_rate_limited() {
    let old = SigningKey::es384("old");
    let new = SigningKey::ed25519("new");
    let server = JwksServer::start(&[&old]).await;
    let validator = server.validator(NEVER_AGAIN);
    assert_eq!(
        server.fetches(),
        0,
        "a JWKS URL is not fetched before a token needs it"
    );

    info!("--- the first token fetches the set; the next ones use the cache");
    accepted(&validator, &old.token(&claims())).await;
    accepted(&validator, &old.token(&claims())).await;
    assert_eq!(server.fetches(), 1);

    info!("--- a rotation within the interval is not fetched");
    server.answer(Answer::Keys(jwks(&[&old, &new])));
    assert_invalid(&validator, &new.token(&claims()), "JWKS re-read less than").await;
    assert_eq!(server.fetches(), 1);
}

#[tokio::test]
async fn concurrent_tokens_under_a_new_kid_fetch_the_jwks_once() {
    let key = SigningKey::es256("k");
    let server = JwksServer::start(&[&key]).await;
    let validator = server.validator(NEVER_AGAIN);
    let token = key.token(&claims());
    let outcomes = futures::future::join_all((0..8).map(|_| validator.validate(&token))).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(server.fetches(), 1);
}

#[tokio::test]
async fn failed_jwks_fetches_keep_the_previous_keys() {
    let old = SigningKey::es256("old");
    let new = SigningKey::es256("new");
    let server = JwksServer::start(&[&old]).await;
    let validator = server.validator(Duration::ZERO);

    info!("--- a rotation is fetched on the new kid");
    accepted(&validator, &old.token(&claims())).await;
    server.answer(Answer::Keys(jwks(&[&old, &new])));
    accepted(&validator, &new.token(&claims())).await;
    assert_eq!(server.fetches(), 2);

    let unknown = SigningKey::es256("unknown").token(&claims());
    info!("--- an error status");
    server.answer(Answer::Status(StatusCode::INTERNAL_SERVER_ERROR));
    assert_invalid(&validator, &unknown, "HTTP 500").await;
    accepted(&validator, &new.token(&claims())).await;

    info!("--- a body over 1 MiB, streamed without a length");
    server.answer(Answer::Oversized(2 * 1024 * 1024));
    assert_invalid(&validator, &unknown, "body larger than 1048576 bytes").await;

    info!("--- a body that is not a JWKS");
    server.answer(Answer::Keys("<html>maintenance</html>".into()));
    assert_invalid(&validator, &unknown, "not a JSON object").await;

    assert_eq!(server.fetches(), 5);
    accepted(&validator, &old.token(&claims())).await;
    accepted(&validator, &new.token(&claims())).await;
    assert_eq!(server.fetches(), 5, "known kids never fetch");
}

#[tokio::test]
async fn unreachable_jwks_url_gives_invalid_tokens() {
    let key = SigningKey::ed25519("k");
    let server = JwksServer::start(&[&key]).await;
    server.answer(Answer::Status(StatusCode::NOT_FOUND));
    let validator = server.validator(NEVER_AGAIN);
    assert_invalid(&validator, &key.token(&claims()), "HTTP 404").await;
    assert_invalid(&validator, &key.token(&claims()), "JWKS re-read less than").await;
    assert_eq!(
        server.fetches(),
        1,
        "a failed fetch is rate-limited like a successful one"
    );
}

/// The attacks a JWT validator is known to fall for, each refused.
mod attacks {
    use super::*;

    #[tokio::test]
    async fn a_header_naming_critical_extensions_is_refused_even_when_signed() {
        let key = SigningKey::es256("es");
        let validator = validator_for(&JwksFile::with(&[&key]));
        for crit in [json!(["b64"]), json!(["exp"]), json!([])] {
            let header = json!({"alg": "ES256", "kid": "es", "crit": crit, "b64": false});
            assert_invalid(
                &validator,
                &key.token_with_header(&header, &claims()),
                "\"crit\"",
            )
            .await;
        }
    }

    #[tokio::test]
    async fn keys_named_inside_a_token_are_never_fetched_or_trusted() {
        let trusted = SigningKey::es256("trusted");
        let attacker = SigningKey::es256("attacker");
        let validator = validator_for(&JwksFile::with(&[&trusted]));
        // The attacker's own JWKS, served where the token points.
        let elsewhere = JwksServer::start(&[&attacker]).await;
        for header in [
            json!({"alg": "ES256", "kid": "attacker", "jku": elsewhere.url}),
            json!({"alg": "ES256", "kid": "attacker", "x5u": elsewhere.url}),
            json!({"alg": "ES256", "kid": "attacker", "jwk": attacker.jwk()}),
            // The trusted key's id, but the attacker's signature.
            json!({"alg": "ES256", "kid": "trusted", "jku": elsewhere.url}),
        ] {
            let token = attacker.token_with_header(&header, &claims());
            let outcome = validator.validate(&token).await;
            assert!(
                matches!(outcome, Err(JwtRejection::Invalid { .. })),
                "{header}: {outcome:?}"
            );
        }
        assert_eq!(elsewhere.fetches(), 0, "no URL named in a token is fetched");
        // A pointer elsewhere on a token the trusted key signed changes nothing.
        let header = json!({"alg": "ES256", "kid": "trusted", "jku": elsewhere.url});
        accepted(&validator, &trusted.token_with_header(&header, &claims())).await;
        assert_eq!(elsewhere.fetches(), 0);
    }

    #[tokio::test]
    async fn key_ids_that_look_like_paths_or_queries_only_miss() {
        let key = SigningKey::ed25519("ed");
        let validator = validator_for(&JwksFile::with(&[&key]));
        for kid in ["../../../../etc/passwd", "' OR '1'='1", "ed\u{0}", "ED"] {
            let header = json!({"alg": "EdDSA", "kid": kid});
            assert_invalid(
                &validator,
                &key.token_with_header(&header, &claims()),
                "no key with kid",
            )
            .await;
        }
        let header = json!({"alg": "EdDSA", "kid": "k".repeat(300)});
        assert_invalid(
            &validator,
            &key.token_with_header(&header, &claims()),
            "\"kid\" is not a string of at most 256 bytes",
        )
        .await;
    }

    fn validator_with_leeway(file: &JwksFile, leeway_secs: u64) -> JwtValidator {
        let mut config = config(Some(file.path.clone()), None);
        config.leeway_secs = leeway_secs;
        JwtValidator::new(config).expect("validator")
    }

    #[tokio::test]
    async fn lifetimes_hold_exactly_without_leeway_and_within_it_with() {
        let key = SigningKey::es384("es");
        let file = JwksFile::with(&[&key]);
        let strict = validator_with_leeway(&file, 0);
        let lenient = validator_with_leeway(&file, 60);
        let mut just_expired = claims();
        just_expired["exp"] = json!(now() - 30);
        assert_invalid(&strict, &key.token(&just_expired), "expired").await;
        accepted(&lenient, &key.token(&just_expired)).await;
        let mut soon = claims();
        soon["nbf"] = json!(now() + 30);
        assert_invalid(&strict, &key.token(&soon), "not valid before").await;
        accepted(&lenient, &key.token(&soon)).await;
        let mut long_expired = claims();
        long_expired["exp"] = json!(now() - 3600);
        assert_invalid(&lenient, &key.token(&long_expired), "expired").await;
        let mut far = claims();
        far["nbf"] = json!(now() + 3600);
        assert_invalid(&lenient, &key.token(&far), "not valid before").await;
        // Lifetimes must be numbers of seconds, not strings or fractions.
        for exp in [
            json!((now() + 600).to_string()),
            json!(now() as f64 + 600.5),
        ] {
            let mut odd = claims();
            odd["exp"] = exp;
            assert_invalid(&lenient, &key.token(&odd), "\"exp\"").await;
        }
    }

    #[tokio::test]
    async fn oversized_tokens_are_refused_unread() {
        let key = SigningKey::ed25519("ed");
        let validator = validator_for(&JwksFile::with(&[&key]));
        let mut padded = claims();
        padded["padding"] = json!("x".repeat(20_000));
        assert_invalid(&validator, &key.token(&padded), "at most 16384").await;
    }

    #[tokio::test]
    async fn an_encrypted_jwe_is_refused_where_a_signed_jws_is_expected() {
        let key = SigningKey::ed25519("ed");
        let validator = validator_for(&JwksFile::with(&[&key]));
        let header = b64(
            json!({"alg": "RSA-OAEP-256", "enc": "A256GCM", "kid": "ed"})
                .to_string()
                .as_bytes(),
        );
        let jwe = format!(
            "{header}.{}.{}.{}.{}",
            b64(&[1; 256]),
            b64(&[2; 12]),
            b64(&[3; 64]),
            b64(&[4; 16])
        );
        assert_invalid(&validator, &jwe, "JWE is not accepted").await;
        // A JWE header in a three-segment token is no JWS either.
        let three = format!("{header}.{}.{}", b64(&[3; 64]), b64(&[4; 16]));
        assert_invalid(&validator, &three, "is not accepted").await;
    }
}

/// Tokens that are not tokens at all: garbage, random mutations of a good
/// one, oversized ones. Each is refused as invalid; none panics.
mod malformed {
    use quiver_edge::auth::jwt::MAX_TOKEN_BYTES;

    use super::*;

    /// A validator trusting one Ed25519 key, and a token it accepts.
    fn validator_and_token() -> (JwksFile, JwtValidator, String) {
        let key = SigningKey::ed25519("k");
        let file = JwksFile::with(&[&key]);
        let validator = validator_for(&file);
        let token = key.token(&claims());
        (file, validator, token)
    }

    #[tokio::test]
    async fn garbage_tokens_are_invalid_without_panicking() {
        let (_file, validator, good) = validator_and_token();
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
        for token in &garbage {
            let outcome = validator.validate(token).await;
            assert!(
                matches!(outcome, Err(JwtRejection::Invalid { .. })),
                "{token:.80}: {outcome:?}"
            );
        }
        assert!(
            validator.validate(&good).await.is_ok(),
            "the unmodified token is valid"
        );
    }

    #[tokio::test]
    async fn mutated_tokens_never_panic() {
        let (_file, validator, good) = validator_and_token();
        let seed = now() ^ 0x9e37_79b9_7f4a_7c15;
        println!("seed {seed}");
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"ABCabc019-_.=+/ {}\"";
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
            if let Ok(identity) = validator.validate(&token).await {
                panic!("seed {seed}: mutated token {token} was accepted as {identity:?}");
            }
        }
    }

    #[tokio::test]
    async fn oversized_tokens_are_refused_before_parsing() {
        let (_file, validator, good) = validator_and_token();
        let padded = format!("{good}{}", "A".repeat(MAX_TOKEN_BYTES));
        let outcome = validator.validate(&padded).await;
        let Err(JwtRejection::Invalid { reason }) = outcome else {
            panic!("oversized token: {outcome:?}");
        };
        assert!(reason.contains("at most 16384"), "{reason}");
    }
}
