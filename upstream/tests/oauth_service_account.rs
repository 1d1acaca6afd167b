//! An upstream behind OAuth reached as a service account (client
//! credentials): the token is taken when the upstream refuses, not per
//! call; when the server revokes it, calls refused at the same moment share
//! one new token, and every call still gets its answer (a refused call did
//! not run, so it is sent again). The server is the workspace's
//! `protected_upstream` test server, on loopback.

use std::sync::atomic::Ordering;

use futures::future::join_all;
use quiver_upstream::{CallOptions, OAuthGrant, Upstream, UpstreamConfig, UpstreamOAuth};

use crate::protected_upstream::{CLIENT_ID, CLIENT_SECRET, protected_upstream};

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_refused_after_a_revocation_share_one_new_token() {
    let (url, seen) = protected_upstream().await;
    let variable = "QUIVER_TEST_OAUTH_SERVICE_SECRET";
    // SAFETY: set before the upstream resolves it; no other test reads or
    // writes this variable.
    unsafe { std::env::set_var(variable, CLIENT_SECRET) };
    let mut config = UpstreamConfig::http("tracker", &url);
    config.protocol = quiver_upstream::UpstreamProtocol::Sessions;
    config.oauth = Some(UpstreamOAuth {
        grant: OAuthGrant::ClientCredentials,
        redirect_uri: String::new(),
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(format!("${{{variable}}}")),
        client_metadata_url: None,
        scopes: Vec::new(),
    });
    config.validate().expect("valid settings");
    let upstream = Upstream::new(config);

    let tools = upstream.list_tools().await.expect("listed behind OAuth");
    assert_eq!(tools.len(), 1);
    assert_eq!(seen.tokens_issued.load(Ordering::SeqCst), 1);

    // The server revokes every token issued so far; six calls go at once.
    seen.revoked_through.store(1, Ordering::SeqCst);
    let calls = (0..6).map(|_| upstream.call_tool("whoami", None, CallOptions::default()));
    for answer in join_all(calls).await {
        let answer = answer.expect("answered after a new token");
        let text = serde_json::to_string(&answer.content).unwrap();
        assert!(text.contains("token tok-2"), "{text}");
    }
    assert_eq!(
        seen.tokens_issued.load(Ordering::SeqCst),
        2,
        "one new token for the calls refused together"
    );
    assert_eq!(seen.tool_calls.load(Ordering::SeqCst), 6);
}
