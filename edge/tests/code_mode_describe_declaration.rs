//! Code mode's `describe` answers a tool's full TypeScript declaration, by
//! exposed name or `server.tool`, and names the tools it does not know.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, call, connect, manifest, text};

#[tokio::test]
async fn describe_returns_the_tools_declaration() {
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), None).await;
    let declaration = manifest::tool_of(&manifest::two_servers(), "weather__get_forecast")
        .stub
        .declaration;

    let by_exposed = call(
        &client,
        "describe",
        json!({"names": ["weather__get_forecast"]}),
    )
    .await;
    let by_js_name = call(
        &client,
        "describe",
        json!({"names": "weather.get_forecast"}),
    )
    .await;

    assert_ne!(by_exposed.is_error, Some(true), "{by_exposed:?}");
    assert_eq!(text(&by_exposed), format!("{declaration}\n"));
    assert_eq!(text(&by_js_name), format!("{declaration}\n"));
    assert!(declaration.contains("city"), "{declaration}");
}

#[tokio::test]
async fn an_unknown_name_next_to_a_known_one_is_flagged_with_a_suggestion() {
    let client = connect(Mode::Code, Arc::new(FakeExecutor::new()), None).await;
    let declaration = manifest::tool_of(&manifest::two_servers(), "files__read_file")
        .stub
        .declaration;

    let result = call(
        &client,
        "describe",
        json!({"names": ["files__read_file", "files__writ_file"]}),
    )
    .await;

    let shown = text(&result);
    assert!(shown.starts_with(&declaration), "{shown}");
    assert!(
        shown.contains("// unknown tool `files__writ_file`; did you mean files__write_file"),
        "{shown}"
    );
}
