//! OAuth 2.1 access tokens at the edge, end to end: `quiver dev` as an MCP
//! resource server trusting one issuer's JWKS file, tokens signed in the
//! test (ES256 with ring). A token's tenant claim picks the tenant and its
//! view; every kind of bad token gets the same 401; a token without the
//! required scope gets 403 `insufficient_scope`; the protected-resource
//! metadata names the issuer and the scopes.

use crate::support;

use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use support::jwt_issuer::{Issuer, b64, edge_oauth_config};
use support::{ctl, post_initialize, start_with_config, write_file};

const RESOURCE: &str = "https://mcp.quiver.test/mcp";
const ISSUER: &str = "https://issuer.quiver.test";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(tenant: &str) -> Value {
    json!({"iss": ISSUER, "sub": "user-7", "aud": RESOURCE, "iat": now(), "exp": now() + 600,
        "tenant": tenant, "scope": "openid mcp:tools"})
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_pick_their_tenant_and_every_bad_token_gets_the_same_answer() {
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let jwks = write_file(dir.path(), "jwks.json", &issuer.jwks());
    let config = edge_oauth_config(RESOURCE, ISSUER, &jwks);
    let (dev, _config_dir) = start_with_config(&config, &[]);
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &["tenant", "create", "weather-only", "--server", "weather"],
    );
    assert!(ok, "{err}");
    let url = dev.mode_url("passthrough");

    tracing::info!("--- a good token is served its tenant's view");
    quiver_upstream::install_crypto_provider();
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url.clone());
    transport.auth_header = Some(issuer.token(&claims("weather-only")));
    let client =
        ().serve(StreamableHttpClientTransport::from_config(transport))
            .await
            .expect("a client with a valid token connects");
    let names = support::tool_names(&client).await;
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|n| n.starts_with("weather__")),
        "{names:?}"
    );
    client.cancel().await.unwrap();

    tracing::info!("--- every bad token: 401 invalid_token, one body for all");
    let http = support::http();
    let send = |token: String| {
        let url = url.clone();
        async move { post_initialize(&url, Some(&format!("Bearer {token}"))).await }
    };
    let other = Issuer::new();
    let mut bad = vec![
        ("expired", {
            let mut c = claims("weather-only");
            c["exp"] = json!(now() - 3600);
            issuer.token(&c)
        }),
        ("not yet valid", {
            let mut c = claims("weather-only");
            c["nbf"] = json!(now() + 3600);
            issuer.token(&c)
        }),
        ("wrong audience", {
            let mut c = claims("weather-only");
            c["aud"] = json!("https://elsewhere.test/mcp");
            issuer.token(&c)
        }),
        ("wrong issuer", {
            let mut c = claims("weather-only");
            c["iss"] = json!("https://evil.test");
            issuer.token(&c)
        }),
        (
            "signed by another key",
            other.token(&claims("weather-only")),
        ),
        ("no such tenant", issuer.token(&claims("ghost"))),
        ("malformed", "abc.def".to_string()),
    ];
    let tampered = {
        let token = issuer.token(&claims("weather-only"));
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut c = claims("weather-only");
        c["tenant"] = json!("someone-else");
        parts[1] = b64(c.to_string().as_bytes());
        parts.join(".")
    };
    bad.push(("tampered payload", tampered));
    let mut bodies = Vec::new();
    for (case, token) in bad {
        let response = send(token).await;
        assert_eq!(response.status(), 401, "{case}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(
            challenge,
            "Bearer resource_metadata=\"https://mcp.quiver.test/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\", scope=\"mcp:tools\"",
            "{case}"
        );
        bodies.push((case, response.text().await.unwrap()));
    }
    for (case, body) in &bodies {
        assert_eq!(
            body, &bodies[0].1,
            "{case} answered differently from {}",
            bodies[0].0
        );
    }

    tracing::info!("--- a valid token without the scope: 403 insufficient_scope");
    let mut c = claims("weather-only");
    c["scope"] = json!("openid");
    let response = send(issuer.token(&c)).await;
    assert_eq!(response.status(), 403);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"mcp:tools\""),
        "{challenge}"
    );

    tracing::info!("--- the protected-resource metadata");
    let base = dev.url.trim_end_matches("/mcp");
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let metadata: Value = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(metadata["resource"], RESOURCE, "{path}");
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]), "{path}");
        assert_eq!(metadata["scopes_supported"], json!(["mcp:tools"]), "{path}");
    }
}
