//! Printing the type model as TypeScript: on one line (`flat`) or with object
//! literals broken over lines when they do not fit (`block`).

use super::type_model::{Object, Prop, Ty};
use crate::canonical::write_string;

/// Type literals longer than this are broken over several lines.
const LINE_WIDTH: usize = 100;

/// A property key: bare when it is an identifier name, else a JSON string.
pub(super) fn property_key(name: &str) -> String {
    let mut bytes = name.bytes();
    let identifier = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b'$')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    if identifier {
        name.to_string()
    } else {
        let mut out = String::new();
        write_string(&mut out, name);
        out
    }
}

pub(super) fn needs_parens_in_array(ty: &Ty) -> bool {
    matches!(ty, Ty::Union(_) | Ty::Intersection(_))
}

/// Single-line TypeScript.
pub(super) fn flat(ty: &Ty) -> String {
    let mut out = String::new();
    write_flat(&mut out, ty);
    out
}

pub(super) fn write_flat(out: &mut String, ty: &Ty) {
    match ty {
        Ty::Unknown => out.push_str("unknown"),
        Ty::Never => out.push_str("never"),
        Ty::Null => out.push_str("null"),
        Ty::Boolean => out.push_str("boolean"),
        Ty::Number => out.push_str("number"),
        Ty::String => out.push_str("string"),
        Ty::Literal(text) => out.push_str(text),
        Ty::Array(inner) => {
            let parens = needs_parens_in_array(inner);
            if parens {
                out.push('(');
            }
            write_flat(out, inner);
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
                write_flat(out, item);
            }
            out.push(']');
        }
        Ty::Object(object) => write_flat_object(out, object),
        Ty::Union(members) => {
            for (i, member) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                write_flat(out, member);
            }
        }
        Ty::Intersection(members) => {
            for (i, member) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(" & ");
                }
                let parens = matches!(member, Ty::Union(_));
                if parens {
                    out.push('(');
                }
                write_flat(out, member);
                if parens {
                    out.push(')');
                }
            }
        }
    }
}

fn write_flat_object(out: &mut String, object: &Object) {
    if object.props.is_empty() && object.omitted == 0 {
        match &object.index {
            None => out.push_str("{}"),
            Some(value) => {
                out.push_str("Record<string, ");
                write_flat(out, value);
                out.push('>');
            }
        }
        return;
    }
    out.push_str("{ ");
    for (i, prop) in object.props.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        write_flat_prop(out, prop);
    }
    if let Some(value) = &object.index {
        if !object.props.is_empty() {
            out.push_str("; ");
        }
        out.push_str("[key: string]: ");
        write_flat(out, value);
    }
    if object.omitted > 0 {
        out.push_str(&format!(" /* {} more */", object.omitted));
    }
    out.push_str(" }");
}

fn write_flat_prop(out: &mut String, prop: &Prop) {
    out.push_str(&property_key(&prop.name));
    if prop.optional {
        out.push('?');
    }
    out.push_str(": ");
    write_flat(out, &prop.ty);
}

/// TypeScript that breaks object literals over lines when they do not fit.
/// `indent` is the current nesting indentation, `column` where `ty` starts.
pub(super) fn block(ty: &Ty, indent: usize, column: usize) -> String {
    let single = flat(ty);
    if column + single.chars().count() <= LINE_WIDTH {
        return single;
    }
    match ty {
        Ty::Object(object) if !object.props.is_empty() => block_object(object, indent),
        Ty::Array(inner) if matches!(**inner, Ty::Object(_)) => {
            format!("{}[]", block(inner, indent, column))
        }
        Ty::Union(members) | Ty::Intersection(members) => {
            let separator = if matches!(ty, Ty::Union(_)) {
                " | "
            } else {
                " & "
            };
            let mut out = String::new();
            for (i, member) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                let parens = separator == " & " && matches!(member, Ty::Union(_));
                if parens {
                    out.push('(');
                }
                let start = column + last_line_chars(&out);
                out.push_str(&block(member, indent, start));
                if parens {
                    out.push(')');
                }
            }
            out
        }
        _ => single,
    }
}

fn block_object(object: &Object, indent: usize) -> String {
    let inner = indent + 2;
    let pad = " ".repeat(inner);
    let mut out = String::from("{\n");
    for prop in &object.props {
        let head = format!(
            "{pad}{}{}: ",
            property_key(&prop.name),
            if prop.optional { "?" } else { "" }
        );
        let column = head.chars().count();
        out.push_str(&head);
        out.push_str(&block(&prop.ty, inner, column));
        out.push_str(";\n");
    }
    if let Some(value) = &object.index {
        out.push_str(&format!("{pad}[key: string]: {};", flat(value)));
        if object.omitted > 0 {
            out.push_str(&format!(" // {} more properties", object.omitted));
        }
        out.push('\n');
    }
    out.push_str(&" ".repeat(indent));
    out.push('}');
    out
}

pub(super) fn last_line_chars(text: &str) -> usize {
    text.rsplit('\n')
        .next()
        .map_or(0, |line| line.chars().count())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn long_objects_break_over_lines() {
        let properties: Map<String, Value> = (0..8)
            .map(|i| {
                (
                    format!("property_number_{i}"),
                    json!({"type": "object", "properties": {"inner": {"type": "string"}}}),
                )
            })
            .collect();
        let stub = rendered(json!({"type": "object", "properties": properties}));
        assert!(
            stub.declaration
                .contains("  function run(args: {\n    property_number_0?: { inner?: string };\n")
        );
        assert!(stub.declaration.contains("\n  }): Promise<unknown>;\n}\n"));
    }
}
