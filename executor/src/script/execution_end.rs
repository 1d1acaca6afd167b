//! How one execution ended, as `quiver.executions` and
//! `quiver.execution.duration` count it. Only classifies and records; what
//! the caller is told is decided elsewhere.

use std::time::Duration;

use opentelemetry::KeyValue;
use quiver_contract::{ExecuteError, ScriptErrorKind, ScriptOutcome};
use quiver_telemetry::instruments;

/// The `outcome` attribute of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionEnd {
    /// It returned a value.
    Ok,
    /// It threw.
    Error,
    /// It ran out of wall time.
    Timeout,
    /// It hit another limit: memory, output size, tool or host calls.
    Limit,
    /// Static validation refused it; nothing ran.
    Rejected,
    /// No worker came free within the caller's share; nothing ran.
    Refused,
    /// Its worker or sandbox failed, or it was cancelled: no outcome.
    Lost,
}

impl ExecutionEnd {
    /// How `result` ended.
    pub fn of(result: &Result<ScriptOutcome, ExecuteError>) -> ExecutionEnd {
        match result {
            Ok(outcome) => match outcome.error.as_ref().map(|e| e.kind) {
                None => ExecutionEnd::Ok,
                Some(ScriptErrorKind::Runtime) => ExecutionEnd::Error,
                Some(ScriptErrorKind::Timeout) => ExecutionEnd::Timeout,
                Some(
                    ScriptErrorKind::Memory
                    | ScriptErrorKind::Output
                    | ScriptErrorKind::ToolCalls
                    | ScriptErrorKind::HostCalls,
                ) => ExecutionEnd::Limit,
                Some(ScriptErrorKind::Rejected) => ExecutionEnd::Rejected,
                Some(_) => ExecutionEnd::Lost,
            },
            Err(ExecuteError::Rejected(_)) => ExecutionEnd::Rejected,
            Err(ExecuteError::Busy { .. }) => ExecutionEnd::Refused,
            Err(_) => ExecutionEnd::Lost,
        }
    }

    /// The attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionEnd::Ok => "ok",
            ExecutionEnd::Error => "error",
            ExecutionEnd::Timeout => "timeout",
            ExecutionEnd::Limit => "limit",
            ExecutionEnd::Rejected => "rejected",
            ExecutionEnd::Refused => "refused",
            ExecutionEnd::Lost => "lost",
        }
    }

    /// Counts one execution of `tenant` that ended so after `took`.
    pub fn record(self, tenant: &str, took: Duration) {
        let attributes = [
            KeyValue::new("outcome", self.as_str()),
            KeyValue::new("quiver.tenant", tenant.to_string()),
        ];
        let instruments = instruments();
        instruments.executions.add(1, &attributes);
        instruments
            .execution_duration
            .record(took.as_secs_f64(), &attributes);
    }
}

#[cfg(test)]
mod tests {
    use quiver_contract::{ScriptError, ValidationErrors};

    use super::*;

    fn failed(kind: ScriptErrorKind) -> Result<ScriptOutcome, ExecuteError> {
        Ok(ScriptOutcome {
            app_views: Vec::new(),
            result: None,
            error: Some(ScriptError::new(kind, "x", None)),
            logs: Vec::new(),
            truncated: false,
        })
    }

    #[test]
    fn every_way_an_execution_ends_has_its_outcome() {
        let cases = [
            (failed(ScriptErrorKind::Runtime), "error"),
            (failed(ScriptErrorKind::Timeout), "timeout"),
            (failed(ScriptErrorKind::Memory), "limit"),
            (failed(ScriptErrorKind::ToolCalls), "limit"),
            (failed(ScriptErrorKind::Internal), "lost"),
            (
                Err(ExecuteError::Rejected(ValidationErrors::internal("no"))),
                "rejected",
            ),
            (
                Err(ExecuteError::Busy {
                    reason: "full".into(),
                }),
                "refused",
            ),
            (
                Err(ExecuteError::Failed {
                    reason: "died".into(),
                }),
                "lost",
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(ExecutionEnd::of(&result).as_str(), expected, "{result:?}");
        }
    }
}
