//! Stubs render from any JSON without panicking, stay within their bounds, and
//! depend on the definition's value only (not on key order or spelling).

use crate::common;

use proptest::prelude::*;
use quiver_proto::{
    StubHash, ToolDef,
    canonical::to_canonical_json,
    stub::{
        MAX_DECLARATION_BYTES, MAX_SIGNATURE_CHARS, MAX_SUMMARY_CHARS, RenderedStub, StubInput,
        render,
    },
};
use serde_json::{Value, json};

use common::{json_value, reinserted, reordered_text, schema};

fn tool(description: String, input_schema: Value, output_schema: Option<Value>) -> ToolDef {
    ToolDef {
        name: "probe".into(),
        title: None,
        description,
        input_schema,
        output_schema,
        annotations: None,
        meta: None,
    }
}

fn render_def(def: &ToolDef) -> RenderedStub {
    render(StubInput {
        server_js: "srv",
        tool_js: "probe",
        exposed_name: "srv__probe",
        def,
    })
}

/// Bounds and shape every rendered stub must have.
fn check_shape(stub: &RenderedStub) -> Result<(), TestCaseError> {
    prop_assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
    prop_assert!(stub.signature.chars().count() <= MAX_SIGNATURE_CHARS);
    prop_assert!(!stub.signature.contains('\n'));
    prop_assert!(stub.summary.chars().count() <= MAX_SUMMARY_CHARS);
    prop_assert!(!stub.summary.contains('\n'));
    // The JSDoc closes exactly once, at its end: descriptions cannot end it early.
    let doc_end = stub.declaration.find("\n */\n").expect("a JSDoc block");
    prop_assert!(
        !stub.declaration[..doc_end].contains("*/"),
        "{}",
        stub.declaration
    );
    let head = "declare namespace tools.srv {\n  function probe(args: ";
    prop_assert!(
        stub.declaration[doc_end..].contains(head),
        "{}",
        stub.declaration
    );
    Ok(())
}

/// The stub of a definition read back from `text`.
fn render_text(text: &str) -> RenderedStub {
    let def: ToolDef = serde_json::from_str(text).expect("a tool definition");
    render_def(&def)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_json_renders(input in json_value(), output in proptest::option::of(json_value()), description in ".{0,200}") {
        let def = tool(description, input, output);
        let stub = render_def(&def);
        check_shape(&stub)?;
        prop_assert_eq!(render_def(&def), stub);
    }

    #[test]
    fn schemas_render_deterministically(input in schema(), output in proptest::option::of(schema())) {
        let def = tool("Probe things. More.".into(), input, output);
        let stub = render_def(&def);
        check_shape(&stub)?;
        prop_assert_eq!(&render_def(&def), &stub);
        prop_assert_eq!(&stub.summary, "Probe things.");
    }

    #[test]
    fn key_order_does_not_change_the_stub(input in schema(), a in schema(), x in schema()) {
        // A root with definitions, as real tools have.
        let root = json!({"type": "object", "$defs": {"a": a}, "properties": {"x": x, "rest": input}, "required": ["x"]});
        let def = tool("Probe.".into(), root, None);
        let stub = render_def(&def);
        let hash = StubHash::of(stub.declaration.as_bytes());
        let value = serde_json::to_value(&def).expect("a definition serializes");

        let reinserted: ToolDef = serde_json::from_value(reinserted(&value)).expect("same definition");
        prop_assert_eq!(&render_def(&reinserted), &stub);

        let canonical = to_canonical_json(&value);
        let from_canonical = render_text(&canonical);
        prop_assert_eq!(StubHash::of(from_canonical.declaration.as_bytes()), hash);
        prop_assert_eq!(&from_canonical, &stub);

        let from_reordered = render_text(&reordered_text(&value));
        prop_assert_eq!(StubHash::of(from_reordered.declaration.as_bytes()), hash);
        prop_assert_eq!(&from_reordered, &stub);
    }

    #[test]
    fn unicode_descriptions_are_cut_at_char_boundaries(description in "[\\PC\\s]{0,400}") {
        let def = tool(description, json!({"type": "object"}), None);
        let stub = render_def(&def);
        check_shape(&stub)?;
    }
}

#[test]
fn deep_nesting_renders() {
    // Far deeper than any bound in the renderer, alternating nesting and combinators.
    let mut schema = json!({"type": "string"});
    for i in 0..300 {
        schema = if i % 2 == 0 {
            json!({"type": "object", "properties": {"n": schema}, "required": ["n"]})
        } else {
            json!({"anyOf": [schema, {"type": "null"}]})
        };
    }
    let stub = render_def(&tool(String::new(), schema.clone(), Some(schema)));
    assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
    assert!(
        stub.declaration.contains("n: unknown"),
        "{}",
        stub.declaration
    );
}

#[test]
fn hostile_schemas_render_within_bounds() {
    let wide: serde_json::Map<String, Value> = (0..20_000)
        .map(|i| {
            (
                format!("property_{i}"),
                json!({"enum": (0..100).collect::<Vec<_>>()}),
            )
        })
        .collect();
    let long_enum =
        json!({"type": "object", "properties": {"e": {"enum": (0..10_000).collect::<Vec<_>>()}}});
    let long_description = json!({"type": "object", "properties": {"d": {"type": "string", "description": "長".repeat(100_000)}}});
    let long_key = json!({"type": "object", "properties": {"k".repeat(100_000): {"type": "string"}}, "required": ["k"]});
    for schema in [
        json!({"type": "object", "properties": wide}),
        long_enum,
        long_description,
        long_key,
    ] {
        let stub = render_def(&tool("*/ ".repeat(10_000), schema, None));
        assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
        assert!(stub.signature.chars().count() <= MAX_SIGNATURE_CHARS);
        let doc_end = stub.declaration.find("\n */\n").expect("a JSDoc block");
        assert!(!stub.declaration[..doc_end].contains("*/"));
    }
}
