//! An upstream behind OAuth 2.1 that Quiver reaches as a service account
//! (client credentials): `quiver dev` discovers the authorization server from
//! the upstream's 401, takes a token for that server alone (RFC 8707
//! `resource`) with the client secret it resolves from its own environment,
//! and the upstream's tool then works in every mode. The upstream and its
//! authorization server are `support::protected_upstream`.

use crate::support;

use std::{path::Path, sync::atomic::Ordering};

use support::protected_upstream::{CLIENT_ID, CLIENT_SECRET, protected_upstream};
use support::{QuiverDev, text_in_every_mode, write_file};

#[tokio::test(flavor = "multi_thread")]
async fn a_service_account_upstream_behind_oauth_works_in_every_mode() {
    let (url, seen) = protected_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[[upstream]]
id = "tracker"
transport = "http"
url = "{url}"
protocol = "2025-11-25"

[upstream.oauth]
grant = "client_credentials"
client_id = "{CLIENT_ID}"
client_secret = "${{QUIVER_TEST_TRACKER_SECRET}}"
"#
    );
    let path = write_file(dir.path(), "quiver.toml", &config);
    let dev = QuiverDev::start_with_env(
        &["--config", path.to_str().unwrap()],
        &[("QUIVER_TEST_TRACKER_SECRET", Path::new(CLIENT_SECRET))],
    );

    for answered in text_in_every_mode(&dev, None, "tracker", "whoami").await {
        assert!(
            answered.contains("service account, token tok-"),
            "{answered}"
        );
    }

    assert!(
        seen.tool_calls.load(Ordering::SeqCst) >= 3,
        "every mode reached it"
    );
    assert!(
        seen.refused_mcp.load(Ordering::SeqCst) >= 1,
        "the first request went without a token and was refused"
    );
    let issued = seen.tokens_issued.load(Ordering::SeqCst);
    assert!(
        (1..=2).contains(&issued),
        "tokens are taken when refused, not per call: {issued}"
    );
}
