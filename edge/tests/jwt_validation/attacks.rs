//! The attacks a JWT validator is known to fall for, each refused.

use super::{key_sources::JwksServer, *};

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
