//! The full declaration of one tool: JSDoc (description, hints, `@param` lines)
//! and a `declare namespace` block, re-rendered with less detail until it fits
//! [`MAX_DECLARATION_BYTES`]. Its bytes are hashed, so it must be deterministic.

use std::collections::HashSet;

use serde_json::Value;

use super::{
    limits::{MAX_DECLARATION_BYTES, MAX_SCHEMA_DEPTH},
    lowering::Lowering,
    text::truncate_chars,
    type_model::{Object, Ty},
    typescript::{block, last_line_chars, property_key},
};
use crate::{canonical::write_string, tool::ToolDef};

/// Longest tool description kept.
const MAX_DESCRIPTION_CHARS: usize = 4_000;
/// Deepest indentation kept in a description line.
const MAX_DESCRIPTION_INDENT: usize = 8;

// The declaration.

/// How much of a schema a declaration shows; tried in order until one fits.
#[derive(Clone, Copy)]
struct Detail {
    max_depth: usize,
    docs_depth: usize,
    description_chars: usize,
    note: Option<&'static str>,
}

const DETAILS: [Detail; 4] = [
    Detail {
        max_depth: MAX_SCHEMA_DEPTH,
        docs_depth: usize::MAX,
        description_chars: MAX_DESCRIPTION_CHARS,
        note: None,
    },
    Detail {
        max_depth: 3,
        docs_depth: 1,
        description_chars: MAX_DESCRIPTION_CHARS,
        note: Some(
            "(Schema shortened to fit: deeper types are `unknown`, nested properties undocumented.)",
        ),
    },
    Detail {
        max_depth: 1,
        docs_depth: 0,
        description_chars: 1_000,
        note: Some(
            "(Schema shortened to fit: nested types are `unknown`, properties undocumented.)",
        ),
    },
    // Depth 0: the arguments are not lowered at all.
    Detail {
        max_depth: 0,
        docs_depth: 0,
        description_chars: 1_000,
        note: Some("(Schema too large to show: arguments are typed as `Record<string, unknown>`.)"),
    },
];

const TRUNCATION_MARKER: &str = "\n// …stub truncated: too large\n";

pub(crate) fn render_declaration(
    server: &str,
    tool: &str,
    exposed_name: &str,
    def: &ToolDef,
) -> String {
    let mut declaration = String::new();
    for detail in DETAILS {
        declaration = declaration_at(server, tool, exposed_name, def, detail);
        if declaration.len() <= MAX_DECLARATION_BYTES {
            return declaration;
        }
    }
    // Only absurd identifiers get here; cut at a character boundary.
    let mut end = MAX_DECLARATION_BYTES - TRUNCATION_MARKER.len();
    while !declaration.is_char_boundary(end) {
        end -= 1;
    }
    declaration.truncate(end);
    declaration.push_str(TRUNCATION_MARKER);
    declaration
}

fn declaration_at(
    server: &str,
    tool: &str,
    exposed_name: &str,
    def: &ToolDef,
    detail: Detail,
) -> String {
    let schema = &def.input_schema;
    let args = match detail.max_depth {
        0 => Ty::Unknown,
        depth => Lowering::new(schema, depth, detail.docs_depth).lower(schema, 0, 0),
    };
    // MCP arguments are always an object.
    let args = if args == Ty::Unknown {
        Ty::Object(Object::record(Ty::Unknown))
    } else {
        args
    };
    let result = match &def.output_schema {
        Some(output) if detail.max_depth > 0 => {
            Lowering::new(output, detail.max_depth, 0).lower(output, 0, 0)
        }
        _ => Ty::Unknown,
    };

    let mut doc: Vec<String> = Vec::new();
    let description = if def.description.trim().is_empty() {
        def.title.as_deref().unwrap_or("")
    } else {
        def.description.as_str()
    };
    doc.extend(description_lines(description, detail.description_chars));
    if let Some(hints) = annotation_hints(def.annotations.as_ref()) {
        doc.push(hints);
    }
    if let Some(note) = detail.note {
        doc.push(note.to_string());
    }
    let mut seen = HashSet::new();
    param_docs(&args, "args", &mut doc, &mut seen);
    let mut exposed = String::new();
    write_string(&mut exposed, exposed_name);
    doc.push(format!("@see tools.call({exposed}, args)"));

    let mut out = String::from("/**\n");
    for line in &doc {
        let line = line.replace("*/", "*\\/");
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(" */\n");
    out.push_str(&format!("declare namespace tools.{server} {{\n"));
    let head = format!("  function {tool}(args: ");
    out.push_str(&head);
    let args_text = block(&args, 2, head.chars().count());
    out.push_str(&args_text);
    out.push_str("): Promise<");
    let column = last_line_chars(&out);
    out.push_str(&block(&result, 2, column));
    out.push_str(">;\n}\n");
    out
}

/// Description split into JSDoc lines: line breaks kept, docstring indentation
/// removed (common indent of the lines after the first, then at most
/// [`MAX_DESCRIPTION_INDENT`] spaces), runs of blank lines collapsed, trailing
/// spaces dropped.
fn description_lines(text: &str, max_chars: usize) -> Vec<String> {
    let text = truncate_chars(text.trim(), max_chars);
    let raw: Vec<String> = text
        .split(['\n', '\r', '\u{2028}', '\u{2029}'])
        .map(|line| line.replace('\t', "    "))
        .collect();
    let indent_of = |line: &str| line.len() - line.trim_start_matches(' ').len();
    let common = raw
        .iter()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .map(|line| indent_of(line))
        .min()
        .unwrap_or(0);
    let mut lines: Vec<String> = Vec::new();
    for (i, line) in raw.iter().enumerate() {
        let line = line.trim_end();
        let line = if i == 0 {
            line
        } else {
            line.get(common..).unwrap_or("")
        };
        let indent = indent_of(line).min(MAX_DESCRIPTION_INDENT);
        let line = format!("{}{}", " ".repeat(indent), line.trim_start_matches(' '));
        if line.is_empty() && lines.last().is_none_or(|last| last.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    while lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    lines
}

/// `Hints: read-only, idempotent` from MCP tool annotations, when any is set.
fn annotation_hints(annotations: Option<&Value>) -> Option<String> {
    let annotations = annotations?.as_object()?;
    let hints: Vec<&str> = [
        ("readOnlyHint", "read-only"),
        ("destructiveHint", "destructive"),
        ("idempotentHint", "idempotent"),
        ("openWorldHint", "open-world"),
    ]
    .into_iter()
    .filter(|(key, _)| annotations.get(*key) == Some(&Value::Bool(true)))
    .map(|(_, label)| label)
    .collect();
    (!hints.is_empty()).then(|| format!("Hints: {}.", hints.join(", ")))
}

/// `@param args.a.b[].c description` lines for every documented property.
fn param_docs(ty: &Ty, path: &str, out: &mut Vec<String>, seen: &mut HashSet<String>) {
    match ty {
        Ty::Object(object) => {
            for prop in &object.props {
                let key = property_key(&prop.name);
                let child = if key.starts_with('"') {
                    format!("{path}[{key}]")
                } else {
                    format!("{path}.{key}")
                };
                if !prop.doc.is_empty() {
                    let line = format!("@param {child} {}", prop.doc);
                    if seen.insert(line.clone()) {
                        out.push(line);
                    }
                }
                param_docs(&prop.ty, &child, out, seen);
            }
        }
        Ty::Array(inner) => param_docs(inner, &format!("{path}[]"), out, seen),
        Ty::Tuple(items) => {
            for (i, item) in items.iter().enumerate() {
                param_docs(item, &format!("{path}[{i}]"), out, seen);
            }
        }
        Ty::Union(members) | Ty::Intersection(members) => {
            for member in members {
                param_docs(member, path, out, seen);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{super::test_support::*, *};

    #[test]
    fn property_docs_carry_notes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How  many\nresults", "default": 10, "minimum": 1, "maximum": 50},
                "when": {"type": "string", "format": "date-time"},
                "plain": {"type": "string"},
                "evil": {"type": "string", "description": "ends the comment */ early"}
            },
            "required": ["count"]
        });
        let stub = rendered(schema);
        let declaration = &stub.declaration;
        assert!(
            declaration
                .contains(" * @param args.count How many results (default: 10, min: 1, max: 50)\n")
        );
        assert!(declaration.contains(" * @param args.when (format: date-time)\n"));
        assert!(!declaration.contains("args.plain"));
        assert!(declaration.contains("ends the comment *\\/ early"));
        assert_eq!(declaration.matches("*/").count(), 1);
    }

    #[test]
    fn declaration_shape() {
        let def = ToolDef {
            annotations: Some(json!({"readOnlyHint": true, "openWorldHint": false})),
            meta: None,
            ..tool(
                "Echo text back.\n\n\n  Second paragraph.  ",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            )
        };
        let stub = render(StubInput {
            server_js: "demo",
            tool_js: "echo",
            exposed_name: "demo__echo",
            def: &def,
        });
        assert_eq!(
            stub.declaration,
            "/**\n * Echo text back.\n *\n * Second paragraph.\n * Hints: read-only.\n \
             * @see tools.call(\"demo__echo\", args)\n */\ndeclare namespace tools.demo {\n  \
             function echo(args: { text: string }): Promise<unknown>;\n}\n"
        );
        assert_eq!(stub.signature, "demo.echo({text: string})");
        assert_eq!(stub.summary, "Echo text back.");
    }

    #[test]
    fn output_schema_types_the_result() {
        let def = ToolDef {
            output_schema: Some(
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
            ),
            ..tool("", json!({"type": "object"}))
        };
        let stub = render(StubInput {
            server_js: "s",
            tool_js: "t",
            exposed_name: "s__t",
            def: &def,
        });
        assert!(
            stub.declaration
                .contains("function t(args: Record<string, unknown>): Promise<{ ok: boolean }>;")
        );
        assert_eq!(stub.signature, "s.t({…})");
        assert_eq!(stub.summary, "");
    }

    #[test]
    fn huge_schemas_are_shortened_to_fit() {
        let properties: Map<String, Value> = (0..5_000)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "string", "description": "x".repeat(300)}),
                )
            })
            .collect();
        let stub = rendered(json!({"type": "object", "properties": properties}));
        assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
        assert!(stub.declaration.contains("(Schema"), "{}", stub.declaration);
        assert!(stub.declaration.ends_with("}\n"));

        let long_name = "n".repeat(40_000);
        let def = tool("x", json!({}));
        let stub = render(StubInput {
            server_js: &long_name,
            tool_js: "t",
            exposed_name: "e",
            def: &def,
        });
        assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
        assert!(stub.declaration.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn docstring_indentation_is_removed() {
        let text = "Fetch a trial.\n\n        Args:\n            id: the NCT id\n\t\t\t\tdeep\n        Returns: */ text  ";
        assert_eq!(
            description_lines(text, MAX_DESCRIPTION_CHARS),
            [
                "Fetch a trial.",
                "",
                "Args:",
                "    id: the NCT id",
                "        deep",
                "Returns: */ text"
            ]
        );
    }
}
