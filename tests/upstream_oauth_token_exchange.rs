//! An upstream that acts on behalf of each caller: `quiver ctl upstream add
//! … --oauth-token-exchange` makes Quiver exchange (RFC 8693) the OAuth
//! access token each caller presented to the edge for a token for that
//! upstream, so the upstream sees the real user, through a real `quiver
//! dev` whose edge accepts access tokens, against
//! `support::protected_upstream`:
//!
//! - two users of one tenant each reach the upstream as themselves, in
//!   every mode (a script's calls too); one exchange per caller serves its
//!   calls until the upstream refuses the token, which is exchanged again;
//! - a caller's token goes only to its own issuer: another issuer's token
//!   is refused, nothing exchanged; a caller with an API key (nothing to
//!   exchange) is refused, nothing sent;
//! - Quiver lists the tools as its own client (client credentials).

use crate::support;

use std::{
    path::Path,
    sync::atomic::Ordering,
    time::{SystemTime, UNIX_EPOCH},
};

use serde_json::json;
use support::jwt_issuer::{Issuer, edge_oauth_config};
use support::protected_upstream::{CLIENT_ID, CLIENT_SECRET, protected_upstream};
use support::{
    QuiverDev, call, connect_as, ctl, ctl_json, text, text_in_every_mode, until_upstream_lists,
    write_file,
};

const RESOURCE: &str = "https://mcp.quiver.test/mcp";
/// An issuer the edge accepts whose tokens the upstream's authorization
/// server does not issue.
const ELSEWHERE: &str = "https://elsewhere.quiver.test";

/// A token of `subject` for tenant acme, as `iss` issues it.
fn token(issuer: &Issuer, iss: &str, subject: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    issuer.token(
        &json!({"iss": iss, "sub": subject, "aud": RESOURCE, "iat": now,
        "exp": now + 600, "tenant": "acme", "scope": "mcp:tools"}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn each_caller_reaches_the_upstream_as_itself_through_a_token_exchange() {
    exchange_flow(&[]).await;
}

/// The same with the executor in a process of its own: the caller's token
/// travels with each call and script over the executor API.
#[tokio::test(flavor = "multi_thread")]
async fn an_executor_process_exchanges_the_token_each_call_carries() {
    exchange_flow(&["--executor", "child"]).await;
}

async fn exchange_flow(dev_args: &[&str]) {
    let (url, seen) = protected_upstream().await;
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let jwks = write_file(dir.path(), "jwks.json", &issuer.jwks());
    // The edge accepts the upstream's own authorization server's tokens
    // (the issuer that can exchange them), and another issuer's.
    let base = url.trim_end_matches("/mcp").to_string();
    let config = format!(
        "{}\n[[edge.oauth.issuers]]\nissuer = \"{ELSEWHERE}\"\njwks_file = \"{}\"\n",
        edge_oauth_config(RESOURCE, &base, &jwks),
        jwks.display()
    );
    let path = write_file(dir.path(), "quiver.toml", &config);
    let dev = QuiverDev::start_with_env(
        &[&["--config", path.to_str().unwrap()], dev_args].concat(),
        &[("QUIVER_TEST_EXCHANGE_SECRET", Path::new(CLIENT_SECRET))],
    );
    let cp = dev.control_plane.clone();
    let (ok, _, err) = ctl(&cp, &["tenant", "create", "acme", "--mode", "passthrough"]);
    assert!(ok, "{err}");
    let (ok, _, err) = ctl(
        &cp,
        &[
            "upstream",
            "add",
            "tracker",
            "--url",
            &url,
            "--oauth-token-exchange",
            "--oauth-client-id",
            CLIENT_ID,
            "--oauth-client-secret",
            "${QUIVER_TEST_EXCHANGE_SECRET}",
        ],
    );
    assert!(ok, "upstream add: {err}");
    // Listed as Quiver's own client.
    until_upstream_lists(&cp, "tracker", 1);
    let exchanges_of = |subject: &str| {
        let exchanges = seen.exchanges.lock().unwrap();
        exchanges.iter().filter(|s| *s == subject).count()
    };

    let alice = token(&issuer, &base, "alice");
    let as_alice = connect_as(&dev.mode_url("passthrough"), &alice).await;
    let answered = call(&as_alice, "tracker__whoami", json!({})).await;
    assert!(
        text(&answered).starts_with("user alice,"),
        "{}",
        text(&answered)
    );
    let bob = connect_as(&dev.mode_url("passthrough"), &token(&issuer, &base, "bob")).await;
    let answered = call(&bob, "tracker__whoami", json!({})).await;
    assert!(
        text(&answered).starts_with("user bob,"),
        "{}",
        text(&answered)
    );

    // Every mode, a script's calls included, as the caller; one exchange.
    for answered in text_in_every_mode(&dev, Some(&alice), "tracker", "whoami").await {
        assert!(answered.contains("user alice,"), "{answered}");
    }
    assert_eq!(
        exchanges_of("alice"),
        1,
        "one exchange serves alice's calls"
    );
    assert_eq!(exchanges_of("bob"), 1);

    // The upstream refuses the exchanged token: exchanged again, once.
    seen.revoked_through
        .store(seen.tokens_issued.load(Ordering::SeqCst), Ordering::SeqCst);
    let answered = call(&as_alice, "tracker__whoami", json!({})).await;
    assert_ne!(answered.is_error, Some(true), "{}", text(&answered));
    assert!(
        text(&answered).starts_with("user alice,"),
        "{}",
        text(&answered)
    );
    assert_eq!(exchanges_of("alice"), 2);

    // A token of another issuer is never sent to this upstream's server.
    let stranger = connect_as(
        &dev.mode_url("passthrough"),
        &token(&issuer, ELSEWHERE, "eve"),
    )
    .await;
    let refused = call(&stranger, "tracker__whoami", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(
        text(&refused).contains("not the issuer of the caller's token"),
        "{}",
        text(&refused)
    );
    assert_eq!(exchanges_of("eve"), 0);

    // An API key has no token to exchange: refused before anything is sent.
    let key = ctl_json(&cp, &["key", "issue", "acme"])["key"]
        .as_str()
        .unwrap()
        .to_string();
    let calls_before = seen.tool_calls.load(Ordering::SeqCst);
    let with_key = connect_as(&dev.mode_url("passthrough"), &key).await;
    let refused = call(&with_key, "tracker__whoami", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(
        text(&refused).contains("no OAuth access token to exchange"),
        "{}",
        text(&refused)
    );
    assert_eq!(seen.tool_calls.load(Ordering::SeqCst), calls_before);
}
