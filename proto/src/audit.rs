//! Audit records: one per tool call (made directly or from a script) and per
//! script execution, written by the executor that ran it, and one when a call
//! becomes a task and one when it ends, written by the edge that holds it;
//! kept by the control plane (append-only, bounded by a retention setting).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{canonical::to_canonical_json, script_error_kind::ScriptErrorKind};

/// What an audit record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// One tool call.
    Call,
    /// One script execution.
    Execute,
    /// An operator let a tool that screening held back be served (`tool`
    /// names it, `reason` the findings accepted; no tenant).
    Approval,
    /// A call became a task (`outcome` `created`), or a task ended
    /// (`completed`, `failed` with the reason, `cancelled`; `latency_us`
    /// from its creation). `tool` names the call, `task_id` the task, and
    /// `edge` the edge that holds it.
    Task,
}

impl AuditKind {
    /// The snake_case name (`call`, `execute`, `approval`, `task`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::Call => "call",
            AuditKind::Execute => "execute",
            AuditKind::Approval => "approval",
            AuditKind::Task => "task",
        }
    }
}

/// Whether the gateway let it run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Passed every check and ran.
    Allowed,
    /// Refused before anything was sent (view, rate limit, budget).
    Denied,
}

/// How what a record is about came out. In JSON and on the wire it is its
/// snake_case name (`ok`, `tool_error`, `timeout`, `created`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuditOutcome {
    /// It ran and succeeded.
    Ok,
    /// The tool answered, with `isError`.
    ToolError,
    /// The call failed (the upstream unreachable, a protocol error).
    Error,
    /// Refused before anything was sent (view, rate limit, budget).
    Refused,
    /// The script failed this way.
    Script(ScriptErrorKind),
    /// An operator let a held tool be served.
    Approved,
    /// A call became a task.
    TaskCreated,
    /// A task's call completed.
    TaskCompleted,
    /// A task's call failed (`reason` says how).
    TaskFailed,
    /// A task was cancelled.
    TaskCancelled,
    /// A name this release does not know (written by a newer one), kept as
    /// it was.
    Unknown(String),
}

impl AuditOutcome {
    /// The snake_case name.
    pub fn as_str(&self) -> &str {
        match self {
            AuditOutcome::Ok => "ok",
            AuditOutcome::ToolError => "tool_error",
            AuditOutcome::Error => "error",
            AuditOutcome::Refused => "refused",
            AuditOutcome::Script(kind) => kind.as_str(),
            AuditOutcome::Approved => "approved",
            AuditOutcome::TaskCreated => "created",
            AuditOutcome::TaskCompleted => "completed",
            AuditOutcome::TaskFailed => "failed",
            AuditOutcome::TaskCancelled => "cancelled",
            AuditOutcome::Unknown(name) => name,
        }
    }

    /// The outcome a name names (an unknown one kept as
    /// [`AuditOutcome::Unknown`]).
    pub fn from_name(name: &str) -> AuditOutcome {
        match name {
            "ok" => AuditOutcome::Ok,
            "tool_error" => AuditOutcome::ToolError,
            "error" => AuditOutcome::Error,
            "refused" => AuditOutcome::Refused,
            "approved" => AuditOutcome::Approved,
            "created" => AuditOutcome::TaskCreated,
            "completed" => AuditOutcome::TaskCompleted,
            "failed" => AuditOutcome::TaskFailed,
            "cancelled" => AuditOutcome::TaskCancelled,
            other => ScriptErrorKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == other)
                .map_or_else(
                    || AuditOutcome::Unknown(other.to_string()),
                    AuditOutcome::Script,
                ),
        }
    }
}

impl std::fmt::Display for AuditOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AuditOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AuditOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(AuditOutcome::from_name(&name))
    }
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Position in the control plane's log (assigned there; 0 until then).
    #[serde(default)]
    pub id: u64,
    /// When it happened (ms since the epoch, the executor's clock).
    pub at_ms: u64,
    /// The tenant.
    pub tenant: String,
    /// Key id or token subject (`key:…`, `token:…@issuer`, `anonymous`).
    pub caller: String,
    /// The edge that took the request.
    pub edge: String,
    /// The executor that ran (or refused) it.
    pub executor: String,
    /// A call or an execution.
    pub kind: AuditKind,
    /// `<server>/<tool>` of a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Hex SHA-256 of the canonical JSON of a call's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
    /// The arguments themselves, only for tenants that opted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Allowed or denied.
    pub decision: Decision,
    /// Why it was denied, or how it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long it took, in microseconds.
    pub latency_us: u64,
    /// How it came out.
    pub outcome: AuditOutcome,
    /// Hex SHA-256 of the script (an execution, or a call a script made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_sha256: Option<String>,
    /// The task a `task` record is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl AuditRecord {
    /// A record of `kind` for `tenant`'s `caller`, made at `at_ms`: allowed,
    /// `ok`, taking no time, naming no edge, executor, tool, script or task
    /// until the writer says otherwise (`AuditRecord { tool: …, ..new }`).
    pub fn new(kind: AuditKind, tenant: &str, caller: &str, at_ms: u64) -> AuditRecord {
        AuditRecord {
            id: 0,
            at_ms,
            tenant: tenant.to_string(),
            caller: caller.to_string(),
            edge: String::new(),
            executor: String::new(),
            kind,
            tool: None,
            arguments_sha256: None,
            arguments: None,
            decision: Decision::Allowed,
            reason: None,
            latency_us: 0,
            outcome: AuditOutcome::Ok,
            script_sha256: None,
            task_id: None,
        }
    }
}

/// Hex SHA-256 of the canonical JSON of `value` (absent arguments are `{}`).
pub fn digest_of(value: Option<&Value>) -> String {
    let empty = Value::Object(serde_json::Map::new());
    hex::encode(Sha256::digest(
        to_canonical_json(value.unwrap_or(&empty)).as_bytes(),
    ))
}

/// Hex SHA-256 of a script's source.
pub fn script_digest(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_named_as_it_is_serialised() {
        for kind in [
            AuditKind::Call,
            AuditKind::Execute,
            AuditKind::Approval,
            AuditKind::Task,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn outcomes_keep_their_names_through_json_and_unknown_ones_survive() {
        let every = [
            AuditOutcome::Ok,
            AuditOutcome::ToolError,
            AuditOutcome::Error,
            AuditOutcome::Refused,
            AuditOutcome::Approved,
            AuditOutcome::TaskCreated,
            AuditOutcome::TaskCompleted,
            AuditOutcome::TaskFailed,
            AuditOutcome::TaskCancelled,
        ]
        .into_iter()
        .chain(ScriptErrorKind::ALL.map(AuditOutcome::Script));
        let mut names = std::collections::BTreeSet::new();
        for outcome in every {
            let json = serde_json::to_value(&outcome).unwrap();
            assert_eq!(json, outcome.as_str());
            assert_eq!(
                serde_json::from_value::<AuditOutcome>(json).unwrap(),
                outcome
            );
            assert_eq!(AuditOutcome::from_name(outcome.as_str()), outcome);
            assert!(names.insert(outcome.to_string()), "{outcome} named twice");
        }
        assert_eq!(
            AuditOutcome::from_name("timeout"),
            AuditOutcome::Script(ScriptErrorKind::Timeout)
        );
        let newer: AuditOutcome = serde_json::from_str("\"quarantined\"").unwrap();
        assert_eq!(newer, AuditOutcome::Unknown("quarantined".into()));
        assert_eq!(serde_json::to_string(&newer).unwrap(), "\"quarantined\"");
    }

    #[test]
    fn argument_digests_ignore_key_order_and_absence_is_an_empty_object() {
        let a = serde_json::json!({"b": 1, "a": [1, 2]});
        let b = serde_json::json!({"a": [1, 2], "b": 1});
        assert_eq!(digest_of(Some(&a)), digest_of(Some(&b)));
        assert_eq!(digest_of(None), digest_of(Some(&serde_json::json!({}))));
        assert_ne!(digest_of(Some(&a)), digest_of(None));
    }
}
