//! Where keys come from: a JWKS file re-read on an unknown `kid` at most once
//! per interval, a JWKS URL fetched, cached and rate-limited, and what is
//! refused when neither can be read.

use super::*;

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
pub(super) struct JwksServer {
    pub(super) url: String,
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
    pub(super) async fn start(keys: &[&SigningKey]) -> JwksServer {
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

    pub(super) fn fetches(&self) -> usize {
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
