//! A tenant's OAuth grant of an upstream, as the control plane's leader runs
//! it: the person's authorization (a link, then Quiver's callback), the code
//! exchange, and renewing the access token with the refresh token. rmcp's
//! authorization client does the protocol (discovery, registration, PKCE,
//! RFC 8707 resource indicators, RFC 9207 issuer checks, client
//! authentication at the token endpoint); this module holds one flow and
//! what is kept of it ([`TenantGrant`]), which the control plane seals.
//!
//! Nothing here stores anything or logs a token.

use std::time::{Duration, Instant};

use quiver_proto::secret_value::SecretValue;
use quiver_proto::upstream_config::UpstreamOAuth;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, CredentialStore,
    InMemoryCredentialStore, OAuthClientConfig, OAuthState, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::oauth::{OAuthError, authorization_request};

/// How long a started authorization can be completed.
pub const GRANT_FLOW_TTL: Duration = Duration::from_secs(600);

/// Why a grant could not be started, completed or renewed; worded for the
/// operator, never holding a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// The authorization server, or the OAuth client talking to it, failed
    /// (discovery, registration, the code or refresh exchange).
    #[error("{0}")]
    Server(#[from] AuthError),
    /// Quiver's OAuth settings for the upstream cannot be used.
    #[error(transparent)]
    Settings(#[from] OAuthError),
    /// `oauth.client_secret` names a value that cannot be had.
    #[error("oauth.client_secret: {0}")]
    ClientSecret(#[source] quiver_proto::references::ExpandError),
    /// A token exchange needs Quiver's own client credentials.
    #[error("token exchange needs oauth.client_id and oauth.client_secret")]
    ExchangeWithoutClient,
    /// The upstream's authorization server did not issue the caller's token:
    /// a caller's token is exchanged only by its own issuer.
    #[error(
        "the upstream's authorization server ({}) is not the issuer of the caller's token ({caller}); a caller's token is exchanged only by its own issuer",
        server.as_deref().unwrap_or("no issuer named")
    )]
    ForeignIssuer {
        /// The issuer the upstream's metadata names.
        server: Option<String>,
        /// The caller's token's issuer.
        caller: String,
    },
    /// The token exchange did not reach the authorization server.
    #[error("the token exchange did not reach the server: {0}")]
    Unreachable(#[source] reqwest::Error),
    /// The server's link or answer lacks what the flow needs.
    #[error("{0}")]
    Incomplete(&'static str),
    /// The callback URL is not one.
    #[error("the callback URL does not parse: {0}")]
    CallbackUrl(#[source] oauth2::url::ParseError),
    /// A kept grant does not decode.
    #[error("the kept grant does not read back: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// The person declined, or the server sent them back with an error.
    #[error("the authorization server sent the person back without a grant: {0}")]
    Declined(String),
    /// The refresh token is no longer accepted: the person has to grant
    /// access again.
    #[error("the authorization server no longer accepts the refresh token ({0})")]
    RefreshRefused(String),
    /// The grant has no refresh token.
    #[error("the grant has no refresh token (the authorization server issued none)")]
    NotRenewable,
}

/// One person's authorization in progress.
pub struct GrantFlow {
    state: OAuthState,
    store: InMemoryCredentialStore,
    link: String,
    csrf: String,
    started: Instant,
}

impl GrantFlow {
    /// Starts authorizing Quiver to the upstream at `url` with `settings`:
    /// discovery, client registration, PKCE. The person opens
    /// [`GrantFlow::link`].
    pub async fn start(url: &str, settings: &UpstreamOAuth) -> Result<GrantFlow, GrantError> {
        crate::install_crypto_provider();
        let store = InMemoryCredentialStore::new();
        let mut manager = AuthorizationManager::new(url).await?;
        manager.set_credential_store(store.clone());
        let mut state = OAuthState::Unauthorized(manager);
        state
            .start_authorization(authorization_request(settings, None, Vec::new())?)
            .await?;
        let link = state.get_authorization_url().await?;
        let csrf = reqwest::Url::parse(&link)
            .ok()
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned())
            })
            .ok_or(GrantError::Incomplete(
                "the authorization link carries no state",
            ))?;
        Ok(GrantFlow {
            state,
            store,
            link,
            csrf,
            started: Instant::now(),
        })
    }

    /// The authorization server's page the person opens.
    pub fn link(&self) -> &str {
        &self.link
    }

    /// The flow's `state` value: the callback names the flow by it.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether it can no longer be completed.
    pub fn expired(&self) -> bool {
        self.started.elapsed() > GRANT_FLOW_TTL
    }

    /// Completes it with the callback: the code is exchanged (the issuer
    /// checked when the server names one) and the grant returned.
    pub async fn finish(mut self, callback: &Callback) -> Result<TenantGrant, GrantError> {
        let answer = match &callback.answer {
            Answer::Code(answer) => answer,
            Answer::Declined(reason) => return Err(GrantError::Declined(reason.clone())),
        };
        self.state
            .handle_callback_with_issuer(&answer.code, &answer.csrf_token, answer.issuer.as_deref())
            .await?;
        let credentials = self
            .store
            .load()
            .await?
            .filter(|c| c.token_response.is_some())
            .ok_or(GrantError::Incomplete("no token after the code exchange"))?;
        Ok(TenantGrant { credentials })
    }
}

/// The parameters the authorization server sent the person back with: the
/// flow's `state`, and the code (with `iss`) or the server's error.
pub struct Callback {
    state: String,
    answer: Answer,
}

/// What the authorization server sent the person back with.
enum Answer {
    /// A code to exchange (with the issuer, when it names one).
    Code(AuthorizationCallback),
    /// Its error (`error: error_description`): no grant.
    Declined(String),
}

impl Callback {
    /// Reads the redirect URL (`state`, and `code` and `iss`, or `error`).
    /// What it says is believed only once its `state` names a flow in
    /// progress ([`Callback::csrf`]).
    pub fn parse(url: &str) -> Result<Callback, GrantError> {
        let parsed = reqwest::Url::parse(url).map_err(GrantError::CallbackUrl)?;
        let field = |name: &str| {
            parsed
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let state =
            field("state").ok_or(GrantError::Incomplete("the callback carries no `state`"))?;
        let answer = match field("error") {
            Some(error) => Answer::Declined(
                field("error_description")
                    .map(|d| format!("{error}: {d}"))
                    .unwrap_or(error),
            ),
            None => Answer::Code(AuthorizationCallback::from_redirect_url(url)?),
        };
        Ok(Callback { state, answer })
    }

    /// The flow's `state` value.
    pub fn csrf(&self) -> &str {
        &self.state
    }
}

/// What the control plane keeps of a tenant's grant: the token response
/// (access and refresh tokens), the client it was issued to, the scopes and
/// the issuer. Its `Debug` shows no token.
#[derive(Clone, Serialize, Deserialize)]
pub struct TenantGrant {
    credentials: StoredCredentials,
}

impl std::fmt::Debug for TenantGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantGrant")
            .field("client_id", &self.credentials.client_id)
            .field("scopes", &self.credentials.granted_scopes)
            .field("issuer", &self.credentials.issuer)
            .finish_non_exhaustive()
    }
}

impl TenantGrant {
    /// The grant as JSON, to be sealed.
    pub fn to_secret(&self) -> SecretValue {
        SecretValue::new(serde_json::to_string(self).unwrap_or_default())
    }

    /// A grant from its sealed JSON.
    pub fn from_secret(value: &SecretValue) -> Result<TenantGrant, GrantError> {
        serde_json::from_str(value.expose()).map_err(GrantError::Unreadable)
    }

    fn token(&self) -> Option<&rmcp::transport::auth::OAuthTokenResponse> {
        self.credentials.token_response.as_ref()
    }

    /// The access token.
    pub fn access_token(&self) -> SecretValue {
        use oauth2::TokenResponse as _;
        SecretValue::new(
            self.token()
                .map(|t| t.access_token().secret().to_string())
                .unwrap_or_default(),
        )
    }

    /// When the access token expires (ms since the epoch), if the server
    /// said.
    pub fn expires_at_ms(&self) -> Option<u64> {
        use oauth2::TokenResponse as _;
        let lifetime = self.token()?.expires_in()?;
        let received = self.credentials.token_received_at?;
        Some((received + lifetime.as_secs()) * 1000)
    }

    /// The scopes granted.
    pub fn scopes(&self) -> Vec<String> {
        self.credentials.granted_scopes.clone()
    }

    /// Whether it renews without the person (it has a refresh token).
    pub fn renewable(&self) -> bool {
        use oauth2::TokenResponse as _;
        self.token().is_some_and(|t| t.refresh_token().is_some())
    }

    /// Renews the access token with the refresh token at the authorization
    /// server of the upstream at `url` (rediscovered: a server that moved to
    /// another issuer voids the grant).
    pub async fn renew(
        &self,
        url: &str,
        settings: &UpstreamOAuth,
    ) -> Result<TenantGrant, GrantError> {
        if !self.renewable() {
            return Err(GrantError::NotRenewable);
        }
        crate::install_crypto_provider();
        let store = InMemoryCredentialStore::new();
        store.save(self.credentials.clone()).await?;
        let mut manager = AuthorizationManager::new(url).await?;
        manager.set_credential_store(store.clone());
        if !manager.initialize_from_store().await? {
            return Err(GrantError::RefreshRefused(
                "the upstream's authorization server changed".into(),
            ));
        }
        if let (Some(client_id), Some(secret)) =
            (&settings.client_id, settings.client_secret_value())
        {
            let secret = secret.map_err(GrantError::ClientSecret)?;
            let redirect = if settings.redirect_uri.is_empty() {
                url.to_string()
            } else {
                settings.redirect_uri.clone()
            };
            manager.configure_client(
                OAuthClientConfig::new(client_id.clone(), redirect).with_client_secret(secret),
            )?;
        }
        match manager.refresh_token().await {
            Ok(_) => {}
            Err(AuthError::TokenRefreshRejected(reason)) => {
                return Err(GrantError::RefreshRefused(reason));
            }
            Err(AuthError::AuthorizationRequired) => return Err(GrantError::NotRenewable),
            Err(e) => return Err(e.into()),
        }
        let credentials = store
            .load()
            .await?
            .ok_or(GrantError::Incomplete("no token after the refresh"))?;
        Ok(TenantGrant { credentials })
    }
}

/// The token-exchange grant type (RFC 8693 §2.1).
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// An OAuth access token, as subject and as what is asked for (RFC 8693 §3).
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// A token exchanged for one caller: the token and when it expires (ms
/// since the epoch), if the server said.
pub struct ExchangedToken {
    /// The access token for the upstream.
    pub token: SecretValue,
    /// When it expires.
    pub expires_at_ms: Option<u64>,
}

/// Exchanges `subject_token` (the caller's own OAuth access token, issued
/// by `subject_issuer`) for a token for the upstream at `url` (RFC 8693), as
/// Quiver's client of `settings` (its secret from this process's
/// environment), at the token endpoint of the authorization server the
/// upstream's metadata names, and only when that server is the token's own
/// issuer: an upstream cannot have callers' tokens sent anywhere else. The
/// token is asked for that upstream alone (`resource`, RFC 8707) with the
/// configured scopes.
pub async fn exchange_token(
    url: &str,
    settings: &UpstreamOAuth,
    subject_token: &SecretValue,
    subject_issuer: &str,
) -> Result<ExchangedToken, GrantError> {
    crate::install_crypto_provider();
    let (Some(client_id), Some(secret)) = (&settings.client_id, settings.client_secret_value())
    else {
        return Err(GrantError::ExchangeWithoutClient);
    };
    let secret = secret.map_err(GrantError::ClientSecret)?;
    let manager = AuthorizationManager::new(url).await?;
    let metadata = manager.resolve_metadata().await?.metadata;
    let same = |issuer: &str| issuer.trim_end_matches('/') == subject_issuer.trim_end_matches('/');
    if !metadata.issuer.as_deref().is_some_and(same) {
        return Err(GrantError::ForeignIssuer {
            server: metadata.issuer.clone(),
            caller: subject_issuer.to_string(),
        });
    }
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE.to_string()),
        ("subject_token", subject_token.expose().to_string()),
        ("subject_token_type", ACCESS_TOKEN_TYPE.to_string()),
        ("requested_token_type", ACCESS_TOKEN_TYPE.to_string()),
        ("resource", url.to_string()),
    ];
    if !settings.scopes.is_empty() {
        form.push(("scope", settings.scopes.join(" ")));
    }
    // client_secret_basic unless the server takes only client_secret_post.
    let methods = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|m| m.as_array())
        .map(|m| m.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    let post = methods.contains(&"client_secret_post") && !methods.contains(&"client_secret_basic");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(GrantError::Unreachable)?;
    let mut request = client.post(&metadata.token_endpoint);
    if post {
        form.push(("client_id", client_id.clone()));
        form.push(("client_secret", secret));
    } else {
        request = request.basic_auth(client_id, Some(secret));
    }
    let body = form
        .iter()
        .map(|(name, value)| format!("{}={}", form_encode(name), form_encode(value)))
        .collect::<Vec<_>>()
        .join("&");
    let response = request
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(GrantError::Unreachable)?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        let error = body["error"].as_str().unwrap_or("no error code");
        let described = body["error_description"]
            .as_str()
            .map(|d| format!("{error}: {d}"))
            .unwrap_or_else(|| error.to_string());
        return Err(GrantError::Declined(format!(
            "the token exchange was refused ({status}, {described})"
        )));
    }
    let token = body["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or(GrantError::Incomplete(
            "the token exchange answered no access_token",
        ))?;
    let now_ms = crate::status::now_ms();
    Ok(ExchangedToken {
        token: SecretValue::new(token.to_string()),
        expires_at_ms: body["expires_in"].as_u64().map(|s| now_ms + s * 1000),
    })
}

/// `text` encoded for an `application/x-www-form-urlencoded` body.
fn form_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_with_a_code_names_its_flow_code_and_issuer() {
        let callback = Callback::parse(
            "http://quiver.invalid/oauth/callback?code=c%2F1&state=s-1&iss=https%3A%2F%2Fas.example",
        )
        .unwrap();
        assert_eq!(callback.csrf(), "s-1");
        match &callback.answer {
            Answer::Code(code) => {
                assert_eq!(code.code, "c/1");
                assert_eq!(code.issuer.as_deref(), Some("https://as.example"));
            }
            Answer::Declined(reason) => panic!("declined: {reason}"),
        }
    }

    #[test]
    fn a_callback_with_an_error_is_a_refusal_worded_by_the_server() {
        let callback = Callback::parse(
            "http://quiver.invalid/oauth/callback?state=s&error=access_denied&error_description=the+user+said+no",
        )
        .unwrap();
        assert!(matches!(
            &callback.answer,
            Answer::Declined(reason) if reason == "access_denied: the user said no"
        ));
        let bare = Callback::parse("http://quiver.invalid/cb?state=s&error=access_denied").unwrap();
        assert!(matches!(&bare.answer, Answer::Declined(r) if r == "access_denied"));
    }

    #[test]
    fn malformed_callbacks_are_refused_by_type() {
        assert!(matches!(
            Callback::parse("not a url"),
            Err(GrantError::CallbackUrl(_))
        ));
        let no_state = Callback::parse("http://quiver.invalid/cb?code=c")
            .err()
            .unwrap();
        assert!(matches!(no_state, GrantError::Incomplete(_)), "{no_state}");
        assert!(no_state.to_string().contains("state"), "{no_state}");
        // A code without a state of rmcp's own reading is the server's error.
        let no_code = Callback::parse("http://quiver.invalid/cb?state=s")
            .err()
            .unwrap();
        assert!(matches!(no_code, GrantError::Server(_)), "{no_code}");
    }

    #[test]
    fn form_values_are_percent_encoded_except_the_unreserved() {
        assert_eq!(form_encode("aZ09-_.~"), "aZ09-_.~");
        assert_eq!(form_encode("a b&c=d+e/f"), "a%20b%26c%3Dd%2Be%2Ff");
        assert_eq!(form_encode("é"), "%C3%A9");
        assert_eq!(
            form_encode(TOKEN_EXCHANGE),
            "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
        );
    }

    #[test]
    fn a_kept_grant_that_does_not_decode_says_so_without_its_text() {
        let broken = SecretValue::new("{\"access_token\": \"tok-123\"".into());
        let error = TenantGrant::from_secret(&broken).err().unwrap();
        assert!(matches!(error, GrantError::Unreadable(_)), "{error}");
        assert!(!error.to_string().contains("tok-123"), "{error}");
    }

    #[test]
    fn a_foreign_issuer_is_named_with_the_callers() {
        let error = GrantError::ForeignIssuer {
            server: Some("https://other.example".into()),
            caller: "https://idp.example".into(),
        };
        let text = error.to_string();
        assert!(text.contains("https://other.example") && text.contains("https://idp.example"));
        let unnamed = GrantError::ForeignIssuer {
            server: None,
            caller: "https://idp.example".into(),
        };
        assert!(unnamed.to_string().contains("no issuer named"), "{unnamed}");
    }
}
