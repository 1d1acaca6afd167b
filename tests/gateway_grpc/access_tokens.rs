//! OAuth access tokens on the gateway: a token picks its tenant by claim, and
//! a missing scope is permission denied.

use super::*;

/// An ES256 token issuer (ring) and its JWKS, for the OAuth test.
struct Issuer {
    key: ring::signature::EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
}

impl Issuer {
    const URL: &str = "https://issuer.quiver.test";
    const RESOURCE: &str = "https://mcp.quiver.test/mcp";

    fn new() -> Issuer {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Issuer { key, rng }
    }

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    fn jwks(&self) -> String {
        use ring::signature::KeyPair as _;
        let point = self.key.public_key().as_ref();
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
            "x": Self::b64(&point[1..33]), "y": Self::b64(&point[33..65])}]})
        .to_string()
    }

    /// A token for `tenant` with `scope`, expiring `expires_in` seconds from
    /// now (negative: already expired).
    fn token(&self, tenant: &str, scope: &str, expires_in: i64) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let claims = json!({"iss": Self::URL, "sub": "svc-7", "aud": Self::RESOURCE, "iat": now - 60,
            "exp": now + expires_in, "tenant": tenant, "scope": scope});
        let header = Self::b64(
            json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})
                .to_string()
                .as_bytes(),
        );
        let signed = format!("{header}.{}", Self::b64(claims.to_string().as_bytes()));
        let signature = self.key.sign(&self.rng, signed.as_bytes()).unwrap();
        format!("{signed}.{}", Self::b64(signature.as_ref()))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_access_token_picks_its_tenant_and_a_missing_scope_is_permission_denied() {
    let issuer = Issuer::new();
    let dir = tempfile::tempdir().unwrap();
    let jwks = write_file(dir.path(), "jwks.json", &issuer.jwks());
    let config = format!(
        "[edge]\nauth = \"required\"\ngrpc_listen = \"127.0.0.1:0\"\n\n[edge.oauth]\nresource = \"{}\"\nrequired_scopes = [\"mcp:tools\"]\n\n[[edge.oauth.issuers]]\nissuer = \"{}\"\njwks_file = \"{}\"\n",
        Issuer::RESOURCE,
        Issuer::URL,
        jwks.display()
    );
    let (dev, _config_dir) = support::start_with_config(&config, &[]);
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &["tenant", "create", "weather-only", "--server", "weather"],
    );
    assert!(ok, "{err}");
    let mut grpc = client(&dev).await;
    let bearer = |token: String| format!("Bearer {token}");

    tracing::info!("--- a good token is served its tenant's view");
    let good = bearer(issuer.token("weather-only", "openid mcp:tools", 600));
    let listed = grpc
        .list_tools(presenting(Some(&good), ListToolsRequest {}))
        .await
        .expect("ListTools with a token")
        .into_inner();
    assert!(!listed.tools.is_empty());
    assert!(
        listed.tools.iter().all(|t| t.server == "weather"),
        "{:?}",
        listed.tools
    );

    tracing::info!(
        "--- an expired token, or one naming no tenant, is answered as no credential at all"
    );
    let missing = grpc
        .list_tools(ListToolsRequest {})
        .await
        .expect_err("refused");
    for token in [
        issuer.token("weather-only", "openid mcp:tools", -600),
        issuer.token("nobody", "openid mcp:tools", 600),
        Issuer::new().token("weather-only", "openid mcp:tools", 600),
    ] {
        let status = grpc
            .list_tools(presenting(Some(&bearer(token)), ListToolsRequest {}))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
        assert_eq!(status.message(), missing.message());
    }

    tracing::info!("--- a valid token without the required scope: PERMISSION_DENIED naming it");
    let unscoped = bearer(issuer.token("weather-only", "openid", 600));
    let status = grpc
        .call_tool(presenting(
            Some(&unscoped),
            call_request("weather__get_forecast", json!({"city": "Oslo"})),
        ))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("mcp:tools"),
        "{}",
        status.message()
    );
}
