//! A small manifest for unit tests: servers with tools named as given.

use std::sync::Arc;

use quiver_proto::{Manifest, ServerEntry, ToolDef};
use serde_json::json;

/// Version 1 of a manifest of `servers` (`id`, tool names), each tool with
/// an empty object schema.
pub(crate) fn manifest(servers: &[(&str, &[&str])]) -> Arc<Manifest> {
    let entry = |id: &str, tools: &[&str]| ServerEntry {
        id: id.into(),
        description: String::new(),
        namespace: id.into(),
        tags: Vec::new(),
        group: String::new(),
        validation: Default::default(),
        features: Vec::new(),
        tools: tools
            .iter()
            .map(|name| ToolDef {
                name: (*name).into(),
                title: None,
                description: format!("{name} of {id}"),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: None,
                meta: None,
            })
            .collect(),
        findings: Default::default(),
    };
    Arc::new(Manifest::build(
        1,
        servers.iter().map(|(id, tools)| entry(id, tools)).collect(),
    ))
}
