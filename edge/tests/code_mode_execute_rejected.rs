//! A script refused before running comes back as a `script_rejected` tool
//! error listing every violation (rule, message, line, column), so the model
//! can fix them all at once.

use crate::support;

use std::{borrow::Cow, sync::Arc};

use quiver_contract::{ExecuteError, ValidationErrors, Violation};
use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, FakeScripts, call, connect, text};

fn violations() -> ValidationErrors {
    ValidationErrors {
        errors: vec![
            Violation {
                rule: Cow::Borrowed("eval"),
                message: "eval is not allowed; call tools directly".into(),
                line: 1,
                column: 1,
            },
            Violation {
                rule: Cow::Borrowed("constructor-chain"),
                message: "reaching Function through .constructor is not allowed".into(),
                line: 2,
                column: 9,
            },
        ],
    }
}

#[tokio::test]
async fn every_violation_is_listed_and_nothing_ran() {
    let scripts = Arc::new(FakeScripts::answering(|| {
        Err(ExecuteError::Rejected(violations()))
    }));
    let client = connect(
        Mode::Code,
        Arc::new(FakeExecutor::new()),
        Some(scripts.clone()),
    )
    .await;

    let result = call(
        &client,
        "execute",
        json!({"code": "eval('1');\nconst F = (() => {}).constructor;"}),
    )
    .await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "script_rejected", "{error}");
    assert_eq!(
        error["violations"],
        json!([
            {"rule": "eval", "message": "eval is not allowed; call tools directly", "line": 1, "column": 1},
            {"rule": "constructor-chain", "message": "reaching Function through .constructor is not allowed", "line": 2, "column": 9}
        ])
    );
    let shown = text(&result);
    assert!(
        shown.contains("line 1, col 1: eval is not allowed"),
        "{shown}"
    );
    assert!(
        shown.contains("line 2, col 9: reaching Function"),
        "{shown}"
    );
    assert_eq!(scripts.requests().len(), 1);
}
