//! Deterministic TypeScript stubs of tools, as code mode shows them to a model.
//!
//! A tool's JSON Schema is first lowered to a small type model (bounded in depth,
//! size and `$ref` hops, so hostile schemas degrade to `unknown` instead of blowing
//! up), then printed three ways: a full declaration with JSDoc, a one-line
//! signature and a one-sentence summary. Nothing here may depend on map iteration
//! order, locale or anything but the input: the declaration is hashed.
//!
//! The declaration of one tool stands alone:
//!
//! ```text
//! /**
//!  * Create a new issue in a GitHub repository.
//!  * @param args.owner Repository owner
//!  * @param args.labels Labels to add (maxItems: 10)
//!  * @see tools.call("github__create_issue", args)
//!  */
//! declare namespace tools.github {
//!   function create_issue(args: {
//!     owner: string;
//!     repo: string;
//!     title: string;
//!     body?: string;
//!     labels?: string[];
//!   }): Promise<unknown>;
//! }
//! ```
//!
//! Required properties come first, each group sorted by name (the canonical JSON a
//! manifest ships has no property order to preserve).
//!
//! The parts: prose shortening (`text`), the type model (`type_model`), JSON
//! Schema lowering (`lowering`), TypeScript printing (`typescript`), the one-line
//! signature (`signature`), the full declaration (`declaration`) and the bounds
//! they all keep (`limits`).

mod declaration;
mod limits;
mod lowering;
mod signature;
#[cfg(test)]
mod test_support;
mod text;
mod type_model;
mod typescript;

use self::{declaration::render_declaration, signature::render_signature};
pub use self::{
    limits::{
        MAX_DECLARATION_BYTES, MAX_SCHEMA_DEPTH, MAX_SIGNATURE_CHARS, MAX_SUMMARY_CHARS,
        SIGNATURE_OPTIONAL_BUDGET,
    },
    text::first_sentence,
};
use crate::{
    naming::{is_safe_js_identifier, js_identifier},
    tool::ToolDef,
};

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
///
/// Identifiers that are not safe JavaScript identifiers are passed through
/// [`js_identifier`] first, so the declaration is always valid TypeScript. The
/// promise is typed from `outputSchema` when the tool declares one (the shape of
/// its `structuredContent`), else `Promise<unknown>`. A declaration over
/// [`MAX_DECLARATION_BYTES`] is rendered again with less detail (shallower types,
/// fewer docs, a note saying so) until it fits.
pub fn render(input: StubInput<'_>) -> RenderedStub {
    let server = safe_identifier(input.server_js);
    let tool = safe_identifier(input.tool_js);
    RenderedStub {
        declaration: render_declaration(&server, &tool, input.exposed_name, input.def),
        signature: render_signature(&server, &tool, &input.def.input_schema),
        summary: first_sentence(&input.def.description, MAX_SUMMARY_CHARS),
    }
}

fn safe_identifier(name: &str) -> String {
    if is_safe_js_identifier(name) {
        name.to_string()
    } else {
        js_identifier(name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Builds the definition by hand: `test_support` renders through this file,
    // so this file's tests must not lean on it.
    #[test]
    fn unsafe_identifiers_are_fixed() {
        let def = ToolDef {
            name: "t".into(),
            title: None,
            description: "x".into(),
            input_schema: json!({}),
            output_schema: None,
            annotations: None,
            meta: None,
        };
        let stub = render(StubInput {
            server_js: "my-server",
            tool_js: "delete",
            exposed_name: "a",
            def: &def,
        });
        assert!(
            stub.declaration
                .contains("declare namespace tools.my_server {\n  function delete_(args: ")
        );
        assert!(stub.signature.starts_with("my_server.delete_("));
    }
}
