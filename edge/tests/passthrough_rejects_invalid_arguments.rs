//! Arguments that do not fit the tool's schema are refused at the edge with
//! a tool error naming the field; the upstream never sees the call.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, call, connect, text};

#[tokio::test]
async fn a_field_of_the_wrong_type_is_named_and_nothing_is_dispatched() {
    let executor = Arc::new(FakeExecutor::new());
    let client = connect(Mode::Passthrough, executor.clone(), None).await;

    let result = call(&client, "files__read_file", json!({"path": 42})).await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "invalid_arguments", "{error}");
    assert_eq!(error["problems"][0]["field"], "path", "{error}");
    let message = text(&result);
    assert!(message.contains("`files__read_file`"), "{message}");
    assert!(message.contains("- path:"), "{message}");
    assert!(executor.calls().is_empty(), "{:?}", executor.calls());
}

#[tokio::test]
async fn a_missing_required_field_is_named_and_nothing_is_dispatched() {
    let executor = Arc::new(FakeExecutor::new());
    let client = connect(Mode::Passthrough, executor.clone(), None).await;

    let result = call(&client, "files__write_file", json!({"path": "/tmp/a.txt"})).await;

    assert_eq!(result.is_error, Some(true), "{result:?}");
    let error = &result
        .structured_content
        .as_ref()
        .expect("structured error")["error"];
    assert_eq!(error["code"], "invalid_arguments", "{error}");
    // A missing property is reported against the arguments object, by name.
    let problems = error["problems"].as_array().expect("a problems list");
    assert_eq!(problems.len(), 1, "{error}");
    let problem = problems[0]["message"].as_str().unwrap_or_default();
    assert!(problem.contains("\"content\""), "{error}");
    assert!(!problem.contains("\"path\""), "{error}");
    assert!(
        text(&result).contains("\"content\" is a required property"),
        "{}",
        text(&result)
    );
    assert!(executor.calls().is_empty(), "{:?}", executor.calls());
}
