//! Shorthands for the stub's unit tests: a tool from a schema, rendered or
//! lowered and printed flat.

pub(super) use serde_json::{Map, Value, json};

pub(super) use super::{
    MAX_DECLARATION_BYTES, MAX_SCHEMA_DEPTH, MAX_SIGNATURE_CHARS, RenderedStub, StubInput, render,
};
use super::{lowering::Lowering, typescript::flat};
pub(super) use crate::tool::ToolDef;

pub(super) fn tool(description: &str, schema: Value) -> ToolDef {
    ToolDef {
        name: "t".into(),
        title: None,
        description: description.into(),
        input_schema: schema,
        output_schema: None,
        annotations: None,
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

pub(super) fn args_type(schema: Value) -> String {
    flat(&Lowering::new(&schema, MAX_SCHEMA_DEPTH, 0).lower(&schema, 0, 0))
}
