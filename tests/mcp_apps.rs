//! MCP Apps (`io.modelcontextprotocol/ui`) through passthrough, the part
//! built so far: a tool's `_meta` (an app's `ui.resourceUri` and the tool's
//! visibility) reaches the client unchanged, through a real `quiver dev`
//! whose upstream is a real MCP server over stdio (the mock upstream serving
//! a catalogue that declares the app). Resource URIs are never rewritten, so
//! the link names the upstream's own `ui://` resource. A tool only the app
//! may see (`visibility: ["app"]`) is not listed, and its view can still
//! call it.

use serde_json::json;

use crate::support::{QuiverDev, call, connect, text, write_file};

#[tokio::test]
async fn a_tools_app_link_reaches_the_client_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        json!({"ui": {"resourceUri": "ui://dash/chart.html", "visibility": ["model", "app"]}});
    let catalogue = json!([{
        "name": "dash",
        "description": "Dashboards of metrics",
        "tools": [
            {
                "name": "show_chart",
                "description": "Show a chart of one metric.",
                "inputSchema": {"type": "object", "properties": {"metric": {"type": "string"}}},
                "_meta": app,
            },
            {"name": "list_metrics", "description": "List the metrics.", "inputSchema": {"type": "object"}},
            {
                "name": "refresh_chart",
                "description": "Refresh the chart the app shows.",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": "ui://dash/chart.html", "visibility": ["app"]}},
            },
        ],
    }]);
    let path = write_file(dir.path(), "apps.json", &catalogue.to_string());
    let dev = QuiverDev::start(&["--catalog", path.to_str().unwrap()]);
    let client = connect(&dev.mode_url("passthrough")).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let chart = tools
        .iter()
        .find(|t| t.name.ends_with("show_chart"))
        .unwrap_or_else(|| panic!("no show_chart in {tools:?}"));
    assert_eq!(serde_json::to_value(&chart.meta).unwrap(), app);
    let plain = tools
        .iter()
        .find(|t| t.name.ends_with("list_metrics"))
        .expect("list_metrics is listed");
    assert!(plain.meta.is_none(), "{:?}", plain.meta);
    assert!(
        !tools.iter().any(|t| t.name.ends_with("refresh_chart")),
        "an app-only tool is listed: {tools:?}"
    );
    let name = chart.name.replace("show_chart", "refresh_chart");
    let refreshed = call(&client, &name, json!({})).await;
    assert_ne!(refreshed.is_error, Some(true), "{}", text(&refreshed));
    client.cancel().await.ok();
}
