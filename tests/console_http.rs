//! The console's rules at the HTTP level, against a real `quiver dev`: the
//! headers every answer carries, the session cookie's attributes, CSRF and
//! origin checks on every change, the Host check, roles kept apart, a
//! revoked key ending its session, and no credential in the logs.

use reqwest::{StatusCode, header};
use serde_json::{Value, json};

use crate::support::{self, QuiverDev, ctl_json};

struct Console {
    base: String,
    http: reqwest::Client,
}

impl Console {
    fn new(dev: &QuiverDev) -> Console {
        Console {
            base: format!("http://{}/console/api", dev.authority()),
            http: support::http(),
        }
    }

    /// Signs in; the cookie and the CSRF token.
    async fn sign_in(&self, role: &str, credential: &str) -> (String, String) {
        let response = self
            .http
            .post(format!("{}/session", self.base))
            .json(&json!({ "role": role, "credential": credential }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "sign in as {role}");
        let cookie = response
            .headers()
            .get(header::SET_COOKIE)
            .expect("a session cookie")
            .to_str()
            .unwrap()
            .to_string();
        for part in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
            assert!(cookie.contains(part), "{cookie}");
        }
        let csrf = response.json::<Value>().await.unwrap()["csrf"]
            .as_str()
            .unwrap()
            .to_string();
        (cookie.split(';').next().unwrap().to_string(), csrf)
    }

    async fn get(&self, cookie: &str, path: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header(header::COOKIE, cookie)
            .send()
            .await
            .unwrap();
        (
            response.status(),
            response.json().await.unwrap_or(Value::Null),
        )
    }

    async fn post(
        &self,
        cookie: &str,
        csrf: Option<&str>,
        origin: Option<&str>,
        path: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.base))
            .header(header::COOKIE, cookie)
            .json(&body);
        if let Some(csrf) = csrf {
            request = request.header("x-quiver-csrf", csrf);
        }
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        let response = request.send().await.unwrap();
        (
            response.status(),
            response.json().await.unwrap_or(Value::Null),
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_csrf_roles_and_headers_hold() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("dev.log");
    let dev = QuiverDev::start_logging_to(
        &[
            "--auth",
            "required",
            "--data",
            data.path().to_str().unwrap(),
        ],
        &log,
    );
    let cp = dev.control_plane.clone();
    let key = support::tenant_with_flags(
        &cp,
        "acme",
        &["--server", "weather", "--self-service-keys", "true"],
    );
    let spare = ctl_json(&cp, &["key", "issue", "acme"]);
    let console = Console::new(&dev);

    // The page: a strict CSP and the other headers, and no inline script.
    let page = console
        .http
        .get(format!("http://{}/console/", dev.authority()))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(page.headers()[header::X_FRAME_OPTIONS], "DENY");
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("<script>") && html.contains("src=\"console.js\""),
        "{html}"
    );

    // Signed out, or with a made-up cookie: nothing.
    let (status, _) = console.get("", "/tools").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = console.get("quiver_console=made-up", "/tools").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // A wrong Host is refused before anything else.
    let wrong_host = console
        .http
        .get(format!("{}/session", console.base))
        .header(header::HOST, "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_host.status(), StatusCode::FORBIDDEN);

    let (cookie, csrf) = console.sign_in("tenant", &key).await;
    let (status, tools) = console.get(&cookie, "/tools").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        tools["total"], 3,
        "only the weather server's tools: {tools}"
    );

    // A change without the CSRF token, with a wrong one, or from another
    // origin is refused, and changes nothing.
    let keys_before = ctl_json(&cp, &["tenant", "show", "acme"])["keys"]
        .as_array()
        .unwrap()
        .len();
    let (status, _) = console.post(&cookie, None, None, "/keys", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = console
        .post(&cookie, Some("wrong"), None, "/keys", json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = console
        .post(
            &cookie,
            Some(&csrf),
            Some("http://attacker.example"),
            "/keys",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let keys_after = ctl_json(&cp, &["tenant", "show", "acme"])["keys"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(keys_before, keys_after, "nothing was issued");
    let (status, issued) = console
        .post(
            &cookie,
            Some(&csrf),
            Some(&format!("http://{}", dev.authority())),
            "/keys",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert!(issued["key"].as_str().unwrap().starts_with("qk_"));
    // The page's next read of the list shows the change at once: the answer
    // waits for this edge's views to follow the commit.
    let issued_id = issued["key_id"].as_str().unwrap().to_string();
    let listed = |keys: &Value| {
        keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["key_id"] == issued_id.as_str())
    };
    let (_, keys) = console.get(&cookie, "/keys").await;
    assert!(listed(&keys), "the issued key is listed: {keys}");
    let (status, _) = console
        .post(
            &cookie,
            Some(&csrf),
            None,
            "/keys/revoke",
            json!({"key_id": issued_id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, keys) = console.get(&cookie, "/keys").await;
    assert!(!listed(&keys), "the revoked key is gone: {keys}");

    // The session cannot revoke its own key; the tenant's operator tools are closed to it.
    let own = key.split('_').nth(1).unwrap();
    let (status, refused) = console
        .post(
            &cookie,
            Some(&csrf),
            None,
            "/keys/revoke",
            json!({"key_id": own}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    // What the control plane refuses keeps its meaning: a key the tenant
    // does not hold is not found, with the control plane's reason.
    let (status, missing) = console
        .post(
            &cookie,
            Some(&csrf),
            None,
            "/keys/revoke",
            json!({"key_id": "k-none-such"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    assert!(
        missing["error"].as_str().unwrap().contains("has no key"),
        "{missing}"
    );
    let (status, _) = console.get(&cookie, "/op/tenants").await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The operator token is its own credential; the operator has no tenant view.
    let token_file = data.path().join("console-operator.token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let wrong = console
        .http
        .post(format!("{}/session", console.base))
        .json(&json!({"role": "operator", "credential": key}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let (operator, operator_csrf) = console.sign_in("operator", token.trim()).await;
    let (status, tenants) = console.get(&operator, "/op/tenants").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        tenants.to_string().contains("acme") && !tenants.to_string().contains("sha256"),
        "{tenants}"
    );
    let (status, _) = console.get(&operator, "/tools").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, audit) = console.get(&operator, "/op/audit?since=0&kind=call").await;
    assert_eq!(status, StatusCode::OK, "{audit}");

    // Another session of the tenant, on the spare key: revoking that key (here by
    // the first session) ends it at its next request.
    let spare_key = spare["key"].as_str().unwrap();
    let (second, _) = console.sign_in("tenant", spare_key).await;
    assert_eq!(console.get(&second, "/tools").await.0, StatusCode::OK);
    let spare_id = spare["key_id"].as_str().unwrap();
    let (status, _) = console
        .post(
            &cookie,
            Some(&csrf),
            None,
            "/keys/revoke",
            json!({"key_id": spare_id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    support::ctl_until(&cp, &["-o", "json", "tenant", "show", "acme"], |ok, out| {
        ok && !out.contains(spare_id)
    });
    let mut status = StatusCode::OK;
    for _ in 0..100 {
        status = console.get(&second, "/tools").await.0;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        // The edge applies the revocation with the next tenants update.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a revoked key's session ends"
    );

    // Sign-out ends a session.
    let (status, _) = console
        .http
        .delete(format!("{}/session", console.base))
        .header(header::COOKIE, &operator)
        .header("x-quiver-csrf", &operator_csrf)
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        console.get(&operator, "/op/tenants").await.0,
        StatusCode::UNAUTHORIZED
    );

    // No credential, session id or CSRF token ever reaches the log.
    drop(dev);
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("console: refused an operator sign-in"),
        "the log holds the console's refusals (and so would hold a leak): {logged}"
    );
    for secret in [
        key.as_str(),
        spare_key,
        token.trim(),
        issued["key"].as_str().unwrap(),
        csrf.as_str(),
    ] {
        assert!(!logged.contains(secret), "a secret is in the log");
    }
    let session_id = cookie.split('=').nth(1).unwrap();
    assert!(!logged.contains(session_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edge_of_a_fleet_serves_the_console_through_the_admin_api() {
    let dev = QuiverDev::start(&["--auth", "required"]);
    let cp = dev.control_plane.clone();
    let key = support::tenant_with_flags(
        &cp,
        "acme",
        &["--server", "notes", "--self-service-keys", "true"],
    );
    let dir = tempfile::tempdir().unwrap();
    let token = "an-operator-token-of-forty-characters-00";
    let token_file = support::write_file(dir.path(), "operator.token", &format!("{token}\n"));
    let config = support::write_file(
        dir.path(),
        "edge.toml",
        &format!(
            "[edge.console]\noperator_token_file = \"{}\"\n",
            token_file.display()
        ),
    );
    let edge = support::EdgeProcess::start_with(
        &cp,
        &["--auth", "required", "--config", config.to_str().unwrap()],
    );
    let console = Console {
        base: format!("http://{}/console/api", edge.authority),
        http: support::http(),
    };

    // The tenant's view comes from the cluster's manifest; its usage and
    // keys from the control plane over the admin API.
    let (cookie, csrf) = console.sign_in("tenant", &key).await;
    let mut tools = Value::Null;
    for _ in 0..100 {
        tools = console.get(&cookie, "/tools").await.1;
        if tools["total"] == 3 {
            break;
        }
        // The edge takes the manifest and tenants from its watch.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(tools["total"], 3, "the notes server's tools: {tools}");
    let (status, usage) = console.get(&cookie, "/usage").await;
    assert_eq!(status, StatusCode::OK, "{usage}");
    assert_eq!(usage["usage"]["tenant"], "acme");
    let (status, issued) = console
        .post(&cookie, Some(&csrf), None, "/keys", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    let id = issued["key_id"].as_str().unwrap();
    assert!(
        ctl_json(&cp, &["tenant", "show", "acme"])
            .to_string()
            .contains(id)
    );

    // The operator named by the edge's own token file sees the cluster.
    let (operator, _) = console.sign_in("operator", token).await;
    let (status, cluster) = console.get(&operator, "/op/cluster").await;
    assert_eq!(status, StatusCode::OK, "{cluster}");
    assert!(
        cluster["members"].as_array().is_some_and(|m| !m.is_empty()),
        "{cluster}"
    );
    // A short token file stops the edge at start, saying why.
    let short = support::write_file(dir.path(), "short.token", "short\n");
    let bad = support::write_file(
        dir.path(),
        "bad.toml",
        &format!(
            "[edge.console]\noperator_token_file = \"{}\"\n",
            short.display()
        ),
    );
    let output = std::process::Command::new(support::quiver_bin())
        .args([
            "edge",
            "--listen",
            "127.0.0.1:0",
            "--control-plane",
            &cp,
            "--config",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("shorter than 32 characters"), "{said}");
}
