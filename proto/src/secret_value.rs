//! Plaintext credentials in memory: one tenant secret ([`SecretValue`]) and
//! the secrets one connection of a per-tenant upstream is made with
//! ([`TenantSecrets`]). Neither ever prints its value: `Debug` shows
//! `<redacted>`, and there is no `Display`.

use std::{collections::BTreeMap, fmt};

use serde::{Deserialize, Serialize};

/// The plaintext of one secret. `Debug` prints `<redacted>`; the value is
/// reached only through [`SecretValue::expose`], and its bytes are
/// overwritten (best effort) when it is dropped.
///
/// It serialises as a plain string: only the operator's request that sets a
/// secret carries one over the wire (to the control-plane leader, which seals
/// it before anything is stored).
///
/// ```
/// use quiver_proto::secret_value::SecretValue;
///
/// let token = SecretValue::new("s3cr3t".to_string());
/// assert_eq!(format!("{token:?}"), "<redacted>");
/// assert_eq!(token.expose(), "s3cr3t");
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a plaintext.
    pub fn new(value: String) -> SecretValue {
        SecretValue(value)
    }

    /// The plaintext, for the one place that must use it (a header, an
    /// environment variable, the sealing step).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Its length in bytes (safe to show).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Drop for SecretValue {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        bytes.fill(0);
        // Keeps the overwrite from being optimised away as a dead store.
        std::hint::black_box(&bytes);
    }
}

/// The secrets of one tenant that one connection resolves its
/// `${tenant_secret:NAME}` references from. `Debug` names the tenant and the
/// secrets, never their values.
#[derive(Clone, Default)]
pub struct TenantSecrets {
    tenant: String,
    values: BTreeMap<String, SecretValue>,
}

impl TenantSecrets {
    /// No secrets yet, for `tenant`.
    pub fn new(tenant: impl Into<String>) -> TenantSecrets {
        TenantSecrets {
            tenant: tenant.into(),
            values: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) secret `name`.
    pub fn insert(&mut self, name: impl Into<String>, value: SecretValue) {
        self.values.insert(name.into(), value);
    }

    /// The tenant these secrets belong to.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Secret `name`, if present.
    pub fn get(&self, name: &str) -> Option<&SecretValue> {
        self.values.get(name)
    }

    /// Every value (to scrub them from what a connection reports).
    pub fn values(&self) -> impl Iterator<Item = &SecretValue> {
        self.values.values()
    }
}

impl fmt::Debug for TenantSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TenantSecrets")
            .field("tenant", &self.tenant)
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Whether `a` and `b` are equal, in time that depends on their lengths only,
/// never on where they differ (for digests of keys and tokens).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let differences = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && std::hint::black_box(differences) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_and_only_those_compare_equal() {
        assert!(constant_time_eq(b"digest", b"digest"));
        assert!(!constant_time_eq(b"digest", b"digesT"));
        assert!(!constant_time_eq(b"digest", b"diges"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn debug_never_shows_a_value() {
        let mut secrets = TenantSecrets::new("acme");
        secrets.insert("API_TOKEN", SecretValue::new("tok-123".into()));
        let shown = format!("{secrets:?} {:?}", secrets.get("API_TOKEN"));
        assert!(!shown.contains("tok-123"), "{shown}");
        assert!(
            shown.contains("API_TOKEN") && shown.contains("acme"),
            "{shown}"
        );
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
