//! The tokens of an upstream that acts on behalf of each caller (its OAuth
//! grant a token exchange, RFC 8693): each caller's calls travel on a
//! connection of their own, which sends a token exchanged for that caller's
//! own access token. The exchanged token lives in the connection's own
//! secret slot (as the secret `oauth-<id>`), so the connection reconnects
//! with a new one exactly as a per-tenant connection does when its tenant's
//! secret changes; it is exchanged again when the caller presents another
//! token, shortly before it expires, and when the upstream refuses it.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};

use futures::future::BoxFuture;
use quiver_proto::{secret_value::SecretValue, upstream_config::UpstreamOAuth};

use crate::{
    oauth_grant::exchange_token,
    status::now_ms,
    tenant_credentials::{
        ExchangedToken, RenewalError, SecretError, SecretSlot, TenantSecretSource,
    },
};

/// How long before it expires an exchanged token is replaced.
const RENEW_BEFORE_MS: u64 = 30_000;

/// One exchanged token, as the connection's secret source.
struct Exchanged {
    tenant: String,
    name: String,
    token: SecretValue,
    version: u64,
}

impl TenantSecretSource for Exchanged {
    fn tenants(&self) -> Vec<String> {
        vec![self.tenant.clone()]
    }
    fn version(&self, tenant: &str, name: &str) -> Option<String> {
        (tenant == self.tenant && name == self.name).then(|| self.version.to_string())
    }
    fn open(&self, tenant: &str, name: &str) -> Result<SecretValue, SecretError> {
        if tenant == self.tenant && name == self.name {
            Ok(self.token.clone())
        } else {
            Err(SecretError::Missing)
        }
    }
}

/// What the current token was exchanged from, and until when it serves.
struct Current {
    subject: SecretValue,
    expires_at_ms: Option<u64>,
}

/// One caller's exchanged token for one upstream.
pub(crate) struct CallerToken {
    url: String,
    settings: UpstreamOAuth,
    tenant: String,
    name: String,
    /// The issuer of the caller's tokens (from the caller's identity).
    issuer: String,
    slot: Arc<SecretSlot>,
    /// The caller's latest access token (what a renewal exchanges).
    subject: Mutex<Option<SecretValue>>,
    current: tokio::sync::Mutex<Option<Current>>,
    versions: AtomicU64,
}

impl CallerToken {
    /// The token of `tenant`'s caller (whose tokens `issuer` issued) for
    /// the upstream at `url`, kept as secret `name` in `slot`.
    pub(crate) fn new(
        url: &str,
        settings: UpstreamOAuth,
        (tenant, issuer): (&str, &str),
        name: String,
        slot: Arc<SecretSlot>,
    ) -> CallerToken {
        CallerToken {
            url: url.to_string(),
            settings,
            tenant: tenant.to_string(),
            name,
            issuer: issuer.to_string(),
            slot,
            subject: Mutex::default(),
            current: tokio::sync::Mutex::default(),
            versions: AtomicU64::new(0),
        }
    }

    /// A token exchanged from `subject` that serves at least a while longer:
    /// the current one, or a new exchange.
    pub(crate) async fn ensure(&self, subject: &SecretValue) -> Result<(), RenewalError> {
        *self.subject.lock().unwrap_or_else(|p| p.into_inner()) = Some(subject.clone());
        let mut current = self.current.lock().await;
        let fresh = current.as_ref().is_some_and(|c| {
            c.subject == *subject
                && c.expires_at_ms
                    .is_none_or(|at| at > now_ms() + RENEW_BEFORE_MS)
        });
        if fresh {
            return Ok(());
        }
        self.exchange(subject, &mut current).await
    }

    async fn exchange(
        &self,
        subject: &SecretValue,
        current: &mut Option<Current>,
    ) -> Result<(), RenewalError> {
        let exchanged = exchange_token(&self.url, &self.settings, subject, &self.issuer)
            .await
            .map_err(RenewalError::Exchange)?;
        let version = self.versions.fetch_add(1, Ordering::SeqCst) + 1;
        self.slot.replace(Arc::new(Exchanged {
            tenant: self.tenant.clone(),
            name: self.name.clone(),
            token: exchanged.token,
            version,
        }));
        *current = Some(Current {
            subject: subject.clone(),
            expires_at_ms: exchanged.expires_at_ms,
        });
        Ok(())
    }
}

impl ExchangedToken for CallerToken {
    fn exchange_again(&self) -> BoxFuture<'_, Result<(), RenewalError>> {
        Box::pin(async move {
            let subject = self
                .subject
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .ok_or(RenewalError::NoCallerToken)?;
            let mut current = self.current.lock().await;
            self.exchange(&subject, &mut current).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller's token for an upstream whose settings name no client of
    /// Quiver's: any exchange fails before reaching the network.
    fn token_without_client() -> (CallerToken, Arc<SecretSlot>) {
        let settings: UpstreamOAuth = serde_json::from_value(serde_json::json!({})).unwrap();
        let slot = Arc::new(SecretSlot::default());
        let token = CallerToken::new(
            "http://127.0.0.1:9/mcp",
            settings,
            ("acme", "https://idp.example"),
            "oauth-tracker".into(),
            slot.clone(),
        );
        (token, slot)
    }

    #[test]
    fn an_exchanged_token_is_its_tenants_one_secret() {
        let exchanged = Exchanged {
            tenant: "acme".into(),
            name: "oauth-tracker".into(),
            token: SecretValue::new("exchanged".into()),
            version: 3,
        };
        assert_eq!(exchanged.tenants(), ["acme"]);
        assert_eq!(
            exchanged.version("acme", "oauth-tracker").as_deref(),
            Some("3")
        );
        assert_eq!(exchanged.version("acme", "other"), None);
        assert_eq!(exchanged.version("other", "oauth-tracker"), None);
        assert_eq!(
            exchanged.open("acme", "oauth-tracker").unwrap().expose(),
            "exchanged"
        );
        assert_eq!(
            exchanged.open("other", "oauth-tracker").err(),
            Some(SecretError::Missing)
        );
    }

    #[tokio::test]
    async fn renewing_before_any_caller_token_says_there_is_none() {
        let (token, slot) = token_without_client();
        let error = token.exchange_again().await.err().unwrap();
        assert!(matches!(error, RenewalError::NoCallerToken), "{error}");
        assert!(slot.current().is_none());
    }

    #[tokio::test]
    async fn a_fresh_token_for_the_same_caller_is_kept_and_another_caller_exchanges_again() {
        let (token, slot) = token_without_client();
        let alice = SecretValue::new("alice-token".into());
        *token.current.lock().await = Some(Current {
            subject: alice.clone(),
            expires_at_ms: Some(now_ms() + 10 * RENEW_BEFORE_MS),
        });
        token.ensure(&alice).await.unwrap();
        // Another token of the caller's, or one about to expire, is exchanged,
        // which fails here by type, naming what is missing.
        let bob = SecretValue::new("bob-token".into());
        let error = token.ensure(&bob).await.err().unwrap();
        assert!(
            matches!(
                error,
                RenewalError::Exchange(crate::oauth_grant::GrantError::ExchangeWithoutClient)
            ),
            "{error}"
        );
        assert!(!error.to_string().contains("bob-token"), "{error}");
        *token.current.lock().await = Some(Current {
            subject: alice.clone(),
            expires_at_ms: Some(now_ms() + RENEW_BEFORE_MS / 2),
        });
        assert!(token.ensure(&alice).await.is_err());
        assert!(slot.current().is_none(), "no token was installed");
        // The renewal exchanges the latest caller token seen.
        assert!(matches!(
            token.exchange_again().await,
            Err(RenewalError::Exchange(_))
        ));
    }
}
