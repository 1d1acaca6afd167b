//! Passthrough lists every tool of the view under `<server>__<tool>`, with the
//! description and input schema the upstream published.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use serde_json::{Value, json};
use support::{FakeExecutor, connect};

#[tokio::test]
async fn every_tool_is_listed_under_its_namespaced_name() {
    let client = connect(Mode::Passthrough, Arc::new(FakeExecutor::new()), None).await;

    let tools = client
        .list_all_tools()
        .await
        .expect("tools/list is answered");

    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "files__read_file",
            "files__write_file",
            "weather__get_forecast"
        ]
    );
    let forecast = tools
        .iter()
        .find(|t| t.name == "weather__get_forecast")
        .expect("listed above");
    assert_eq!(
        forecast.description.as_deref(),
        Some("Get the weather forecast for a city. Covers up to ten days.")
    );
    assert_eq!(
        Value::Object((*forecast.input_schema).clone()),
        json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 10}
        }, "required": ["city"]})
    );
}
