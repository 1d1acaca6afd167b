//! `quiver ctl upstream add … --oauth …`: an HTTP upstream behind OAuth is
//! registered with Quiver's callback and how Quiver is known to the
//! authorization server; a client secret given as a value instead of a
//! reference, or OAuth for a stdio upstream, is refused with the fix and
//! registers nothing.

use crate::support;

use support::{QuiverDev, ctl, ctl_json};

#[tokio::test(flavor = "multi_thread")]
async fn ctl_registers_an_upstream_behind_oauth_and_refuses_a_secret_given_as_a_value() {
    let dev = QuiverDev::start(&[]);
    let cp = dev.control_plane.clone();
    let base = [
        "upstream",
        "add",
        "guarded",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--oauth",
        "https://quiver.example/oauth/callback",
        "--oauth-client-id",
        "quiver",
    ];

    let (ok, _, err) = ctl(
        &cp,
        &[&base[..], &["--oauth-client-secret", "s3cret"]].concat(),
    );
    assert!(!ok, "a literal secret is refused");
    assert!(
        err.contains("oauth.client_secret") && err.contains("never the secret itself"),
        "{err}"
    );
    let (ok, _, err) = ctl(
        &cp,
        &[
            "upstream",
            "add",
            "local",
            "--command",
            "true",
            "--oauth",
            "https://quiver.example/cb",
        ],
    );
    assert!(!ok, "OAuth needs an HTTP upstream");
    assert!(err.contains("HTTP upstreams only"), "{err}");
    let listed = ctl_json(&cp, &["upstream", "list"]).to_string();
    assert!(
        !listed.contains("guarded") && !listed.contains("\"local\""),
        "{listed}"
    );

    let (ok, _, err) = ctl(
        &cp,
        &[
            &base[..],
            &[
                "--oauth-client-secret",
                "${GH_SECRET}",
                "--oauth-scope",
                "repo",
            ],
        ]
        .concat(),
    );
    assert!(ok, "{err}");
    let shown = ctl_json(&cp, &["upstream", "show", "guarded"]);
    let oauth = &shown["config"]["oauth"];
    assert_eq!(
        oauth["redirect_uri"],
        "https://quiver.example/oauth/callback"
    );
    assert_eq!(oauth["client_id"], "quiver");
    assert_eq!(
        oauth["client_secret"], "${GH_SECRET}",
        "a reference, never a value"
    );
    assert_eq!(oauth["scopes"], serde_json::json!(["repo"]));
}
