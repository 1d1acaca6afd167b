//! Conversions between the contract's types and `quiver.v1.Executor`'s
//! messages, used by both ends of the wire ([`crate::RemoteExecutor`] and the
//! executor's gRPC service), so a remote execution ends exactly as a local one.

use std::borrow::Cow;

use quiver_proto::pb;
use quiver_view::{CallOrigin, redact::redact};
use tonic::{Code, Status};

use crate::{
    AppView, ExecuteError, ExecuteRequest, Limits, ScriptError, ScriptErrorKind, ScriptOutcome,
    ValidationErrors, Violation,
};

/// `limits` on the wire.
pub fn limits_to_pb(limits: &Limits) -> pb::ExecutionLimits {
    pb::ExecutionLimits {
        wall_ms: limits.wall_ms,
        heap_bytes: limits.heap_bytes,
        tool_calls: limits.tool_calls,
        parallel_calls: limits.parallel_calls,
        output_bytes: limits.output_bytes,
        code_bytes: limits.code_bytes,
        log_bytes: limits.log_bytes,
        host_calls: limits.host_calls,
        request_bytes: limits.request_bytes,
        reply_bytes: limits.reply_bytes,
    }
}

/// Limits from the wire; a field left at 0 does not tighten anything.
pub fn limits_from_pb(limits: &pb::ExecutionLimits) -> Limits {
    fn or_max64(v: u64) -> u64 {
        if v == 0 { u64::MAX } else { v }
    }
    fn or_max32(v: u32) -> u32 {
        if v == 0 { u32::MAX } else { v }
    }
    Limits {
        wall_ms: or_max64(limits.wall_ms),
        heap_bytes: or_max64(limits.heap_bytes),
        code_bytes: or_max64(limits.code_bytes),
        output_bytes: or_max64(limits.output_bytes),
        log_bytes: or_max64(limits.log_bytes),
        tool_calls: or_max32(limits.tool_calls),
        parallel_calls: or_max32(limits.parallel_calls),
        host_calls: or_max32(limits.host_calls),
        request_bytes: or_max64(limits.request_bytes),
        reply_bytes: or_max64(limits.reply_bytes),
    }
}

/// `request` on the wire.
pub fn request_to_pb(request: &ExecuteRequest) -> pb::ExecuteRequest {
    pb::ExecuteRequest {
        tenant: request.tenant.clone(),
        session: request.session.clone(),
        code: request.code.clone(),
        manifest_version: 0,
        limits: request.limits.as_ref().map(limits_to_pb),
        caller: request.origin.caller.clone(),
        edge: request.origin.edge.clone(),
        task_wall_ms: request.task_wall_ms.unwrap_or(0),
        subject_token: (request.origin.subject_token.as_ref())
            .map(|t| t.expose().to_string())
            .unwrap_or_default(),
        keep_app_views: request.keep_app_views,
    }
}

/// A request from the wire (`limits` absent or all zero: the executor's own).
pub fn request_from_pb(request: pb::ExecuteRequest) -> ExecuteRequest {
    ExecuteRequest {
        tenant: request.tenant,
        session: request.session,
        code: request.code,
        limits: request.limits.as_ref().map(limits_from_pb),
        origin: CallOrigin {
            caller: request.caller,
            edge: request.edge,
            script_sha256: None,
            subject_token: (!request.subject_token.is_empty())
                .then(|| quiver_proto::secret_value::SecretValue::new(request.subject_token)),
            from_app: false,
        },
        task_wall_ms: (request.task_wall_ms > 0).then_some(request.task_wall_ms),
        keep_app_views: request.keep_app_views,
    }
}

/// `kind` on the wire.
pub fn kind_to_pb(kind: ScriptErrorKind) -> pb::ScriptErrorKind {
    match kind {
        ScriptErrorKind::Timeout => pb::ScriptErrorKind::Timeout,
        ScriptErrorKind::Memory => pb::ScriptErrorKind::Memory,
        ScriptErrorKind::Output => pb::ScriptErrorKind::Output,
        ScriptErrorKind::ToolCalls => pb::ScriptErrorKind::ToolCalls,
        ScriptErrorKind::HostCalls => pb::ScriptErrorKind::HostCalls,
        ScriptErrorKind::Runtime => pb::ScriptErrorKind::Runtime,
        ScriptErrorKind::Rejected => pb::ScriptErrorKind::Rejected,
        ScriptErrorKind::Internal => pb::ScriptErrorKind::Internal,
    }
}

/// A kind from the wire; `None` for UNSPECIFIED (success).
pub fn kind_from_pb(kind: pb::ScriptErrorKind) -> Option<ScriptErrorKind> {
    Some(match kind {
        pb::ScriptErrorKind::Unspecified => return None,
        pb::ScriptErrorKind::Timeout => ScriptErrorKind::Timeout,
        pb::ScriptErrorKind::Memory => ScriptErrorKind::Memory,
        pb::ScriptErrorKind::Output => ScriptErrorKind::Output,
        pb::ScriptErrorKind::ToolCalls => ScriptErrorKind::ToolCalls,
        pb::ScriptErrorKind::HostCalls => ScriptErrorKind::HostCalls,
        pb::ScriptErrorKind::Runtime => ScriptErrorKind::Runtime,
        pb::ScriptErrorKind::Rejected => ScriptErrorKind::Rejected,
        pb::ScriptErrorKind::Internal => ScriptErrorKind::Internal,
    })
}

/// How an execution ended, as the executor answers it: an outcome or a
/// rejection in the response, other failures as a status (redacted).
pub fn result_to_pb(
    result: Result<ScriptOutcome, ExecuteError>,
) -> Result<pb::ExecuteResponse, Status> {
    match result {
        Ok(outcome) => {
            let mut response = pb::ExecuteResponse {
                result_json: outcome.result.map(|r| r.to_string()).unwrap_or_default(),
                logs: outcome.logs,
                truncated: outcome.truncated,
                app_views: outcome
                    .app_views
                    .into_iter()
                    .map(|v| pb::AppView {
                        server: v.server,
                        tool: v.tool,
                        uri: v.uri,
                        arguments_json: v.arguments.to_string(),
                        result_json: v.result.to_string(),
                    })
                    .collect(),
                ..Default::default()
            };
            if let Some(error) = outcome.error {
                response.error = error.message;
                response.error_line = error.line.unwrap_or(0);
                response.set_error_kind(kind_to_pb(error.kind));
            }
            Ok(response)
        }
        Err(ExecuteError::Rejected(errors)) => {
            let mut response = pb::ExecuteResponse {
                error: errors.to_string(),
                error_line: errors.errors.first().map_or(0, |v| v.line),
                violations: errors
                    .errors
                    .into_iter()
                    .map(|v| pb::Violation {
                        rule: v.rule.into_owned(),
                        message: v.message,
                        line: v.line,
                        column: v.column,
                    })
                    .collect(),
                ..Default::default()
            };
            response.set_error_kind(pb::ScriptErrorKind::Rejected);
            Ok(response)
        }
        Err(ExecuteError::Busy { reason }) => Err(Status::resource_exhausted(redact(&reason))),
        Err(ExecuteError::Failed { reason }) => Err(Status::aborted(redact(&reason))),
        Err(ExecuteError::Unreachable { reason }) => Err(Status::unavailable(redact(&reason))),
    }
}

/// How an execution ended, from the executor's answer.
pub fn result_from_pb(
    answer: Result<pb::ExecuteResponse, Status>,
) -> Result<ScriptOutcome, ExecuteError> {
    let response = match answer {
        Ok(response) => response,
        Err(status) => {
            let reason = status.message().to_string();
            return Err(match status.code() {
                Code::ResourceExhausted => ExecuteError::Busy { reason },
                Code::Aborted => ExecuteError::Failed { reason },
                _ => ExecuteError::Unreachable { reason },
            });
        }
    };
    let kind = kind_from_pb(response.error_kind());
    if kind == Some(ScriptErrorKind::Rejected) {
        let errors = response
            .violations
            .into_iter()
            .map(|v| Violation {
                rule: Cow::Owned(v.rule),
                message: v.message,
                line: v.line,
                column: v.column,
            })
            .collect();
        return Err(ExecuteError::Rejected(ValidationErrors { errors }));
    }
    let result = if response.result_json.is_empty() {
        None
    } else {
        Some(serde_json::from_str(&response.result_json).map_err(|e| {
            ExecuteError::Unreachable {
                reason: format!("the executor sent an unreadable result: {e}"),
            }
        })?)
    };
    // An error message without a kind comes from a newer executor: still an error.
    let kind = kind.or_else(|| (!response.error.is_empty()).then_some(ScriptErrorKind::Internal));
    Ok(ScriptOutcome {
        result,
        error: kind.map(|kind| ScriptError {
            kind,
            message: response.error,
            line: (response.error_line > 0).then_some(response.error_line),
        }),
        logs: response.logs,
        truncated: response.truncated,
        // A view whose JSON does not read is left out, not the outcome.
        app_views: response
            .app_views
            .into_iter()
            .filter_map(|v| {
                Some(AppView {
                    server: v.server,
                    tool: v.tool,
                    uri: v.uri,
                    arguments: serde_json::from_str(&v.arguments_json).ok()?,
                    result: serde_json::from_str(&v.result_json).ok()?,
                })
            })
            .take(crate::MAX_APP_VIEWS)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_outcome_crosses_the_wire_unchanged() {
        let outcome = ScriptOutcome {
            app_views: Vec::new(),
            result: Some(json!({"a": [1, 2]})),
            error: None,
            logs: vec!["hello".into()],
            truncated: true,
        };
        let back = result_from_pb(result_to_pb(Ok(outcome.clone()))).unwrap();
        assert_eq!(back, outcome);

        for kind in ScriptErrorKind::ALL {
            if kind == ScriptErrorKind::Rejected {
                continue;
            }
            let failed = ScriptOutcome {
                app_views: Vec::new(),
                result: None,
                error: Some(ScriptError::new(kind, "it broke", Some(3))),
                logs: vec![],
                truncated: false,
            };
            let back = result_from_pb(result_to_pb(Ok(failed.clone()))).unwrap();
            assert_eq!(back, failed, "{kind}");
        }
    }

    #[test]
    fn app_views_and_the_request_for_them_cross_the_wire() {
        let view = AppView {
            server: "dash".into(),
            tool: "dash__chart".into(),
            uri: "ui://dash/c.html".into(),
            arguments: json!({"metric": "cpu"}),
            result: json!({"content": [{"type": "text", "text": "ok"}]}),
        };
        let outcome = ScriptOutcome {
            app_views: vec![view.clone(); 2],
            ..ScriptOutcome::default()
        };
        let back = result_from_pb(result_to_pb(Ok(outcome.clone()))).unwrap();
        assert_eq!(back, outcome);
        let request = ExecuteRequest::new("t", "s", "return 1").keeping_app_views();
        assert!(request_from_pb(request_to_pb(&request)).keep_app_views);
        assert!(
            !request_from_pb(request_to_pb(&ExecuteRequest::new("t", "s", "1"))).keep_app_views
        );
        // A view whose JSON does not read is dropped, not the outcome.
        let mut response = result_to_pb(Ok(outcome)).unwrap();
        response.app_views[0].result_json = "{".into();
        assert_eq!(result_from_pb(Ok(response)).unwrap().app_views, vec![view]);
    }

    #[test]
    fn a_rejection_keeps_every_violation() {
        let errors = ValidationErrors {
            errors: vec![
                Violation {
                    rule: Cow::Borrowed("eval"),
                    message: "no eval".into(),
                    line: 1,
                    column: 8,
                },
                Violation {
                    rule: Cow::Borrowed("constructor-chain"),
                    message: "no constructor".into(),
                    line: 2,
                    column: 3,
                },
            ],
        };
        match result_from_pb(result_to_pb(Err(ExecuteError::Rejected(errors.clone())))) {
            Err(ExecuteError::Rejected(back)) => assert_eq!(back, errors),
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn refusals_keep_their_kind_across_the_wire() {
        let busy = ExecuteError::Busy {
            reason: "no worker came free".into(),
        };
        assert!(matches!(
            result_from_pb(result_to_pb(Err(busy))),
            Err(ExecuteError::Busy { reason }) if reason.contains("no worker")
        ));
        let failed = ExecuteError::Failed {
            reason: "the worker process died".into(),
        };
        assert!(matches!(
            result_from_pb(result_to_pb(Err(failed))),
            Err(ExecuteError::Failed { .. })
        ));
    }

    #[test]
    fn limits_cross_the_wire_and_zero_means_the_executors_own() {
        let limits = Limits {
            wall_ms: 250,
            ..Limits::default()
        };
        assert_eq!(limits_from_pb(&limits_to_pb(&limits)), limits);
        let unset = limits_from_pb(&pb::ExecutionLimits::default());
        assert_eq!(Limits::default().tightened_by(&unset), Limits::default());
    }
}
