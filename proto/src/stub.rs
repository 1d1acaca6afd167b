//! Deterministic TypeScript stubs of tools, as code mode shows them to a model.

use crate::tool::ToolDef;

/// What a stub is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct StubInput<'a> {
    /// JavaScript identifier of the server (`tools.<server_js>`).
    pub server_js: &'a str,
    /// JavaScript identifier of the tool (`tools.<server_js>.<tool_js>`).
    pub tool_js: &'a str,
    /// Namespaced name (`<namespace>__<tool>`), usable with `tools.call(name, args)`.
    pub exposed_name: &'a str,
    /// The definition.
    pub def: &'a ToolDef,
}

/// A tool rendered for code mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedStub {
    /// Full TypeScript declaration with JSDoc.
    pub declaration: String,
    /// One-line signature, e.g. `github.create_issue({owner: string, repo: string, title: string, body?: string})`.
    pub signature: String,
    /// First sentence of the description, bounded in length.
    pub summary: String,
}

/// Renders `input`. Never panics, whatever the schema.
pub fn render(input: StubInput<'_>) -> RenderedStub {
    todo!("{}", input.exposed_name)
}
