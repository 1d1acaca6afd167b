//! How Quiver authorizes itself to an HTTP upstream behind OAuth 2.1 (the
//! `[upstreams.oauth]` table): where the authorization server sends the
//! person who grants access back to, and how Quiver is known to that server
//! (a client registered beforehand, a client ID metadata document, or, with
//! neither, dynamic registration). Discovery, PKCE, resource indicators and
//! issuer checks need no settings.

use serde::{Deserialize, Serialize};

use crate::pb;
use crate::references::{check_references, expand_references};

/// How Quiver obtains its tokens for an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person grants access (authorization code with PKCE): delegated,
    /// the upstream sees that person's rights.
    #[default]
    AuthorizationCode,
    /// Quiver itself, as a service account (the client registered
    /// beforehand, with its secret): no person involved.
    ClientCredentials,
    /// On behalf of the caller (RFC 8693 token exchange): each call's own
    /// OAuth access token (the one the caller presented to the edge) is
    /// exchanged by Quiver's client (registered beforehand, with its secret)
    /// for a token for the upstream, so the upstream sees the real user.
    /// Listing tools uses the client's own token (client credentials).
    TokenExchange,
}

impl OAuthGrant {
    fn is_authorization_code(&self) -> bool {
        *self == OAuthGrant::AuthorizationCode
    }
}

/// OAuth settings of one upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOAuth {
    /// How tokens are obtained (default: a person's grant).
    #[serde(default, skip_serializing_if = "OAuthGrant::is_authorization_code")]
    pub grant: OAuthGrant,
    /// Where the authorization server sends the person back with the code:
    /// Quiver's callback, `https://…/oauth/callback` (not used with client
    /// credentials).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub redirect_uri: String,
    /// A client registered with the authorization server beforehand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// That client's secret, as a `${VAR}` reference (never the value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// HTTPS URL of the client ID metadata document that describes Quiver,
    /// used where the server supports such documents and no client is
    /// registered beforehand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for; empty: those the server's challenge or metadata
    /// names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl UpstreamOAuth {
    /// What is wrong with the settings, as `(key, message)`.
    pub(super) fn problem(&self) -> Option<(&'static str, String)> {
        let url = |text: &str| {
            text.parse::<http::Uri>()
                .ok()
                .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
        };
        if self.grant == OAuthGrant::ClientCredentials
            && (self.client_id.is_none() || self.client_secret.is_none())
        {
            return Some((
                "oauth.grant",
                "client_credentials needs `client_id` and `client_secret` (a service account registered with the authorization server)".into(),
            ));
        }
        if self.grant == OAuthGrant::TokenExchange
            && (self.client_id.is_none() || self.client_secret.is_none())
        {
            return Some((
                "oauth.grant",
                "token_exchange needs `client_id` and `client_secret` (Quiver's client, registered with the authorization server and allowed to exchange tokens)".into(),
            ));
        }
        let callback_needed = self.grant == OAuthGrant::AuthorizationCode;
        if (callback_needed || !self.redirect_uri.is_empty()) && url(&self.redirect_uri).is_none() {
            return Some((
                "oauth.redirect_uri",
                format!(
                    "`{}` is not an http(s) URL; give Quiver's callback, e.g. https://quiver.example/oauth/callback",
                    self.redirect_uri
                ),
            ));
        }
        if let Some(document) = &self.client_metadata_url
            && url(document).is_none_or(|u| u.scheme_str() != Some("https"))
        {
            return Some((
                "oauth.client_metadata_url",
                format!("`{document}` must be an https:// URL"),
            ));
        }
        match &self.client_secret {
            Some(_) if self.client_id.is_none() => Some((
                "oauth.client_secret",
                "is given without `client_id`: a secret belongs to a client registered beforehand"
                    .into(),
            )),
            Some(secret) if !secret.contains("${") || check_references(secret).is_err() => Some((
                "oauth.client_secret",
                "must be a reference such as \"${GITHUB_CLIENT_SECRET}\", never the secret itself"
                    .into(),
            )),
            _ => None,
        }
    }

    /// The client secret, its references expanded from this process's
    /// environment.
    pub fn client_secret_value(&self) -> Option<Result<String, crate::references::ExpandError>> {
        self.client_secret.as_deref().map(expand_references)
    }

    /// As a message.
    pub fn to_pb(&self) -> pb::UpstreamOAuth {
        let grant = match self.grant {
            OAuthGrant::AuthorizationCode => pb::OAuthGrant::AuthorizationCode,
            OAuthGrant::ClientCredentials => pb::OAuthGrant::ClientCredentials,
            OAuthGrant::TokenExchange => pb::OAuthGrant::TokenExchange,
        };
        pb::UpstreamOAuth {
            grant: grant.into(),
            redirect_uri: self.redirect_uri.clone(),
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            client_metadata_url: self.client_metadata_url.clone(),
            scopes: self.scopes.clone(),
        }
    }

    /// From a message; a grant this node does not know is refused.
    pub fn from_pb(
        message: pb::UpstreamOAuth,
    ) -> Result<UpstreamOAuth, crate::registry::UnknownEnumValue> {
        let grant = match crate::registry::known("UpstreamOAuth.grant", message.grant)? {
            pb::OAuthGrant::Unspecified | pb::OAuthGrant::AuthorizationCode => {
                OAuthGrant::AuthorizationCode
            }
            pb::OAuthGrant::ClientCredentials => OAuthGrant::ClientCredentials,
            pb::OAuthGrant::TokenExchange => OAuthGrant::TokenExchange,
        };
        Ok(UpstreamOAuth {
            grant,
            redirect_uri: message.redirect_uri,
            client_id: message.client_id,
            client_secret: message.client_secret,
            client_metadata_url: message.client_metadata_url,
            scopes: message.scopes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> UpstreamOAuth {
        UpstreamOAuth {
            grant: OAuthGrant::AuthorizationCode,
            redirect_uri: "https://quiver.example/oauth/callback".into(),
            client_id: Some("quiver".into()),
            client_secret: Some("${GH_SECRET}".into()),
            client_metadata_url: None,
            scopes: vec!["repo".into()],
        }
    }

    #[test]
    fn a_literal_secret_a_secret_without_a_client_and_a_bad_callback_are_refused() {
        assert_eq!(settings().problem(), None);
        let mut literal = settings();
        literal.client_secret = Some("s3cret".into());
        assert_eq!(literal.problem().unwrap().0, "oauth.client_secret");
        let mut orphan = settings();
        orphan.client_id = None;
        assert!(orphan.problem().unwrap().1.contains("client_id"));
        let mut callback = settings();
        callback.redirect_uri = "quiver/callback".into();
        assert_eq!(callback.problem().unwrap().0, "oauth.redirect_uri");
        let mut document = settings();
        document.client_metadata_url = Some("http://quiver.example/client.json".into());
        assert_eq!(document.problem().unwrap().0, "oauth.client_metadata_url");
        assert_eq!(
            UpstreamOAuth::from_pb(settings().to_pb()).unwrap(),
            settings()
        );
        let mut service = settings();
        service.grant = OAuthGrant::ClientCredentials;
        service.redirect_uri = String::new();
        assert_eq!(service.problem(), None, "no callback for a service account");
        assert_eq!(UpstreamOAuth::from_pb(service.to_pb()).unwrap(), service);
        service.client_secret = None;
        assert_eq!(service.problem().unwrap().0, "oauth.grant");
    }
}
