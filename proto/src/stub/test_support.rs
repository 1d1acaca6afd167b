//! Shorthands for the stub's unit tests: a tool from a schema, and that tool
//! rendered through the public entry point. It reaches nothing below `render`,
//! so any part of the stub may use it in its tests.

pub(super) use serde_json::{Map, Value, json};

pub(super) use super::{
    RenderedStub, StubInput,
    limits::{MAX_DECLARATION_BYTES, MAX_SCHEMA_DEPTH, MAX_SIGNATURE_CHARS},
    render,
};
pub(super) use crate::tool::ToolDef;

pub(super) fn tool(description: &str, schema: Value) -> ToolDef {
    ToolDef {
        name: "t".into(),
        title: None,
        description: description.into(),
        input_schema: schema,
        output_schema: None,
        annotations: None,
        meta: None,
    }
}

pub(super) fn rendered(schema: Value) -> RenderedStub {
    let def = tool("Does a thing.", schema);
    render(StubInput {
        server_js: "srv",
        tool_js: "run",
        exposed_name: "srv__run",
        def: &def,
    })
}
