//! Tokens that are not tokens at all: garbage, random mutations of a good
//! one, oversized ones. Each is refused as invalid; none panics.

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
