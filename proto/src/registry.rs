//! Tenants and the settings they share with upstreams, to and from their
//! protobuf messages (`quiver/v1/registry.proto`), as the control plane sends
//! them to edges and executors. An enum value this node does not know is
//! refused with the field it was in, never read as some default.

use crate::{
    finding::HoldAt,
    manifest::ValidationMode,
    mode::Mode,
    pb,
    tenant::{ApiKey, Tenant},
};

/// An enum value in a message that this node's build does not know (the
/// sender is newer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field}: enum value {value} is unknown to this node; run the same Quiver version as the control plane"
)]
pub struct UnknownEnumValue {
    /// The message field, e.g. `Tenant.mode`.
    pub field: &'static str,
    /// The value received.
    pub value: i32,
}

/// The known value of an enum field, or the error naming `field`.
pub(crate) fn known<E: TryFrom<i32>>(
    field: &'static str,
    value: i32,
) -> Result<E, UnknownEnumValue> {
    E::try_from(value).map_err(|_| UnknownEnumValue { field, value })
}

impl HoldAt {
    /// The message value; `None` is unspecified.
    pub fn to_pb(hold: Option<HoldAt>) -> pb::HoldAt {
        match hold {
            None => pb::HoldAt::Unspecified,
            Some(HoldAt::Low) => pb::HoldAt::Low,
            Some(HoldAt::Medium) => pb::HoldAt::Medium,
            Some(HoldAt::High) => pb::HoldAt::High,
            Some(HoldAt::Never) => pb::HoldAt::Never,
        }
    }

    /// The level a message names; `None` when unspecified.
    pub fn from_pb(field: &'static str, value: i32) -> Result<Option<HoldAt>, UnknownEnumValue> {
        Ok(match known(field, value)? {
            pb::HoldAt::Unspecified => None,
            pb::HoldAt::Low => Some(HoldAt::Low),
            pb::HoldAt::Medium => Some(HoldAt::Medium),
            pb::HoldAt::High => Some(HoldAt::High),
            pb::HoldAt::Never => Some(HoldAt::Never),
        })
    }
}

impl ValidationMode {
    /// The mode a message names; `None` when unspecified.
    pub fn from_pb(
        field: &'static str,
        value: i32,
    ) -> Result<Option<ValidationMode>, UnknownEnumValue> {
        let mode: pb::ValidationMode = known(field, value)?;
        Ok((mode != pb::ValidationMode::Unspecified).then(|| mode.into()))
    }
}

impl Mode {
    /// The message value; `None` is unspecified (the edge's default).
    pub fn to_pb(mode: Option<Mode>) -> pb::Mode {
        match mode {
            None => pb::Mode::Unspecified,
            Some(Mode::Passthrough) => pb::Mode::Passthrough,
            Some(Mode::Search) => pb::Mode::Search,
            Some(Mode::Code) => pb::Mode::Code,
        }
    }

    /// The mode a message names; `None` when unspecified.
    pub fn from_pb(field: &'static str, value: i32) -> Result<Option<Mode>, UnknownEnumValue> {
        Ok(match known(field, value)? {
            pb::Mode::Unspecified => None,
            pb::Mode::Passthrough => Some(Mode::Passthrough),
            pb::Mode::Search => Some(Mode::Search),
            pb::Mode::Code => Some(Mode::Code),
        })
    }
}

impl Tenant {
    /// The tenant as a message.
    pub fn to_pb(&self) -> pb::Tenant {
        let validation = self
            .validation
            .map_or(pb::ValidationMode::Unspecified, Into::into);
        pb::Tenant {
            id: self.id.clone(),
            display_name: self.display_name.clone(),
            mode: Mode::to_pb(self.mode).into(),
            validation: validation.into(),
            servers: self.servers.clone(),
            tools: self.tools.clone(),
            tags: self.tags.clone(),
            rate_limit_per_minute: self.rate_limit_per_minute,
            tool_rate_limits: self.tool_rate_limits.clone().into_iter().collect(),
            budget: self.budget,
            prices: self.prices.clone().into_iter().collect(),
            hold_findings: HoldAt::to_pb(self.hold_findings).into(),
            audit_arguments: self.audit_arguments,
            self_service_keys: self.self_service_keys,
            stash_bytes: self.stash_bytes,
            stash_keys: self.stash_keys,
            task_wall_ms: self.task_wall_ms,
            keys: (self.keys.iter())
                .map(|(id, key)| {
                    let (sha256, created_ms) = (key.sha256.clone(), key.created_ms);
                    (id.clone(), pb::ApiKey { sha256, created_ms })
                })
                .collect(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        }
    }

    /// The tenant a message describes.
    pub fn from_pb(message: pb::Tenant) -> Result<Tenant, UnknownEnumValue> {
        Ok(Tenant {
            mode: Mode::from_pb("Tenant.mode", message.mode)?,
            validation: ValidationMode::from_pb("Tenant.validation", message.validation)?,
            hold_findings: HoldAt::from_pb("Tenant.hold_findings", message.hold_findings)?,
            id: message.id,
            display_name: message.display_name,
            servers: message.servers,
            tools: message.tools,
            tags: message.tags,
            rate_limit_per_minute: message.rate_limit_per_minute,
            tool_rate_limits: message.tool_rate_limits.into_iter().collect(),
            budget: message.budget,
            prices: message.prices.into_iter().collect(),
            audit_arguments: message.audit_arguments,
            self_service_keys: message.self_service_keys,
            stash_bytes: message.stash_bytes,
            stash_keys: message.stash_keys,
            task_wall_ms: message.task_wall_ms,
            keys: (message.keys.into_iter())
                .map(|(id, key)| {
                    let (sha256, created_ms) = (key.sha256, key.created_ms);
                    (id, ApiKey { sha256, created_ms })
                })
                .collect(),
            created_ms: message.created_ms,
            updated_ms: message.updated_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_tenant_survives_its_message_with_every_field() {
        let tenant = Tenant {
            id: "acme".into(),
            display_name: "Acme Corp".into(),
            mode: Some(Mode::Search),
            validation: Some(ValidationMode::Strict),
            servers: vec!["github".into(), "db-*".into()],
            tools: vec!["github/list_*".into()],
            tags: vec!["internal".into()],
            rate_limit_per_minute: Some(120),
            tool_rate_limits: BTreeMap::from([("github/*".into(), 10)]),
            budget: Some(12.5),
            prices: BTreeMap::from([("db/query".into(), 0.25)]),
            hold_findings: Some(HoldAt::Medium),
            audit_arguments: true,
            self_service_keys: true,
            stash_bytes: Some(1 << 20),
            stash_keys: Some(64),
            task_wall_ms: Some(600_000),
            keys: BTreeMap::from([(
                "k1".into(),
                ApiKey {
                    sha256: "ab".repeat(32),
                    created_ms: 7,
                },
            )]),
            created_ms: 1,
            updated_ms: 2,
        };
        assert_eq!(Tenant::from_pb(tenant.to_pb()), Ok(tenant.clone()));

        let unset = Tenant {
            mode: None,
            validation: None,
            hold_findings: None,
            ..tenant
        };
        assert_eq!(Tenant::from_pb(unset.to_pb()), Ok(unset));
    }

    #[test]
    fn an_enum_value_from_a_newer_sender_is_refused_naming_its_field() {
        let mut message = Tenant::from_pb(pb::Tenant::default()).unwrap().to_pb();
        message.mode = 42;
        let error = Tenant::from_pb(message).unwrap_err();
        assert_eq!(
            error,
            UnknownEnumValue {
                field: "Tenant.mode",
                value: 42
            }
        );
        assert!(error.to_string().contains("same Quiver version"));
    }
}
