//! What a JWKS document yields: the keys the edge will use, the keys it
//! leaves out (named, with the reason, for the operator), and documents that
//! are not key sets at all.

use quiver_edge::auth::jwks::{JwksError, KeySet, MAX_JWKS_BYTES};

use super::*;

fn set(keys: Value) -> Result<KeySet, JwksError> {
    KeySet::from_json(json!({ "keys": keys }).to_string().as_bytes())
}

#[test]
fn keys_not_for_signatures_and_symmetric_keys_are_left_out_silently() {
    let keys = set(json!([
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32]), "use": "enc"},
        {"kty": "oct", "k": b64(b"secret"), "kid": "hmac"},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[2; 32]), "alg": "HS256"},
        {"kty": "OKP", "crv": "X25519", "x": b64(&[3; 32])},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[4; 32]), "key_ops": ["encrypt"]},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[7; 32]), "kid": "ed"},
    ]))
    .expect("one usable key");
    assert_eq!(keys.len(), 1);
    assert!(keys.skipped().is_empty(), "{:?}", keys.skipped());
}

#[test]
fn malformed_and_weak_keys_are_skipped_and_named() {
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
        "key \"short\": P256 key members must be 32 bytes",
        "key \"small\": RSA modulus of 1024 bits",
        "key \"bad\": not a usable public key",
        "key \"mismatch\": \"alg\": ES256 does not fit",
        "keys[4] is not an object",
    ] {
        assert!(
            message.contains(expected),
            "{expected} missing from: {message}"
        );
    }

    info!("--- beside a usable key, the bad ones are kept for the operator's log");
    let keys = set(json!([
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 32]), "kid": "good"},
        {"kty": "OKP", "crv": "Ed25519", "x": b64(&[1; 31]), "kid": "short"},
    ]))
    .expect("one usable key");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys.skipped().len(), 1, "{:?}", keys.skipped());
    assert!(keys.skipped()[0].contains("\"short\""));
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

#[tokio::test]
async fn a_key_restricted_to_one_algorithm_verifies_only_that_one() {
    let rsa = SigningKey::rsa("r", "PS256");
    let mut jwk = rsa.jwk();
    jwk["alg"] = json!("PS256");
    let file = JwksFile::with(&[]);
    std::fs::write(&file.path, json!({ "keys": [jwk] }).to_string()).expect("write");
    let validator = validator_for(&file);
    accepted(&validator, &rsa.token(&claims())).await;
    let as_rs256 = SigningKey::rsa("r", "RS256");
    assert_invalid(
        &validator,
        &as_rs256.token(&claims()),
        "key \"r\" cannot verify RS256",
    )
    .await;
}

#[tokio::test]
async fn scopes_come_from_scope_or_else_scp() {
    let key = SigningKey::ed25519("ed");
    let file = JwksFile::with(&[&key]);
    let mut config = config(Some(file.path.clone()), None);
    config.required_scopes.clear();
    let validator = JwtValidator::new(config).expect("validator");
    let with = |name: &str, value: Value| {
        let mut claims = without(claims(), "scope");
        claims[name] = value;
        key.token(&claims)
    };
    let both = ["a".to_owned(), "b".to_owned()];
    for token in [
        with("scope", json!("a  b")),
        with("scp", json!(["a", "b"])),
        with("scp", json!("a b")),
    ] {
        assert_eq!(accepted(&validator, &token).await.scopes, both);
    }
    let none = key.token(&without(claims(), "scope"));
    assert!(accepted(&validator, &none).await.scopes.is_empty());
    let scope_array = with("scope", json!(["a"]));
    assert_invalid(&validator, &scope_array, "\"scope\" is not a string").await;
    assert_invalid(
        &validator,
        &with("scp", json!([1])),
        "\"scp\" holds a non-string",
    )
    .await;
}

#[tokio::test]
async fn tenant_names_of_letters_digits_dash_and_underscore_are_accepted() {
    let key = SigningKey::ed25519("ed");
    let validator = validator_for(&JwksFile::with(&[&key]));
    for good in ["a", "acme-corp_2", &"x".repeat(64)] {
        let mut claims = claims();
        claims["tenant"] = json!(good);
        assert_eq!(accepted(&validator, &key.token(&claims)).await.tenant, good);
    }
    for bad in ["a b", "ü", "a.b"] {
        let mut claims = claims();
        claims["tenant"] = json!(bad);
        assert_invalid(
            &validator,
            &key.token(&claims),
            "is not a string of 1 to 64",
        )
        .await;
    }
}
