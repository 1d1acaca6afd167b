//! A script that ran and failed comes back as a tool error coded
//! `script_<kind>`, with the line and the console output so far.

use crate::support;

use std::sync::Arc;

use quiver_contract::{ScriptError, ScriptErrorKind, ScriptOutcome};
use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, FakeScripts, call, connect, text};

fn failing_with(
    kind: ScriptErrorKind,
    message: &'static str,
    line: Option<u32>,
) -> Arc<FakeScripts> {
    Arc::new(FakeScripts::answering(move || {
        Ok(ScriptOutcome {
            app_views: Vec::new(),
            result: None,
            error: Some(ScriptError::new(kind, message, line)),
            logs: vec!["step 1".into()],
            truncated: false,
        })
    }))
}

#[tokio::test]
async fn a_thrown_error_is_script_runtime_with_its_line() {
    let scripts = failing_with(
        ScriptErrorKind::Runtime,
        "TypeError: cannot read properties of undefined (reading 'city')",
        Some(3),
    );
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), Some(scripts)).await;

    let result = call(
        &client,
        "execute",
        json!({"code": "console.log('step 1');\nconst x = undefined;\nreturn x.city;"}),
    )
    .await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        text(&result),
        "script runtime: TypeError: cannot read properties of undefined (reading 'city') (line 3)\n--- console ---\nstep 1"
    );
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "script_runtime", "{error}");
    assert_eq!(error["line"], 3, "{error}");
    assert_eq!(error["logs"], json!(["step 1"]), "{error}");
}

#[tokio::test]
async fn a_timeout_is_script_timeout() {
    let scripts = failing_with(
        ScriptErrorKind::Timeout,
        "the script ran for more than 30s",
        None,
    );
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), Some(scripts)).await;

    let result = call(&client, "execute", json!({"code": "while (true) {}"})).await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "script_timeout", "{error}");
    assert_eq!(error["line"], serde_json::Value::Null, "{error}");
    assert!(
        text(&result).starts_with("script timeout: the script ran for more than 30s\n"),
        "{}",
        text(&result)
    );
}
