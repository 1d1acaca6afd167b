//! Whose secrets a connection of a per-tenant upstream is made with. A
//! [`TenantSecretSource`] (the sealed secrets the control plane sent, opened
//! with the cluster key) is installed into a [`SecretSlot`] shared by a node's
//! upstreams; each connection is bound to one tenant for its whole life and
//! resolves only that tenant's secrets, when it connects. Nothing here
//! decrypts anything or talks to the network.

use std::{
    collections::BTreeSet,
    sync::{Arc, RwLock},
};

use quiver_proto::secret_value::{SecretValue, TenantSecrets};

/// Why a tenant's secret could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The tenant holds no secret of that name.
    #[error("not set")]
    Missing,
    /// It exists but cannot be opened here (no cluster key, another key,
    /// damaged); the reason names the fix and never the value.
    #[error("{0}")]
    Unavailable(String),
}

/// Why a per-tenant connection has no credentials to connect with. Worded
/// for the operator; never holds a value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CredentialsError {
    /// No secrets reached this node.
    #[error(
        "this node holds no tenant secrets (it follows no control plane, or none were sent yet)"
    )]
    NoSecrets,
    /// No tenant holds every secret the upstream references.
    #[error(
        "it takes per-tenant credentials and no tenant holds all of its secrets ({names}) yet; set them with `quiver ctl secret set --tenant T NAME` (an `oauth-` one by authorizing with `quiver ctl upstream authorize UPSTREAM --tenant T`), or name the tenant discovery uses with `discovery_tenant`"
    )]
    NoTenant {
        /// The secrets referenced, comma-separated.
        names: String,
    },
    /// The tenant lacks one of them.
    #[error(
        "tenant `{tenant}` has no secret `{name}` (an operator sets it with `quiver ctl secret set --tenant {tenant} {name}`)"
    )]
    Missing { tenant: String, name: String },
    /// One of them cannot be opened here.
    #[error("secret `{name}` of tenant `{tenant}` cannot be opened: {source}")]
    Unopenable {
        tenant: String,
        name: String,
        source: SecretError,
    },
}

/// Where a node finds its tenants' secrets: one immutable snapshot, replaced
/// whole when the control plane sends new ones.
pub trait TenantSecretSource: Send + Sync {
    /// The tenants holding at least one secret, in id order.
    fn tenants(&self) -> Vec<String>;
    /// Something that changes whenever `tenant`'s secret `name` is set again
    /// (a sealed secret's nonce); `None` when the tenant has no such secret.
    fn version(&self, tenant: &str, name: &str) -> Option<String>;
    /// The plaintext of `tenant`'s secret `name`.
    fn open(&self, tenant: &str, name: &str) -> Result<SecretValue, SecretError>;
}

/// Why a refused token could not be renewed. Worded for the operator; never
/// holds a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenewalError {
    /// The control plane could not be reached, or did not renew it (its
    /// reason is the source).
    #[error("the control plane did not renew it: {0}")]
    ControlPlane(#[source] quiver_admin::AdminError),
    /// No token of the caller's has been seen to exchange.
    #[error("no caller token to exchange")]
    NoCallerToken,
    /// Exchanging the caller's token failed.
    #[error("exchanging the caller's token failed: {0}")]
    Exchange(#[source] crate::oauth_grant::GrantError),
}

/// The source of a connection's exchanged token (RFC 8693): one caller's
/// token for one upstream, bound to its connection.
pub(crate) trait ExchangedToken: Send + Sync {
    /// Exchanges the caller's latest token again, after the upstream refused
    /// the one it had.
    fn exchange_again(&self) -> futures::future::BoxFuture<'_, Result<(), RenewalError>>;
}

/// Who gives a connection a new token after its upstream refused one.
#[derive(Clone)]
pub(crate) enum Renewer {
    /// The control plane renews the tenant's grant (it holds the refresh
    /// token); the renewal resolves once the new token is committed, and the
    /// token arrives with the tenants' secrets.
    Grants(Arc<dyn quiver_admin::AdminTransport>),
    /// The caller's latest token is exchanged again.
    Exchange(Arc<dyn ExchangedToken>),
}

impl Renewer {
    /// A new token for `tenant`'s connection to `upstream`.
    pub(crate) async fn renew(&self, tenant: &str, upstream: &str) -> Result<(), RenewalError> {
        match self {
            Renewer::Grants(control_plane) => control_plane
                .renew_grant(quiver_proto::tenant::GrantKey::new(tenant, upstream))
                .await
                .map(drop)
                .map_err(RenewalError::ControlPlane),
            Renewer::Exchange(token) => token.exchange_again().await,
        }
    }
}

/// The source a node's upstreams currently resolve from (none until the
/// control plane sent secrets), and who renews their OAuth grants.
#[derive(Default)]
pub(crate) struct SecretSlot(
    RwLock<Option<Arc<dyn TenantSecretSource>>>,
    RwLock<Option<Renewer>>,
);

impl SecretSlot {
    /// The current source.
    pub(crate) fn current(&self) -> Option<Arc<dyn TenantSecretSource>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Who renews OAuth grants, if anyone on this node.
    pub(crate) fn renewer(&self) -> Option<Renewer> {
        self.1.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets who renews OAuth grants.
    pub(crate) fn set_renewer(&self, renewer: Renewer) {
        *self.1.write().unwrap_or_else(|p| p.into_inner()) = Some(renewer);
    }

    /// Replaces the source; returns the one it replaces.
    pub(crate) fn replace(
        &self,
        source: Arc<dyn TenantSecretSource>,
    ) -> Option<Arc<dyn TenantSecretSource>> {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace(source)
    }
}

/// Whose secrets a connection uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretHolder {
    /// This tenant's, always: the connection serves that tenant's calls only.
    Tenant(String),
    /// Discovery's connection (it lists tools, it serves no call): the
    /// configured `discovery_tenant`, or else the first tenant by id that
    /// holds every secret the upstream references.
    Discovery {
        /// The configured `discovery_tenant`.
        preferred: Option<String>,
    },
}

/// What a live connection was made with: the tenant and the version of each
/// secret it resolved. A connection whose stamp no longer matches the
/// source's is replaced before its next use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CredentialStamp {
    tenant: String,
    versions: Vec<Option<String>>,
}

impl CredentialStamp {
    /// The tenant whose secrets these are.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The per-tenant credentials of one upstream connection.
pub(crate) struct TenantCredentials {
    names: BTreeSet<String>,
    holder: SecretHolder,
    slot: Arc<SecretSlot>,
}

impl TenantCredentials {
    /// Credentials for `names`, resolved for `holder` from `slot`.
    pub(crate) fn new(
        names: BTreeSet<String>,
        holder: SecretHolder,
        slot: Arc<SecretSlot>,
    ) -> TenantCredentials {
        TenantCredentials {
            names,
            holder,
            slot,
        }
    }

    /// The secrets' names.
    pub(crate) fn names(&self) -> &BTreeSet<String> {
        &self.names
    }

    /// Whose secrets these are.
    pub(crate) fn holder(&self) -> &SecretHolder {
        &self.holder
    }

    /// Who renews OAuth grants on this node.
    pub(crate) fn renewer(&self) -> Option<Renewer> {
        self.slot.renewer()
    }

    /// The tenant whose secrets a connection would use now, if any.
    fn tenant(&self, source: &dyn TenantSecretSource) -> Option<String> {
        match &self.holder {
            SecretHolder::Tenant(tenant) => Some(tenant.clone()),
            SecretHolder::Discovery {
                preferred: Some(tenant),
            } => Some(tenant.clone()),
            SecretHolder::Discovery { preferred: None } => source.tenants().into_iter().find(|t| {
                self.names
                    .iter()
                    .all(|name| source.version(t, name).is_some())
            }),
        }
    }

    /// What a connection made now would be made with (`None` when there is
    /// nothing to make it with).
    pub(crate) fn stamp(&self) -> Option<CredentialStamp> {
        self.stamp_in(self.slot.current()?.as_ref())
    }

    /// [`TenantCredentials::stamp`] against `source`.
    pub(crate) fn stamp_in(&self, source: &dyn TenantSecretSource) -> Option<CredentialStamp> {
        let tenant = self.tenant(source)?;
        let versions = self
            .names
            .iter()
            .map(|name| source.version(&tenant, name))
            .collect();
        Some(CredentialStamp { tenant, versions })
    }

    /// The secrets to connect with and their stamp. The error is worded for
    /// the operator and never holds a value.
    pub(crate) fn resolve(&self) -> Result<(TenantSecrets, CredentialStamp), CredentialsError> {
        let Some(source) = self.slot.current() else {
            return Err(CredentialsError::NoSecrets);
        };
        let names = self.names.iter().cloned().collect::<Vec<_>>().join(", ");
        let Some(tenant) = self.tenant(source.as_ref()) else {
            return Err(CredentialsError::NoTenant { names });
        };
        let mut secrets = TenantSecrets::new(tenant.clone());
        let mut versions = Vec::with_capacity(self.names.len());
        for name in &self.names {
            versions.push(source.version(&tenant, name));
            match source.open(&tenant, name) {
                Ok(value) => secrets.insert(name.clone(), value),
                Err(SecretError::Missing) => {
                    return Err(CredentialsError::Missing {
                        tenant,
                        name: name.clone(),
                    });
                }
                Err(source) => {
                    return Err(CredentialsError::Unopenable {
                        tenant,
                        name: name.clone(),
                        source,
                    });
                }
            }
        }
        Ok((secrets, CredentialStamp { tenant, versions }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A source over plain values; the version is the value's length and text.
    #[derive(Default)]
    pub(crate) struct PlainSource(pub(crate) BTreeMap<(String, String), String>);

    impl PlainSource {
        pub(crate) fn with(entries: &[(&str, &str, &str)]) -> Arc<PlainSource> {
            Arc::new(PlainSource(
                entries
                    .iter()
                    .map(|(t, n, v)| ((t.to_string(), n.to_string()), v.to_string()))
                    .collect(),
            ))
        }
    }

    impl TenantSecretSource for PlainSource {
        fn tenants(&self) -> Vec<String> {
            let tenants: BTreeSet<String> = self.0.keys().map(|(t, _)| t.clone()).collect();
            tenants.into_iter().collect()
        }
        fn version(&self, tenant: &str, name: &str) -> Option<String> {
            self.0
                .get(&(tenant.to_string(), name.to_string()))
                .map(|v| format!("v:{v}"))
        }
        fn open(&self, tenant: &str, name: &str) -> Result<SecretValue, SecretError> {
            self.0
                .get(&(tenant.to_string(), name.to_string()))
                .map(|v| SecretValue::new(v.clone()))
                .ok_or(SecretError::Missing)
        }
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn discovery_uses_the_preferred_tenant_or_the_first_holding_every_secret() {
        let slot = Arc::new(SecretSlot::default());
        slot.replace(PlainSource::with(&[
            ("alpha", "A", "1"),
            ("beta", "A", "2"),
            ("beta", "B", "3"),
        ]));
        let first = TenantCredentials::new(
            names(&["A", "B"]),
            SecretHolder::Discovery { preferred: None },
            slot.clone(),
        );
        let (secrets, _) = first.resolve().unwrap();
        assert_eq!(secrets.tenant(), "beta", "alpha lacks B");
        let preferred = TenantCredentials::new(
            names(&["A"]),
            SecretHolder::Discovery {
                preferred: Some("alpha".into()),
            },
            slot,
        );
        assert_eq!(preferred.resolve().unwrap().0.tenant(), "alpha");
    }

    #[test]
    fn a_tenant_binding_never_resolves_another_tenants_secret() {
        let slot = Arc::new(SecretSlot::default());
        slot.replace(PlainSource::with(&[("alpha", "A", "1")]));
        let beta = TenantCredentials::new(
            names(&["A"]),
            SecretHolder::Tenant("beta".into()),
            slot.clone(),
        );
        let error = beta.resolve().unwrap_err().to_string();
        assert!(
            error.contains("quiver ctl secret set --tenant beta A"),
            "{error}"
        );
        let before = beta.stamp();
        slot.replace(PlainSource::with(&[
            ("alpha", "A", "1"),
            ("beta", "A", "9"),
        ]));
        assert_ne!(beta.stamp(), before, "a new secret changes the stamp");
        assert_eq!(
            beta.resolve().unwrap().0.get("A").map(SecretValue::expose),
            Some("9")
        );
    }
}
