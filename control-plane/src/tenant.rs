//! Tenants: who may use the gateway, which part of the manifest they see, and
//! what they may spend. The control plane stores API-key hashes only; the key
//! itself is shown once, to the operator who issued it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A tenant as replicated by the control plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    /// Unique id, `[a-zA-Z0-9_-]{1,64}`.
    pub id: String,
    /// What operators see; defaults to the id.
    pub display_name: String,
    /// MCP mode served at `/mcp` for this tenant (`passthrough`, `search`, `code`);
    /// `None` uses the edge's default.
    #[serde(default)]
    pub mode: Option<String>,
    /// Visible servers by glob (`github`, `db-*`); empty means every server.
    #[serde(default)]
    pub servers: Vec<String>,
    /// Visible tools by glob over `<server>/<tool>` (`github/list_*`); empty means
    /// every tool of a visible server.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Servers carrying any of these tags are visible too.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Tool calls per minute (stored here; enforced by the edge).
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
    /// Spending budget in the tenant's unit (stored here; enforced by the edge).
    #[serde(default)]
    pub budget: Option<f64>,
    /// Price per call by `<server>/<tool>` glob.
    #[serde(default)]
    pub prices: BTreeMap<String, f64>,
    /// API keys by key id: hashes only.
    #[serde(default)]
    pub keys: BTreeMap<String, ApiKey>,
    /// When it was created (ms since the epoch, leader's clock).
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
}

/// One API key of a tenant: its SHA-256, never the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    /// Hex SHA-256 of the whole key string.
    pub sha256: String,
    /// When it was issued.
    pub created_ms: u64,
}

/// The settable part of a tenant: every field optional, so one type serves
/// `create` (absent = default) and `update` (absent = unchanged).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantPatch {
    /// See [`Tenant::display_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// See [`Tenant::mode`]; `Some("")` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// See [`Tenant::servers`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<String>>,
    /// See [`Tenant::tools`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// See [`Tenant::tags`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// See [`Tenant::rate_limit_per_minute`]; `Some(0)` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_minute: Option<u32>,
    /// See [`Tenant::budget`]; a negative value clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// Prices to set (a negative price removes the entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<BTreeMap<String, f64>>,
}

/// The modes a tenant may be given.
pub const MODES: [&str; 3] = ["passthrough", "search", "code"];

/// Why a [`TenantPatch`] cannot be applied; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TenantPatchError {
    /// `mode` is not one of [`MODES`].
    #[error("mode `{mode}` is not one of {}", MODES.join(", "))]
    UnknownMode {
        /// The mode given.
        mode: String,
    },
    /// `budget` is NaN or infinite.
    #[error("budget must be a finite number")]
    BudgetNotFinite,
    /// A price is NaN or infinite.
    #[error("price of `{glob}` must be a finite number")]
    PriceNotFinite {
        /// The price's glob.
        glob: String,
    },
}

impl TenantPatch {
    /// Checks the values a patch would set.
    pub fn validate(&self) -> Result<(), TenantPatchError> {
        if let Some(mode) = self.mode.as_deref()
            && !mode.is_empty()
            && !MODES.contains(&mode)
        {
            return Err(TenantPatchError::UnknownMode {
                mode: mode.to_string(),
            });
        }
        if let Some(budget) = self.budget
            && !budget.is_finite()
        {
            return Err(TenantPatchError::BudgetNotFinite);
        }
        for (glob, price) in self.prices.iter().flatten() {
            if !price.is_finite() {
                return Err(TenantPatchError::PriceNotFinite { glob: glob.clone() });
            }
        }
        Ok(())
    }
}

impl Tenant {
    /// A new tenant with `patch` applied over the defaults.
    pub fn new(id: &str, patch: &TenantPatch, now_ms: u64) -> Tenant {
        let mut tenant = Tenant {
            id: id.to_string(),
            display_name: id.to_string(),
            mode: None,
            servers: Vec::new(),
            tools: Vec::new(),
            tags: Vec::new(),
            rate_limit_per_minute: None,
            budget: None,
            prices: BTreeMap::new(),
            keys: BTreeMap::new(),
            created_ms: now_ms,
            updated_ms: now_ms,
        };
        tenant.apply(patch, now_ms);
        tenant
    }

    /// Applies the fields `patch` sets.
    pub fn apply(&mut self, patch: &TenantPatch, now_ms: u64) {
        if let Some(name) = &patch.display_name {
            self.display_name = name.clone();
        }
        if let Some(mode) = &patch.mode {
            self.mode = (!mode.is_empty()).then(|| mode.clone());
        }
        if let Some(servers) = &patch.servers {
            self.servers = servers.clone();
        }
        if let Some(tools) = &patch.tools {
            self.tools = tools.clone();
        }
        if let Some(tags) = &patch.tags {
            self.tags = tags.clone();
        }
        if let Some(limit) = patch.rate_limit_per_minute {
            self.rate_limit_per_minute = (limit > 0).then_some(limit);
        }
        if let Some(budget) = patch.budget {
            self.budget = (budget >= 0.0).then_some(budget);
        }
        for (glob, price) in patch.prices.iter().flatten() {
            if *price < 0.0 {
                self.prices.remove(glob);
            } else {
                self.prices.insert(glob.clone(), *price);
            }
        }
        self.updated_ms = now_ms;
    }
}

/// Hex SHA-256 of an API key, the only form the control plane keeps.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Whether `id` is a valid tenant, upstream or key id.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_changes_only_what_it_sets() {
        let mut tenant = Tenant::new(
            "acme",
            &TenantPatch {
                servers: Some(vec!["github".into()]),
                budget: Some(10.0),
                ..TenantPatch::default()
            },
            1,
        );
        tenant.apply(
            &TenantPatch {
                display_name: Some("Acme Inc".into()),
                budget: Some(-1.0),
                ..TenantPatch::default()
            },
            2,
        );
        assert_eq!(tenant.display_name, "Acme Inc");
        assert_eq!(tenant.servers, vec!["github".to_string()]);
        assert_eq!(tenant.budget, None);
        assert_eq!((tenant.created_ms, tenant.updated_ms), (1, 2));
    }

    #[test]
    fn an_unknown_mode_is_refused_with_the_choices() {
        let patch = TenantPatch {
            mode: Some("turbo".into()),
            ..TenantPatch::default()
        };
        let error = patch.validate().unwrap_err().to_string();
        assert!(error.contains("passthrough, search, code"), "{error}");
    }

    #[test]
    fn key_hashes_are_hex_sha256() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
