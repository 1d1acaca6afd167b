//! An upstream behind OAuth where a person grants access, through a real
//! `quiver dev` (`--auth required`, tenants with their own keys) and the
//! loopback authorization server of `support::protected_upstream`:
//!
//! - `quiver ctl upstream add … --oauth CALLBACK` registers it, `quiver ctl
//!   upstream authorize … --tenant acme` prints the link; the person opens
//!   it, approves, and the authorization server sends them to the edge's
//!   `/oauth/callback`, which completes the grant;
//! - acme's calls then work in every mode as that person; another tenant's
//!   are refused with the command that authorizes it; a tool that needs more
//!   scope names the command that asks for it (a step-up);
//! - the leader renews the access token before it expires, and at once when
//!   the upstream refuses one (a token revoked mid-use);
//! - a refresh token the server revoked drops the grant, and calls say to
//!   authorize again; a callback naming another issuer keeps nothing;
//! - operators cannot overwrite the token as a secret, and deleting the
//!   tenant drops its grant.
//!
//! Both with the executor in `quiver dev`'s process and in one of its own
//! (`--executor child`, which reaches the control plane over its admin API).

use crate::support;

use std::{sync::atomic::Ordering, time::Duration};

use serde_json::{Value, json};
use support::protected_upstream::{Seen, protected_upstream};
use support::{
    QuiverDev, call, connect_as, ctl, ctl_json, tenant_with_key, text, text_in_every_mode,
    until_upstream_lists,
};

/// What a person's browser does with the link: opens it (the server
/// approves at once and redirects), then follows the redirect to Quiver's
/// callback. Returns the callback page's status and text.
pub(crate) async fn open_link(link: &str) -> (u16, String) {
    quiver_upstream::install_crypto_provider();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let approved = browser.get(link).send().await.expect("open the link");
    assert_eq!(approved.status().as_u16(), 302, "the server approves");
    let back = approved.headers()["location"].to_str().unwrap().to_string();
    let page = browser.get(&back).send().await.expect("the callback");
    let status = page.status().as_u16();
    (status, page.text().await.unwrap_or_default())
}

/// The link `quiver ctl upstream authorize` gives for `tenant`.
pub(crate) fn authorize_link(cp: &str, tenant: &str) -> String {
    let link = ctl_json(
        cp,
        &["upstream", "authorize", "tracker", "--tenant", tenant],
    );
    link["link"].as_str().expect("a link").to_string()
}

/// Waits (bounded) until `done` holds of what the server saw.
async fn until(what: &str, seen: &Seen, done: impl Fn(&Seen) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done(seen) {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_authorizes_an_upstream_once_and_its_tools_work_in_every_mode() {
    grant_flow(&[]).await;
}

/// The same with the executor in a process of its own, which asks the
/// control plane over its admin API to renew a refused token.
#[tokio::test(flavor = "multi_thread")]
async fn an_executor_process_has_the_leader_renew_a_refused_token() {
    grant_flow(&["--executor", "child"]).await;
}

async fn grant_flow(dev_args: &[&str]) {
    let (url, seen) = protected_upstream().await;
    *seen.person.lock().unwrap() = "alice".into();
    seen.scoped_tool.store(true, Ordering::SeqCst);
    let dev = QuiverDev::start(&[&["--auth", "required"], dev_args].concat());
    let cp = dev.control_plane.clone();
    let callback = format!("http://{}/oauth/callback", dev.authority());
    let (ok, _, err) = ctl(
        &cp,
        &[
            "upstream", "add", "tracker", "--url", &url, "--oauth", &callback,
        ],
    );
    assert!(ok, "upstream add: {err}");
    let acme = tenant_with_key(&cp, "acme", "passthrough");
    let beta = tenant_with_key(&cp, "beta", "passthrough");

    // Operators cannot set (or overwrite) the token themselves.
    let (ok, _, err) = ctl(
        &cp,
        &["secret", "delete", "--tenant", "acme", "oauth-tracker"],
    );
    assert!(
        !ok && err.contains("quiver ctl upstream deauthorize"),
        "{err}"
    );

    // Short-lived tokens: the leader renews them before they expire.
    seen.token_lifetime_s.store(12, Ordering::SeqCst);
    let link = authorize_link(&cp, "acme");
    assert!(link.contains("code_challenge="), "PKCE: {link}");
    let (status, page) = open_link(&link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("tenant `acme`"), "{page}");
    let grants = ctl_json(&cp, &["upstream", "grants"]);
    assert_eq!(grants[0]["tenant"], "acme", "{grants}");
    assert_eq!(grants[0]["renewable"], true, "{grants}");
    assert!(
        !grants.to_string().contains("tok-"),
        "no token shown: {grants}"
    );
    // As operators read them: the link to hand over, the grant in a table.
    let (ok, shown, err) = ctl(
        &cp,
        &["upstream", "authorize", "tracker", "--tenant", "beta"],
    );
    assert!(
        ok && shown.contains("Open this link") && shown.contains("/authorize?"),
        "{shown}{err}"
    );
    let (_, table, _) = ctl(&cp, &["upstream", "grants"]);
    assert!(
        table.contains("acme") && table.contains("tracker") && !table.contains("tok-"),
        "{table}"
    );

    // Discovery lists the tools with acme's grant; acme calls them in
    // every mode, as the person who granted access.
    until_upstream_lists(&cp, "tracker", 2);
    for answered in text_in_every_mode(&dev, Some(&acme), "tracker", "whoami").await {
        assert!(answered.contains("user alice"), "{answered}");
    }
    let passthrough = connect_as(&dev.mode_url("passthrough"), &acme).await;

    // Another tenant's calls are refused, naming what grants access.
    let other = connect_as(&dev.mode_url("search"), &beta).await;
    let refused = call(
        &other,
        "call_tool",
        json!({"name": "tracker__whoami", "arguments": {}}),
    )
    .await;
    assert!(
        text(&refused).contains("quiver ctl upstream authorize tracker --tenant beta"),
        "{}",
        text(&refused)
    );
    assert!(!text(&refused).contains("alice"), "{}", text(&refused));

    // A tool that needs more scope than was granted: the call names the
    // command that asks for it, keeping what was granted (a step-up).
    let refused = call(&passthrough, "tracker__file_issue", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let step_up = "quiver ctl upstream authorize tracker --tenant acme --scope issues:write";
    assert!(text(&refused).contains(step_up), "{}", text(&refused));
    let link = ctl_json(
        &cp,
        &[
            "upstream",
            "authorize",
            "tracker",
            "--tenant",
            "acme",
            "--scope",
            "issues:write",
        ],
    );
    let (status, page) = open_link(link["link"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{page}");
    let answered = call(&passthrough, "tracker__file_issue", json!({})).await;
    assert!(
        text(&answered).contains("user alice"),
        "{}",
        text(&answered)
    );

    // Renewed before it expires, with no call refused for it.
    until("a renewal before expiry", &seen, |s| {
        s.refreshes.load(Ordering::SeqCst) >= 1
    })
    .await;
    seen.token_lifetime_s.store(3600, Ordering::SeqCst);
    until("an hour-long token", &seen, |s| {
        s.refreshes.load(Ordering::SeqCst) >= 2
    })
    .await;
    let answered = call(&passthrough, "tracker__whoami", json!({})).await;
    assert!(
        text(&answered).contains("user alice"),
        "{}",
        text(&answered)
    );

    // The token is revoked mid-use: the refused call is sent again with a
    // renewed one.
    let refreshes = seen.refreshes.load(Ordering::SeqCst);
    let refused_before = seen.refused_mcp.load(Ordering::SeqCst);
    seen.revoked_through
        .store(seen.tokens_issued.load(Ordering::SeqCst), Ordering::SeqCst);
    let answered = call(&passthrough, "tracker__whoami", json!({})).await;
    assert_ne!(answered.is_error, Some(true), "{}", text(&answered));
    assert!(
        text(&answered).contains("user alice"),
        "{}",
        text(&answered)
    );
    assert!(
        seen.refused_mcp.load(Ordering::SeqCst) > refused_before,
        "it was refused once"
    );
    assert_eq!(
        seen.refreshes.load(Ordering::SeqCst),
        refreshes + 1,
        "renewed once"
    );

    // A token revoked while no connection holds it: beta's first connection
    // is refused at initialize; the token is renewed and it connects again.
    *seen.person.lock().unwrap() = "bob".into();
    let (status, page) = open_link(&authorize_link(&cp, "beta")).await;
    assert_eq!(status, 200, "{page}");
    let refreshes = seen.refreshes.load(Ordering::SeqCst);
    seen.revoked_through
        .store(seen.tokens_issued.load(Ordering::SeqCst), Ordering::SeqCst);
    let whoami = json!({"name": "tracker__whoami", "arguments": {}});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let answered = loop {
        let answered = call(&other, "call_tool", whoami.clone()).await;
        // Until the grant reaches the executor with the tenants' secrets.
        if !text(&answered).contains("nobody granted yet") {
            break answered;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "beta's grant never arrived"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(text(&answered).contains("user bob"), "{}", text(&answered));
    assert!(
        seen.refreshes.load(Ordering::SeqCst) > refreshes,
        "beta's revoked token was renewed"
    );
    let (ok, _, err) = ctl(
        &cp,
        &["upstream", "deauthorize", "tracker", "--tenant", "beta"],
    );
    assert!(ok, "deauthorize: {err}");
    *seen.person.lock().unwrap() = "alice".into();

    // The server revokes the refresh token too: the grant is dropped and
    // calls say how to authorize again.
    seen.refresh_revoked.store(true, Ordering::SeqCst);
    seen.revoked_through
        .store(seen.tokens_issued.load(Ordering::SeqCst), Ordering::SeqCst);
    let refused = call(&passthrough, "tracker__whoami", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(
        text(&refused).contains("quiver ctl upstream authorize tracker --tenant acme"),
        "{}",
        text(&refused)
    );
    assert_eq!(ctl_json(&cp, &["upstream", "grants"]), json!([]));

    // A callback naming another issuer than the one discovered keeps nothing.
    seen.refresh_revoked.store(false, Ordering::SeqCst);
    seen.wrong_issuer.store(true, Ordering::SeqCst);
    let (status, page) = open_link(&authorize_link(&cp, "acme")).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.to_lowercase().contains("issuer"), "{page}");
    assert_eq!(ctl_json(&cp, &["upstream", "grants"]), json!([]));

    // Granted again; deleting the tenant drops its grant with it.
    seen.wrong_issuer.store(false, Ordering::SeqCst);
    let (status, page) = open_link(&authorize_link(&cp, "acme")).await;
    assert_eq!(status, 200, "{page}");
    let answered = call(&passthrough, "tracker__whoami", json!({})).await;
    assert!(
        text(&answered).contains("user alice"),
        "{}",
        text(&answered)
    );
    let (ok, _, err) = ctl(&cp, &["tenant", "delete", "acme"]);
    assert!(ok, "{err}");
    let grants: Value = ctl_json(&cp, &["upstream", "grants"]);
    assert_eq!(grants, json!([]));
}
