//! OAuth 2.1 towards an HTTP upstream (its `oauth` settings): rmcp's
//! authorization client does discovery (the `WWW-Authenticate` challenge,
//! RFC 9728 protected-resource and RFC 8414 server metadata), client
//! registration (beforehand, by metadata document, or dynamic), PKCE, RFC 8707
//! resource indicators, RFC 9207 issuer checks, token refresh and the bearer
//! header; this module decides when to authorize (a 401, or a 403 asking for
//! more scope) and asks for the grant through [`Consent`]: the person who
//! opens the link and comes back through Quiver's callback; or, configured as
//! a service account, takes it with the client-credentials grant, asking
//! nobody.
//!
//! Tokens live in this process's memory with the connection's owner and are
//! sent only to the upstream they were issued for; they are never logged.

use std::sync::Arc;

use futures::future::BoxFuture;
use quiver_proto::upstream_config::{OAuthGrant, UpstreamOAuth};
use rmcp::transport::{
    AuthClient,
    auth::{
        AuthError, AuthorizationCallback, AuthorizationRequest, ClientCredentialsConfig, OAuthState,
    },
};

use crate::trace_headers::{HttpClientError, TracingHttpClient};

/// The person who grants Quiver access to an upstream: shown the
/// authorization link, they sign in and approve, and the authorization server
/// sends them to the callback (`redirect_uri`) with a code.
pub trait Consent: Send + Sync {
    /// Has `link` (for `upstream`) opened and approved; resolves to the URL
    /// the authorization server redirected to, query included.
    fn grant<'a>(
        &'a self,
        upstream: &'a str,
        link: &'a str,
    ) -> BoxFuture<'a, Result<String, ConsentError>>;
}

/// Why no grant came back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConsentError(pub String);

/// Why an upstream could not be authorized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// Nobody can be asked for the grant on this node.
    #[error(
        "it requires OAuth authorization, and this node has nobody to ask for it (no consent channel); in a fleet, have each tenant authorized with `quiver ctl upstream authorize`, or make Quiver a service account with `grant = \"client_credentials\"`"
    )]
    NoConsent,
    /// The person did not grant it.
    #[error("authorization was not granted: {0}")]
    NotGranted(#[from] ConsentError),
    /// Discovery, registration, the code exchange or a check failed.
    #[error("OAuth: {0}")]
    Flow(#[from] AuthError),
    /// The client secret's reference does not expand.
    #[error("oauth.client_secret: {0}")]
    Secret(#[from] quiver_proto::references::ExpandError),
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] HttpClientError),
    /// The server kept asking for more scope.
    #[error("it asked for more scope {0} times in a row; giving up")]
    ScopeRetries(u32),
}

/// How often in a row an upstream may refuse for want of scope before
/// Quiver stops asking the person again.
pub(crate) const MAX_STEP_UPS: u32 = 3;

/// One upstream's authorization: the settings, who grants, and the
/// authorized client once there is one (shared by every connection, so a
/// refreshed token serves them all).
pub(crate) struct Authorizer {
    upstream: String,
    url: String,
    settings: UpstreamOAuth,
    consent: std::sync::OnceLock<Arc<dyn Consent>>,
    client: tokio::sync::Mutex<Option<AuthClient<TracingHttpClient>>>,
    /// Held while authorizing: requests refused at the same moment wait for
    /// one grant instead of each asking.
    flight: tokio::sync::Mutex<()>,
    /// Grants kept so far.
    grants: std::sync::atomic::AtomicU64,
}

impl Authorizer {
    /// Authorization for the upstream `upstream` at `url`.
    pub(crate) fn new(upstream: &str, url: &str, settings: UpstreamOAuth) -> Authorizer {
        Authorizer {
            upstream: upstream.to_string(),
            url: url.to_string(),
            settings,
            consent: std::sync::OnceLock::new(),
            client: tokio::sync::Mutex::new(None),
            flight: tokio::sync::Mutex::new(()),
            grants: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Who grants access; set while the upstream is made
    /// ([`crate::Upstream::with_consent`]).
    pub(crate) fn set_consent(&self, consent: Arc<dyn Consent>) {
        let _ = self.consent.set(consent);
    }

    /// How many grants were kept so far: read before sending a request, it
    /// tells a refusal of that request from one already answered by a newer
    /// grant.
    pub(crate) fn generation(&self) -> u64 {
        self.grants.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The authorized client, if authorization happened.
    pub(crate) async fn client(&self) -> Option<AuthClient<TracingHttpClient>> {
        self.client.lock().await.clone()
    }

    /// Runs the authorization-code flow once: discovery (from `challenge`,
    /// the `WWW-Authenticate` value of the refusal, when there is one),
    /// registration, the person's grant, the code exchange. The scopes asked
    /// for are the configured ones, else those the challenge or the server's
    /// metadata name, joined with those granted before (a step-up keeps what
    /// was already allowed).
    /// Requests refused together share one grant: `seen` is the
    /// [`Authorizer::generation`] the refused request was sent under, and a
    /// grant kept since (while this one waited, or before the refusal came
    /// back) is used instead of asking again.
    pub(crate) async fn authorize(
        &self,
        challenge: Option<&str>,
        seen: u64,
    ) -> Result<(), OAuthError> {
        use std::sync::atomic::Ordering;
        let _flight = self.flight.lock().await;
        if self.grants.load(Ordering::SeqCst) != seen {
            return Ok(());
        }
        crate::install_crypto_provider();
        // Acting for callers, Quiver lists tools as its own client.
        if matches!(
            self.settings.grant,
            OAuthGrant::ClientCredentials | OAuthGrant::TokenExchange
        ) {
            return self.as_service_account(challenge).await;
        }
        let consent = self.consent.get().ok_or(OAuthError::NoConsent)?;
        let granted = match self.client.lock().await.as_ref() {
            Some(client) => client.auth_manager.lock().await.get_current_scopes().await,
            None => Vec::new(),
        };
        let request = authorization_request(&self.settings, challenge, granted)?;
        let mut state = OAuthState::new(self.url.as_str(), None).await?;
        state.start_authorization(request).await?;
        let link = state.get_authorization_url().await?;
        tracing::info!(upstream = %self.upstream, "asking for OAuth authorization");
        let callback = consent.grant(&self.upstream, &link).await?;
        let callback = AuthorizationCallback::from_redirect_url(&callback)?;
        state
            .handle_callback_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        self.keep(state).await?;
        tracing::info!(upstream = %self.upstream, "OAuth authorization granted");
        Ok(())
    }

    /// The configured scopes and those `challenge` names.
    fn scopes_for(&self, challenge: Option<&str>) -> Vec<String> {
        scopes_for(&self.settings, challenge)
    }

    /// Serves every connection from now on with the authorized `state`.
    async fn keep(&self, state: OAuthState) -> Result<(), OAuthError> {
        let manager = state.into_authorization_manager().ok_or_else(|| {
            AuthError::InternalError("no authorization manager after the exchange".into())
        })?;
        *self.client.lock().await = Some(AuthClient::new(TracingHttpClient::new()?, manager));
        self.grants
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

impl Authorizer {
    /// The client-credentials grant: Quiver's own service account (the
    /// client registered beforehand and its secret), no person asked; the
    /// scopes are the configured ones joined with those the challenge names.
    async fn as_service_account(&self, challenge: Option<&str>) -> Result<(), OAuthError> {
        let (Some(client_id), Some(secret)) = (
            self.settings.client_id.clone(),
            self.settings.client_secret_value(),
        ) else {
            return Err(AuthError::ClientCredentialsError(
                "client_credentials needs client_id and client_secret".into(),
            )
            .into());
        };
        let mut scopes = self.scopes_for(challenge);
        scopes.sort();
        scopes.dedup();
        let mut state = OAuthState::new(self.url.as_str(), None).await?;
        state
            .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: secret?,
                scopes,
                // RFC 8707: the token is for this server and no other.
                resource: Some(self.url.clone()),
            })
            .await?;
        self.keep(state).await?;
        tracing::info!(upstream = %self.upstream, "OAuth token obtained as a service account");
        Ok(())
    }
}

/// The configured scopes and those `challenge` names.
fn scopes_for(settings: &UpstreamOAuth, challenge: Option<&str>) -> Vec<String> {
    let mut scopes = settings.scopes.clone();
    if let Some(asked) = challenge.and_then(challenge_scope) {
        scopes.extend(asked.split_whitespace().map(str::to_string));
    }
    scopes
}

/// What a person is asked to grant, under `settings`: discovery starts from
/// `challenge` (the refusal's `WWW-Authenticate`) when there is one; the
/// scopes are the configured ones and those the challenge names, joined with
/// those `granted` before (a step-up keeps what was already allowed), or,
/// with none of those, what the server's metadata names. Quiver registers as
/// the client set beforehand, else by its metadata document, else
/// dynamically.
pub(crate) fn authorization_request(
    settings: &UpstreamOAuth,
    challenge: Option<&str>,
    mut granted: Vec<String>,
) -> Result<AuthorizationRequest, OAuthError> {
    let mut request = AuthorizationRequest::new(&settings.redirect_uri).with_client_name("Quiver");
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let mut scopes = scopes_for(settings, challenge);
    if !scopes.is_empty() {
        scopes.append(&mut granted);
        scopes.sort();
        scopes.dedup();
        request = request.with_scopes(scopes);
    }
    if let Some(client_id) = &settings.client_id {
        request = request.with_preregistered_client(client_id);
        if let Some(secret) = settings.client_secret_value() {
            request = request.with_client_secret(secret?);
        }
    }
    if let Some(document) = &settings.client_metadata_url {
        request = request.with_client_metadata_url(document);
    }
    Ok(request)
}

/// The `scope` parameter of a `WWW-Authenticate: Bearer …` challenge.
pub(crate) fn challenge_scope(challenge: &str) -> Option<&str> {
    let at = challenge.find("scope=")?;
    let preceding = challenge[..at].chars().last();
    if preceding.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let rest = &challenge[at + "scope=".len()..];
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split([',', ' ']).next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scope_of_a_challenge_is_read_quoted_or_bare_and_not_from_another_parameter() {
        let quoted = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://x/.well-known/oauth-protected-resource""#;
        assert_eq!(challenge_scope(quoted), Some("files:read files:write"));
        assert_eq!(challenge_scope("Bearer scope=mcp, error=x"), Some("mcp"));
        assert_eq!(challenge_scope(r#"Bearer required_scope="a""#), None);
        assert_eq!(challenge_scope("Bearer realm=\"x\""), None);
    }
}
