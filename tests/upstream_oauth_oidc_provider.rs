//! The grant flow against a second, independent authorization server:
//! `oidc-provider` (tests/support/oidc_upstream.mjs), with dynamic client
//! registration, PKCE, resource indicators and rotating refresh tokens,
//! through a real `quiver dev` (`--auth required`). Two tenants are
//! authorized by two different people, and each tenant's calls reach the
//! upstream as its own person; the leader renews tokens before they expire
//! and when the upstream refuses one; a grant the server ended is dropped,
//! and calls say how to authorize again.

use crate::support;

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    time::Duration,
};

use serde_json::{Value, json};
use support::node_tools::{node_command, node_modules};
use support::{
    QuiverDev, call, connect_as, ctl, ctl_json, tenant_with_key, text, until_upstream_lists,
};

/// The upstream and its authorization server, as a child process that ends
/// with the test.
struct OidcUpstream {
    child: Child,
    url: String,
}

impl OidcUpstream {
    fn start() -> OidcUpstream {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/support/oidc_upstream.mjs");
        let module = node_modules().join("oidc-provider/lib/index.js");
        let mut child = node_command(&script)
            .env("OIDC_PROVIDER_MODULE", module)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the oidc-provider upstream");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.next().expect("a line").expect("readable stdout");
        let url = ready
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("not ready: {ready}"))
            .to_string();
        // Whatever it prints later is read (a closed pipe would stop it).
        std::thread::spawn(move || lines.for_each(drop));
        OidcUpstream { child, url }
    }

    fn base(&self) -> &str {
        self.url.trim_end_matches("/mcp")
    }

    /// A test control (`person/NAME`, `ttl/S`, `revoke-access`, …); the
    /// counters after it.
    async fn control(&self, what: &str) -> Value {
        let client = support::http();
        let request = match what {
            "stats" => client.get(format!("{}/test/stats", self.base())),
            _ => client.post(format!("{}/test/{what}", self.base())),
        };
        request.send().await.unwrap().json().await.unwrap()
    }
}

impl Drop for OidcUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A person's browser: opens the link, keeps the authorization server's
/// cookies, follows its redirects through sign-in and consent, and follows
/// the last one to Quiver's callback. The callback page's status and text.
async fn open_link(link: &str, callback: &str) -> (u16, String) {
    quiver_upstream::install_crypto_provider();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let mut at = link.to_string();
    for _ in 0..12 {
        let jar = cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let response = browser
            .get(&at)
            .header("cookie", jar)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {at}: {e}"));
        let status = response.status().as_u16();
        for set in response.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                cookies.insert(name.to_string(), value.to_string());
            }
        }
        if at.starts_with(callback) {
            return (status, response.text().await.unwrap_or_default());
        }
        let Some(next) = response.headers().get("location") else {
            panic!(
                "the authorization server stopped at {at} ({status}): {}",
                response.text().await.unwrap_or_default()
            );
        };
        let next = next.to_str().unwrap();
        at = match next.starts_with("http") {
            true => next.to_string(),
            false => format!("{}{next}", &link[..link.find("/auth").unwrap()]),
        };
    }
    panic!("too many redirects from {link}");
}

/// Has `person` grant the upstream for `tenant`.
async fn grant(cp: &str, upstream: &OidcUpstream, tenant: &str, person: &str, callback: &str) {
    upstream.control(&format!("person/{person}")).await;
    let link = ctl_json(cp, &["upstream", "authorize", "issues", "--tenant", tenant]);
    let link = link["link"].as_str().expect("a link");
    assert!(link.starts_with(upstream.base()), "{link}");
    let (status, page) = open_link(link, callback).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("tenant `{tenant}`")), "{page}");
}

/// Waits (bounded) until the server's counter `name` reaches `at_least`.
async fn until_counter(upstream: &OidcUpstream, name: &str, at_least: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let stats = upstream.control("stats").await;
        if stats[name].as_u64().unwrap_or(0) >= at_least {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} stays below {at_least}: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tenants_authorized_by_two_people_at_oidc_provider_each_call_as_their_own() {
    let upstream = OidcUpstream::start();
    let dev = QuiverDev::start(&["--auth", "required"]);
    let cp = dev.control_plane.clone();
    let callback = format!("http://{}/oauth/callback", dev.authority());
    let (ok, _, err) = ctl(
        &cp,
        &[
            "upstream",
            "add",
            "issues",
            "--url",
            &upstream.url,
            "--oauth",
            &callback,
        ],
    );
    assert!(ok, "upstream add: {err}");
    let acme = tenant_with_key(&cp, "acme", "passthrough");
    let beta = tenant_with_key(&cp, "beta", "passthrough");

    // acme's tokens are short-lived: the leader renews them.
    upstream.control("ttl/12").await;
    grant(&cp, &upstream, "acme", "alice", &callback).await;
    upstream.control("ttl/3600").await;
    grant(&cp, &upstream, "beta", "bob", &callback).await;
    let grants = ctl_json(&cp, &["upstream", "grants"]);
    assert_eq!(grants.as_array().map(Vec::len), Some(2), "{grants}");

    until_upstream_lists(&cp, "issues", 1);
    let as_acme = connect_as(&dev.mode_url("passthrough"), &acme).await;
    let as_beta = connect_as(&dev.mode_url("passthrough"), &beta).await;
    let answered = call(&as_acme, "issues__whoami", json!({})).await;
    assert_eq!(text(&answered), "user alice, via oidc-provider");
    let answered = call(&as_beta, "issues__whoami", json!({})).await;
    assert_eq!(text(&answered), "user bob, via oidc-provider");

    // Renewed before it expires (with a rotated refresh token), then
    // refused mid-use and renewed at once.
    until_counter(&upstream, "refreshes", 1).await;
    let answered = call(&as_acme, "issues__whoami", json!({})).await;
    assert_eq!(text(&answered), "user alice, via oidc-provider");
    let before = upstream.control("stats").await["refreshes"]
        .as_u64()
        .unwrap();
    upstream.control("revoke-access").await;
    let answered = call(&as_beta, "issues__whoami", json!({})).await;
    assert_eq!(text(&answered), "user bob, via oidc-provider");
    let after = upstream.control("stats").await["refreshes"]
        .as_u64()
        .unwrap();
    assert!(
        after > before,
        "the refused token was renewed: {before} → {after}"
    );

    // The server ends every grant: refresh tokens stop working, the grants
    // are dropped, and calls name the command that authorizes again.
    upstream.control("revoke-grants").await;
    upstream.control("revoke-access").await;
    let refused = call(&as_beta, "issues__whoami", json!({})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(
        text(&refused).contains("quiver ctl upstream authorize issues --tenant beta"),
        "{}",
        text(&refused)
    );
    let left = ctl_json(&cp, &["upstream", "grants"]);
    assert!(
        !left.to_string().contains("\"beta\""),
        "beta's grant was dropped: {left}"
    );
}
