//! The one-line signature of a tool for listings: the arguments and one level
//! below, lossy on purpose (`{…}`, `a|b|…`), bounded in length.

use serde_json::Value;

use super::{
    limits::{MAX_SIGNATURE_CHARS, SIGNATURE_OPTIONAL_BUDGET},
    lowering::Lowering,
    text::truncate_chars,
    type_model::Ty,
    typescript::{needs_parens_in_array, property_key, write_flat},
};

/// Union members shown in a signature before `|…`.
const SIGNATURE_UNION_MEMBERS: usize = 3;

/// One-line, lossy form for listings: objects below the arguments are `{…}`,
/// long unions `a|b|…`.
fn write_compact(out: &mut String, ty: &Ty, depth: usize) {
    if out.len() > 4 * MAX_SIGNATURE_CHARS {
        return;
    }
    match ty {
        Ty::Object(object) if depth > 0 => {
            let empty = object.props.is_empty() && object.index.is_none();
            out.push_str(if empty { "{}" } else { "{…}" });
        }
        Ty::Object(object) => {
            out.push('{');
            let mut skipped_optional = false;
            for (i, prop) in object.props.iter().enumerate() {
                let mut piece = String::new();
                if i > 0 {
                    piece.push_str(", ");
                }
                piece.push_str(&property_key(&prop.name));
                if prop.optional {
                    piece.push('?');
                }
                piece.push_str(": ");
                write_compact(&mut piece, &prop.ty, depth + 1);
                // Required arguments always show; optional ones only while the
                // line stays short (describe shows them all).
                if prop.optional
                    && out.chars().count() + piece.chars().count() > SIGNATURE_OPTIONAL_BUDGET
                {
                    skipped_optional = true;
                    break;
                }
                out.push_str(&piece);
                if out.len() > 4 * MAX_SIGNATURE_CHARS {
                    return;
                }
            }
            if object.omitted > 0 || skipped_optional {
                out.push_str(if out.ends_with('{') { "…" } else { ", …" });
            } else if let Some(value) = &object.index {
                if !object.props.is_empty() {
                    out.push_str(", ");
                }
                if **value == Ty::Unknown {
                    out.push('…');
                } else {
                    out.push_str("[key: string]: ");
                    write_compact(out, value, depth + 1);
                }
            }
            out.push('}');
        }
        Ty::Array(inner) => {
            let parens = needs_parens_in_array(inner);
            if parens {
                out.push('(');
            }
            write_compact(out, inner, depth);
            if parens {
                out.push(')');
            }
            out.push_str("[]");
        }
        Ty::Tuple(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_compact(out, item, depth);
            }
            out.push(']');
        }
        Ty::Union(members) | Ty::Intersection(members) => {
            let union = matches!(ty, Ty::Union(_));
            let shown = if union && members.len() > SIGNATURE_UNION_MEMBERS {
                2
            } else {
                members.len()
            };
            for (i, member) in members.iter().take(shown).enumerate() {
                if i > 0 {
                    out.push(if union { '|' } else { '&' });
                }
                let parens = !union && matches!(member, Ty::Union(_));
                if parens {
                    out.push('(');
                }
                write_compact(out, member, depth);
                if parens {
                    out.push(')');
                }
            }
            if shown < members.len() {
                out.push_str("|…");
            }
        }
        other => write_flat(out, other),
    }
}

pub(crate) fn render_signature(server: &str, tool: &str, schema: &Value) -> String {
    // Only the arguments and one level below are shown; lower no deeper than that.
    let ty = Lowering::new(schema, 3, 0).lower(schema, 0, 0);
    let mut out = format!("{server}.{tool}(");
    match ty {
        Ty::Unknown => {}
        Ty::Object(object)
            if object.props.is_empty() && object.omitted == 0 && object.index.is_none() => {}
        ty => write_compact(&mut out, &ty, 0),
    }
    out.push(')');
    truncate_chars(&out, MAX_SIGNATURE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn signatures_are_compact() {
        let schema = json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "mode": {"enum": ["a", "b", "c", "d"]},
                "two": {"enum": ["x", "y"]},
                "nested": {"type": "object", "properties": {"deep": {"type": "string"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "labels": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["owner"]
        });
        assert_eq!(
            rendered(schema).signature,
            r#"srv.run({owner: string, labels?: string[], list?: {…}[], mode?: "a"|"b"|…, …})"#
        );
        assert_eq!(
            rendered(json!({"type": "object", "properties": {}})).signature,
            "srv.run()"
        );
        // Only optional arguments, all too long to show: no dangling comma.
        let long = "x".repeat(120);
        assert_eq!(
            rendered(json!({"type": "object", "properties": {long: {"type": "string"}}})).signature,
            "srv.run({…})"
        );
    }

    #[test]
    fn signature_is_bounded_at_a_char_boundary() {
        let properties: Map<String, Value> = (0..60)
            .map(|i| (format!("参数{i}"), json!({"type": "string"})))
            .collect();
        let required: Vec<String> = properties.keys().cloned().collect();
        let signature =
            rendered(json!({"type": "object", "properties": properties, "required": required}))
                .signature;
        let chars = signature.chars().count();
        assert!(
            chars <= MAX_SIGNATURE_CHARS && chars > MAX_SIGNATURE_CHARS - 5,
            "{chars}"
        );
        assert!(signature.ends_with('…'));
    }
}
