//! The tenants' secrets as a node holds them: sealed, exactly as replicated,
//! opened with this node's cluster key only when a connection is made for a
//! tenant. This is the [`TenantSecretSource`] an executor (and the leader's
//! discovery) installs into its upstream set.

use std::{collections::BTreeMap, sync::Arc};

use quiver_proto::pb;
use quiver_upstream::{SecretError, SecretValue, TenantSecretSource};

use crate::{
    cluster_key::{CLUSTER_KEY_ENV, ClusterKey, SealedValue},
    state::SealedSecret,
};

/// Every tenant's sealed secrets: tenant → name → secret (the replicated
/// state's `secrets`, and what `WatchManifest` carries as `secrets`).
pub type SecretsByTenant = BTreeMap<String, BTreeMap<String, SealedSecret>>;

/// The secrets as a message (`quiver.v1.SecretsByTenant`).
pub fn secrets_to_pb(secrets: &SecretsByTenant) -> pb::SecretsByTenant {
    let sealed = |secret: &SealedSecret| pb::SealedSecret {
        nonce: secret.sealed.nonce.clone(),
        ciphertext: secret.sealed.ciphertext.clone(),
        key_id: secret.sealed.key_id.clone(),
        updated_ms: secret.updated_ms,
    };
    let tenants = secrets.iter().map(|(tenant, named)| {
        let secrets = named
            .iter()
            .map(|(name, secret)| (name.clone(), sealed(secret)));
        let secrets = secrets.collect();
        (tenant.clone(), pb::TenantSecrets { secrets })
    });
    pb::SecretsByTenant {
        tenants: tenants.collect(),
    }
}

/// The secrets a message holds.
pub fn secrets_from_pb(message: pb::SecretsByTenant) -> SecretsByTenant {
    let sealed = |secret: pb::SealedSecret| SealedSecret {
        sealed: SealedValue {
            nonce: secret.nonce,
            ciphertext: secret.ciphertext,
            key_id: secret.key_id,
        },
        updated_ms: secret.updated_ms,
    };
    let tenants = message.tenants.into_iter().map(|(tenant, named)| {
        let secrets = named.secrets.into_iter();
        (
            tenant,
            secrets
                .map(|(name, secret)| (name, sealed(secret)))
                .collect(),
        )
    });
    tenants.collect()
}

/// Sealed secrets and the key to open them (none on a node given no key:
/// then every secret is "unavailable", with the fix).
pub struct SealedSecretSource {
    secrets: SecretsByTenant,
    key: Option<Arc<ClusterKey>>,
}

impl SealedSecretSource {
    /// `secrets`, to be opened with `key`.
    pub fn new(secrets: SecretsByTenant, key: Option<Arc<ClusterKey>>) -> SealedSecretSource {
        SealedSecretSource { secrets, key }
    }
}

impl TenantSecretSource for SealedSecretSource {
    fn tenants(&self) -> Vec<String> {
        self.secrets.keys().cloned().collect()
    }

    fn version(&self, tenant: &str, name: &str) -> Option<String> {
        self.secrets
            .get(tenant)?
            .get(name)
            .map(|s| s.sealed.nonce.clone())
    }

    fn open(&self, tenant: &str, name: &str) -> Result<SecretValue, SecretError> {
        let sealed = self
            .secrets
            .get(tenant)
            .and_then(|s| s.get(name))
            .ok_or(SecretError::Missing)?;
        let Some(key) = &self.key else {
            return Err(SecretError::Unavailable(format!(
                "this node holds no cluster key; start it with {CLUSTER_KEY_ENV} or --cluster-key-file (the key the control plane seals with)"
            )));
        };
        key.open(tenant, name, &sealed.sealed)
            .map_err(|e| SecretError::Unavailable(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_survive_their_message() {
        let secret = |nonce: &str| SealedSecret {
            sealed: SealedValue {
                nonce: nonce.into(),
                ciphertext: format!("{nonce}-ciphertext"),
                key_id: "k1".into(),
            },
            updated_ms: 42,
        };
        let secrets = SecretsByTenant::from([
            (
                "acme".to_string(),
                BTreeMap::from([("A".to_string(), secret("n1")), ("B".into(), secret("n2"))]),
            ),
            (
                "globex".to_string(),
                BTreeMap::from([("A".into(), secret("n3"))]),
            ),
        ]);
        assert_eq!(secrets_from_pb(secrets_to_pb(&secrets)), secrets);
    }

    #[test]
    fn opens_with_the_key_and_says_what_is_missing() {
        let key = Arc::new(ClusterKey::from_base64(&format!("{}=", "A".repeat(43)), "t").unwrap());
        let sealed = key
            .seal("acme", "API_TOKEN", &SecretValue::new("tok".into()))
            .unwrap();
        let secrets = SecretsByTenant::from([(
            "acme".to_string(),
            BTreeMap::from([(
                "API_TOKEN".to_string(),
                SealedSecret {
                    sealed,
                    updated_ms: 1,
                },
            )]),
        )]);
        let source = SealedSecretSource::new(secrets.clone(), Some(key));
        assert_eq!(source.tenants(), vec!["acme".to_string()]);
        assert_eq!(source.open("acme", "API_TOKEN").unwrap().expose(), "tok");
        assert_eq!(source.open("acme", "OTHER"), Err(SecretError::Missing));
        assert!(source.version("other", "API_TOKEN").is_none());
        let keyless = SealedSecretSource::new(secrets, None);
        let Err(SecretError::Unavailable(why)) = keyless.open("acme", "API_TOKEN") else {
            panic!("a node without the key cannot open anything");
        };
        assert!(why.contains(CLUSTER_KEY_ENV), "{why}");
    }
}
