//! What applying a replicated command produced: a typed result per command, or
//! a refusal with a machine-readable code. Refusals are deterministic, so every
//! node agrees on them; nothing here is persisted (the log holds commands).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{audit::AuditRetention, tenant::Tenant, usage::LeaseGranted};

/// The result of applying one log entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Applied.
    Applied {
        /// What the command did.
        result: CommandResult,
        /// The manifest version after the command.
        manifest_version: u64,
    },
    /// Refused; the state is unchanged.
    Refused {
        /// Why, for machines.
        code: RefusalCode,
        /// What is wrong and what to do.
        message: String,
    },
}

impl From<Refusal> for Outcome {
    fn from(refusal: Refusal) -> Outcome {
        Outcome::Refused {
            code: refusal.code,
            message: refusal.message,
        }
    }
}

/// Why the state machine refused a command; on the wire (and in gRPC status
/// mapping) as `not_found`, `already_exists`, `invalid`, `unsupported`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// The upstream, tenant, key, tool or version named does not exist.
    NotFound,
    /// Something of that id exists already.
    AlreadyExists,
    /// A value is malformed or out of range.
    Invalid,
    /// The entry was written by a newer build.
    Unsupported,
    /// A limit the cluster sets is reached (a tenant's keys).
    LimitReached,
}

impl RefusalCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::NotFound => "not_found",
            RefusalCode::AlreadyExists => "already_exists",
            RefusalCode::Invalid => "invalid",
            RefusalCode::Unsupported => "unsupported",
            RefusalCode::LimitReached => "limit_reached",
        }
    }
}

impl std::fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: its code and the message for the operator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// Why, for machines.
    pub code: RefusalCode,
    /// What is wrong and what to do.
    pub message: String,
}

impl Refusal {
    /// A refusal with `code`.
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// A refusal: what was named does not exist.
    pub fn not_found(message: impl Into<String>) -> Refusal {
        Refusal::new(RefusalCode::NotFound, message)
    }

    /// A refusal: what was to be made exists already.
    pub fn already_exists(message: impl Into<String>) -> Refusal {
        Refusal::new(RefusalCode::AlreadyExists, message)
    }

    /// A refusal: the request is not valid.
    pub fn invalid(message: impl Into<String>) -> Refusal {
        Refusal::new(RefusalCode::Invalid, message)
    }
}

/// What an applied command did, one variant per command of the replicated log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandResult {
    /// A Raft-internal entry (blank or membership): nothing of ours changed.
    Nothing,
    /// An upstream was registered or replaced.
    PutUpstream(UpstreamPut),
    /// An upstream was removed.
    RemoveUpstream(UpstreamRemoved),
    /// Discovery results, one per upstream of the batch.
    RecordDiscovery(Vec<DiscoveryRecord>),
    /// Quarantined changes were accepted.
    ApproveDrift(DriftApproved),
    /// The tenant as created.
    CreateTenant(Box<Tenant>),
    /// The tenant as updated.
    UpdateTenant(Box<Tenant>),
    /// A tenant was deleted.
    DeleteTenant(TenantDeleted),
    /// A key was added to a tenant.
    IssueKey(KeyChanged),
    /// A key was removed from a tenant.
    RevokeKey(KeyChanged),
    /// Budget allowance leased to an executor.
    LeaseBudget(LeaseGranted),
    /// Audit records appended: the ids given (none for an empty batch).
    AppendAudit(Option<(u64, u64)>),
    /// The audit retention as now set.
    SetAuditRetention(AuditRetention),
    /// A tenant's secret was set.
    SetSecret(SecretChanged),
    /// A tenant's secret was deleted.
    DeleteSecret(SecretChanged),
    /// A tenant's OAuth grant for an upstream was set or renewed.
    PutOAuthGrant(OAuthGrantChanged),
    /// A tenant's OAuth grant for an upstream was dropped.
    DropOAuthGrant(OAuthGrantChanged),
}

impl CommandResult {
    /// The result's own fields as JSON, without the variant name (what
    /// `quiver ctl -o json` prints as a write's `result`).
    pub fn to_json(&self) -> Value {
        let value = match self {
            CommandResult::Nothing => return Value::Null,
            CommandResult::PutUpstream(r) => serde_json::to_value(r),
            CommandResult::RemoveUpstream(r) => serde_json::to_value(r),
            CommandResult::RecordDiscovery(r) => serde_json::to_value(r),
            CommandResult::ApproveDrift(r) => serde_json::to_value(r),
            CommandResult::CreateTenant(r) | CommandResult::UpdateTenant(r) => {
                serde_json::to_value(r)
            }
            CommandResult::DeleteTenant(r) => serde_json::to_value(r),
            CommandResult::IssueKey(r) | CommandResult::RevokeKey(r) => serde_json::to_value(r),
            CommandResult::LeaseBudget(r) => serde_json::to_value(r),
            CommandResult::AppendAudit(r) => serde_json::to_value(r),
            CommandResult::SetAuditRetention(r) => serde_json::to_value(r),
            CommandResult::SetSecret(r) | CommandResult::DeleteSecret(r) => serde_json::to_value(r),
            CommandResult::PutOAuthGrant(r) | CommandResult::DropOAuthGrant(r) => {
                serde_json::to_value(r)
            }
        };
        value.unwrap_or_default()
    }
}

/// [`CommandResult::PutUpstream`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamPut {
    /// Upstream id.
    pub id: String,
    /// Whether an upstream of that id was replaced.
    pub replaced: bool,
}

/// [`CommandResult::RemoveUpstream`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamRemoved {
    /// Upstream id.
    pub id: String,
}

/// One upstream's discovery result as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveryRecord {
    /// Recorded; `changed` when the catalogue entry differs from before.
    Recorded {
        /// Upstream id.
        upstream: String,
        /// Whether anything a client can see may have changed.
        changed: bool,
    },
    /// Not recorded (the upstream was removed while discovery ran).
    Skipped {
        /// Upstream id.
        upstream: String,
        /// Why.
        reason: String,
    },
}

/// [`CommandResult::ApproveDrift`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftApproved {
    /// Upstream id.
    pub upstream: String,
    /// The tools whose new schema is now in the manifest.
    pub approved: Vec<String>,
    /// For a tool that screening held back: the findings accepted with it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub findings: BTreeMap<String, Vec<quiver_proto::finding::Finding>>,
}

/// [`CommandResult::DeleteTenant`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantDeleted {
    /// Tenant id.
    pub id: String,
}

/// [`CommandResult::IssueKey`] and [`CommandResult::RevokeKey`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyChanged {
    /// Tenant id.
    pub tenant: String,
    /// Key id.
    pub key_id: String,
}

/// [`CommandResult::SetSecret`] and [`CommandResult::DeleteSecret`]: which
/// secret, never its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretChanged {
    /// Tenant id.
    pub tenant: String,
    /// Secret name.
    pub name: String,
}

/// [`CommandResult::PutOAuthGrant`] and [`CommandResult::DropOAuthGrant`]:
/// whose grant, for which upstream, never a token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthGrantChanged {
    /// Tenant id.
    pub tenant: String,
    /// Upstream id.
    pub upstream: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_codes_keep_their_wire_spelling() {
        for (code, text) in [
            (RefusalCode::NotFound, "not_found"),
            (RefusalCode::AlreadyExists, "already_exists"),
            (RefusalCode::Invalid, "invalid"),
            (RefusalCode::Unsupported, "unsupported"),
            (RefusalCode::LimitReached, "limit_reached"),
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), text);
            assert_eq!(code.to_string(), text);
        }
    }

    #[test]
    fn a_write_result_prints_as_its_own_fields() {
        let result = CommandResult::RemoveUpstream(UpstreamRemoved { id: "gh".into() });
        assert_eq!(result.to_json(), serde_json::json!({"id": "gh"}));
        assert_eq!(CommandResult::Nothing.to_json(), Value::Null);
    }
}
