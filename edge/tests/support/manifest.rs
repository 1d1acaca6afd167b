//! The manifest every in-process edge test serves: two upstreams, three tools.

use quiver_proto::{
    Manifest,
    manifest::{ManifestTool, ServerEntry},
    tool::ToolDef,
};
use serde_json::{Value, json};

/// `files` (`read_file`, `write_file`) and `weather` (`get_forecast`), each
/// namespaced by its id.
pub fn two_servers() -> Manifest {
    Manifest::build(
        1,
        vec![
            server(
                "files",
                "Files on the shared drive",
                vec![
                    tool(
                        "read_file",
                        "Read a file from disk and return its text.",
                        json!({"type": "object", "properties": {
                            "path": {"type": "string", "description": "Absolute path"}
                        }, "required": ["path"]}),
                    ),
                    tool(
                        "write_file",
                        "Write text to a file on disk, replacing it.",
                        json!({"type": "object", "properties": {
                            "path": {"type": "string"},
                            "content": {"type": "string"}
                        }, "required": ["path", "content"]}),
                    ),
                ],
            ),
            server(
                "weather",
                "Weather forecasts",
                vec![tool(
                    "get_forecast",
                    "Get the weather forecast for a city. Covers up to ten days.",
                    json!({"type": "object", "properties": {
                        "city": {"type": "string"},
                        "days": {"type": "integer", "minimum": 1, "maximum": 10}
                    }, "required": ["city"]}),
                )],
            ),
        ],
    )
}

/// The tool `exposed` of [`two_servers`], as the edge renders it.
pub fn tool_of(manifest: &Manifest, exposed: &str) -> ManifestTool {
    manifest
        .tool_by_exposed(exposed)
        .unwrap_or_else(|| panic!("the test manifest has no tool `{exposed}`"))
        .clone()
}

fn server(id: &str, description: &str, tools: Vec<ToolDef>) -> ServerEntry {
    ServerEntry {
        id: id.into(),
        description: description.into(),
        namespace: id.into(),
        tags: Vec::new(),
        group: String::new(),
        validation: Default::default(),
        features: Vec::new(),
        tools,
        findings: Default::default(),
    }
}

fn tool(name: &str, description: &str, input_schema: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema,
        output_schema: None,
        annotations: None,
        meta: None,
    }
}
