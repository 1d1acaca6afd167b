//! A test OAuth issuer: an ES256 key, its JWKS, and tokens it signs, for
//! the edge's access-token tests.

use base64::Engine as _;
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _},
};
use serde_json::{Value, json};

/// Base64url without padding.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 signing key with the id `k1`.
pub struct Issuer {
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Issuer {
    /// A fresh key.
    pub fn new() -> Issuer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Issuer { key, rng }
    }

    /// Its public key as a JWKS.
    pub fn jwks(&self) -> String {
        let point = self.key.public_key().as_ref();
        json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
            "x": b64(&point[1..33]), "y": b64(&point[33..65])}]})
        .to_string()
    }

    /// A JWT of `claims` it signed.
    pub fn token(&self, claims: &Value) -> String {
        let header = b64(json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})
            .to_string()
            .as_bytes());
        let payload = b64(claims.to_string().as_bytes());
        let signed = format!("{header}.{payload}");
        let signature = self.key.sign(&self.rng, signed.as_bytes()).unwrap();
        format!("{signed}.{}", b64(signature.as_ref()))
    }
}

/// A quiver.toml whose edge requires a credential and accepts access tokens
/// for `resource` carrying the scope `mcp:tools` from `issuer`, whose keys
/// are in `jwks`.
pub fn edge_oauth_config(resource: &str, issuer: &str, jwks: &std::path::Path) -> String {
    format!(
        r#"
[edge]
auth = "required"

[edge.oauth]
resource = "{resource}"
required_scopes = ["mcp:tools"]

[[edge.oauth.issuers]]
issuer = "{issuer}"
jwks_file = "{}"
"#,
        jwks.display()
    )
}
