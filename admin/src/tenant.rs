//! Tenants: who may use the gateway, which part of the manifest they see, and
//! what they may spend. The control plane stores API-key hashes only; the key
//! itself is shown once, to the operator who issued it.

use std::collections::BTreeMap;

use quiver_proto::finding::HoldAt;
use quiver_proto::manifest::ValidationMode;
pub use quiver_proto::tenant::{ApiKey, Tenant, hash_key, valid_id};
use serde::{Deserialize, Serialize};

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
    /// Per-tool limits to set (0 removes the entry); see [`Tenant::tool_rate_limits`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_rate_limits: Option<BTreeMap<String, u32>>,
    /// See [`Tenant::audit_arguments`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_arguments: Option<bool>,
    /// See [`Tenant::self_service_keys`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_service_keys: Option<bool>,
    /// See [`Tenant::validation`]: `schema`, `strict` or `off`; `Some("")`
    /// goes back to each server's own level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<String>,
    /// See [`Tenant::hold_findings`]: `low`, `medium`, `high` or `never`;
    /// `Some("")` clears it (only the upstreams' holds apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_findings: Option<String>,
    /// See [`Tenant::stash_bytes`]; `Some(0)` goes back to the executor's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stash_bytes: Option<u64>,
    /// See [`Tenant::stash_keys`]; `Some(0)` goes back to the executor's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stash_keys: Option<u64>,
    /// See [`Tenant::task_wall_ms`]; `Some(0)` goes back to the usual wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_wall_ms: Option<u64>,
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
    /// `validation` is not `schema`, `strict` or `off`.
    #[error(
        "validation `{validation}` is not one of schema, strict, off (\"\" for each server's own)"
    )]
    UnknownValidation {
        /// The level given.
        validation: String,
    },
    /// `hold_findings` is not a hold level.
    #[error("hold level `{hold}` is not one of low, medium, high, never (\"\" to clear it)")]
    UnknownHold {
        /// The level given.
        hold: String,
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
            && mode.parse::<quiver_proto::mode::Mode>().is_err()
        {
            return Err(TenantPatchError::UnknownMode {
                mode: mode.to_string(),
            });
        }
        if let Some(validation) = self.validation.as_deref()
            && !["", "schema", "strict", "off"].contains(&validation)
        {
            return Err(TenantPatchError::UnknownValidation {
                validation: validation.to_string(),
            });
        }
        if let Some(hold) = self.hold_findings.as_deref()
            && !hold.is_empty()
            && HoldAt::parse(hold).is_err()
        {
            return Err(TenantPatchError::UnknownHold {
                hold: hold.to_string(),
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

impl TenantPatch {
    /// A new tenant with this patch applied over the defaults.
    pub fn create(&self, id: &str, now_ms: u64) -> Tenant {
        let mut tenant = Tenant {
            id: id.to_string(),
            display_name: id.to_string(),
            mode: None,
            validation: None,
            servers: Vec::new(),
            tools: Vec::new(),
            tags: Vec::new(),
            rate_limit_per_minute: None,
            tool_rate_limits: BTreeMap::new(),
            audit_arguments: false,
            self_service_keys: false,
            stash_bytes: None,
            stash_keys: None,
            task_wall_ms: None,
            budget: None,
            prices: BTreeMap::new(),
            keys: BTreeMap::new(),
            created_ms: now_ms,
            updated_ms: now_ms,
            hold_findings: Default::default(),
        };
        self.apply_to(&mut tenant, now_ms);
        tenant
    }

    /// Applies the fields this patch sets to `tenant`.
    pub fn apply_to(&self, tenant: &mut Tenant, now_ms: u64) {
        let patch = self;
        if let Some(name) = &patch.display_name {
            tenant.display_name = name.clone();
        }
        if let Some(mode) = &patch.mode {
            // Validated: a mode's name, or empty for the edge's default.
            tenant.mode = mode.parse().ok();
        }
        if let Some(servers) = &patch.servers {
            tenant.servers = servers.clone();
        }
        if let Some(tools) = &patch.tools {
            tenant.tools = tools.clone();
        }
        if let Some(tags) = &patch.tags {
            tenant.tags = tags.clone();
        }
        if let Some(limit) = patch.rate_limit_per_minute {
            tenant.rate_limit_per_minute = (limit > 0).then_some(limit);
        }
        if let Some(budget) = patch.budget {
            tenant.budget = (budget >= 0.0).then_some(budget);
        }
        if let Some(validation) = patch.validation.as_deref() {
            tenant.validation = (!validation.is_empty()).then(|| ValidationMode::parse(validation));
        }
        if let Some(hold) = patch.hold_findings.as_deref() {
            tenant.hold_findings = HoldAt::parse(hold).ok();
        }
        if let Some(bytes) = patch.stash_bytes {
            tenant.stash_bytes = (bytes > 0).then_some(bytes);
        }
        if let Some(keys) = patch.stash_keys {
            tenant.stash_keys = (keys > 0).then_some(keys);
        }
        if let Some(wall) = patch.task_wall_ms {
            tenant.task_wall_ms = (wall > 0).then_some(wall);
        }
        if let Some(audit) = patch.audit_arguments {
            tenant.audit_arguments = audit;
        }
        if let Some(keys) = patch.self_service_keys {
            tenant.self_service_keys = keys;
        }
        for (glob, limit) in patch.tool_rate_limits.iter().flatten() {
            if *limit == 0 {
                tenant.tool_rate_limits.remove(glob);
            } else {
                tenant.tool_rate_limits.insert(glob.clone(), *limit);
            }
        }
        for (glob, price) in patch.prices.iter().flatten() {
            if *price < 0.0 {
                tenant.prices.remove(glob);
            } else {
                tenant.prices.insert(glob.clone(), *price);
            }
        }
        tenant.updated_ms = now_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_changes_only_what_it_sets() {
        let mut tenant = TenantPatch {
            servers: Some(vec!["github".into()]),
            budget: Some(10.0),
            ..TenantPatch::default()
        }
        .create("acme", 1);
        TenantPatch {
            display_name: Some("Acme Inc".into()),
            budget: Some(-1.0),
            ..TenantPatch::default()
        }
        .apply_to(&mut tenant, 2);
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
}
