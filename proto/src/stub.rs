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

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::{
    canonical::{to_canonical_json, write_string},
    naming::{is_safe_js_identifier, js_identifier},
    tool::ToolDef,
};

/// Deepest schema nesting (objects, arrays) rendered before types become `unknown`.
pub const MAX_SCHEMA_DEPTH: usize = 8;
/// Largest declaration, in bytes; bigger schemas are shown shortened.
pub const MAX_DECLARATION_BYTES: usize = 16 * 1024;
/// Longest signature, in characters.
pub const MAX_SIGNATURE_CHARS: usize = 200;
/// Longest summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 90;
/// Optional arguments are shown in a signature only while it stays within this many characters.
pub const SIGNATURE_OPTIONAL_BUDGET: usize = 80;

/// Schema nodes lowered per type, at most.
const MAX_NODES: usize = 2_000;
/// `$ref`/`anyOf`/`allOf` hops between two levels of nesting, at most.
const MAX_HOPS: usize = 16;
/// Properties shown per object; the rest fall under an index signature.
const MAX_PROPERTIES: usize = 100;
/// Longest property name shown; longer ones fall under an index signature.
const MAX_PROPERTY_NAME_CHARS: usize = 200;
/// Members of an `anyOf`/`oneOf`/`allOf`/`type` list considered.
const MAX_UNION: usize = 32;
/// Values of an `enum` shown as literals; more degrade to their base types.
const MAX_ENUM: usize = 64;
/// Longest literal type (JSON text of a `const`/`enum` value).
const MAX_LITERAL_CHARS: usize = 200;
/// Longest tool description kept.
const MAX_DESCRIPTION_CHARS: usize = 4_000;
/// Longest property description kept.
const MAX_PROPERTY_DOC_CHARS: usize = 1_000;
/// Longest value in a property note (`default: …`).
const MAX_NOTE_CHARS: usize = 80;
/// Deepest indentation kept in a description line.
const MAX_DESCRIPTION_INDENT: usize = 8;
/// Type literals longer than this are broken over several lines.
const LINE_WIDTH: usize = 100;
/// Union members shown in a signature before `|…`.
const SIGNATURE_UNION_MEMBERS: usize = 3;

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

/// The first sentence of `text` (up to `. `, `。` or a line break), whitespace
/// collapsed, at most `max_chars` characters (cut at a character boundary, `…`
/// appended). Empty text gives an empty string.
///
/// ```
/// use quiver_proto::stub::first_sentence;
/// assert_eq!(first_sentence("Get the  weather. Uses NOAA.", 120), "Get the weather.");
/// assert_eq!(first_sentence("获取天气。然后返回", 120), "获取天气。");
/// assert_eq!(first_sentence("abcdef", 4), "abc…");
/// ```
pub fn first_sentence(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let mut end = text.len();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => {
                end = i;
                break;
            }
            '。' => {
                end = i + c.len_utf8();
                break;
            }
            '.' if chars.peek().is_some_and(|&(_, next)| next.is_whitespace()) => {
                end = i + 1;
                break;
            }
            _ => {}
        }
    }
    truncate_chars(&collapse_whitespace(&text[..end]), max_chars)
}

fn safe_identifier(name: &str) -> String {
    if is_safe_js_identifier(name) {
        name.to_string()
    } else {
        js_identifier(name)
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max_chars` characters, ending in `…` when cut.
fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            format!("{}…", text[..end].trim_end())
        }
    }
}

// ---------------------------------------------------------------------------
// The type model.

/// A TypeScript type, as far as a stub needs one.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Unknown,
    Never,
    Null,
    Boolean,
    Number,
    String,
    /// JSON text of a value; valid TypeScript literal type syntax.
    Literal(String),
    Array(Box<Ty>),
    Tuple(Vec<Ty>),
    Object(Object),
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Object {
    /// Required properties first, each group sorted by name.
    props: Vec<Prop>,
    /// `[key: string]: T`.
    index: Option<Box<Ty>>,
    /// Properties left out (too many, or names too long); implies `index`.
    omitted: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Prop {
    name: String,
    optional: bool,
    ty: Ty,
    /// Description and notes for JSDoc (may be empty).
    doc: String,
}

impl Object {
    fn record(value: Ty) -> Object {
        Object {
            props: Vec::new(),
            index: Some(Box::new(value)),
            omitted: 0,
        }
    }

    fn sort(&mut self) {
        self.props
            .sort_by(|a, b| (a.optional, &a.name).cmp(&(b.optional, &b.name)));
    }
}

/// Flattened, de-duplicated union; `unknown` absorbs everything, `never` vanishes.
fn union(members: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::new();
    let mut pending = members;
    pending.reverse();
    while let Some(member) = pending.pop() {
        match member {
            Ty::Unknown => return Ty::Unknown,
            Ty::Never => {}
            Ty::Union(inner) => pending.extend(inner.into_iter().rev()),
            other => {
                if !out.contains(&other) {
                    out.push(other);
                }
            }
        }
    }
    match out.len() {
        0 => Ty::Never,
        1 => out.pop().unwrap_or(Ty::Never),
        _ => Ty::Union(out),
    }
}

/// Flattened intersection; `unknown` members vanish, plain objects are merged.
fn intersection(members: Vec<Ty>) -> Ty {
    let mut out: Vec<Ty> = Vec::new();
    let mut pending = members;
    pending.reverse();
    while let Some(member) = pending.pop() {
        match member {
            Ty::Unknown => {}
            Ty::Never => return Ty::Never,
            Ty::Intersection(inner) => pending.extend(inner.into_iter().rev()),
            other => {
                if !out.contains(&other) {
                    out.push(other);
                }
            }
        }
    }
    let mergeable = out.len() > 1
        && out
            .iter()
            .all(|t| matches!(t, Ty::Object(o) if o.index.is_none() && o.omitted == 0));
    if mergeable {
        let mut merged = Object::default();
        for member in out {
            let Ty::Object(object) = member else { continue };
            for prop in object.props {
                match merged.props.iter_mut().find(|p| p.name == prop.name) {
                    Some(existing) => {
                        existing.optional &= prop.optional;
                        if existing.ty != prop.ty {
                            let ty = std::mem::replace(&mut existing.ty, Ty::Unknown);
                            existing.ty = intersection(vec![ty, prop.ty]);
                        }
                        if existing.doc.is_empty() {
                            existing.doc = prop.doc;
                        }
                    }
                    None => merged.props.push(prop),
                }
            }
        }
        merged.sort();
        return Ty::Object(merged);
    }
    match out.len() {
        0 => Ty::Unknown,
        1 => out.pop().unwrap_or(Ty::Unknown),
        _ => Ty::Intersection(out),
    }
}

/// The type of a literal JSON value; over-long literals degrade to their base type.
fn literal(value: &Value) -> Ty {
    let text = to_canonical_json(value);
    if text.chars().count() <= MAX_LITERAL_CHARS {
        Ty::Literal(text)
    } else {
        base_type(value)
    }
}

fn base_type(value: &Value) -> Ty {
    match value {
        Value::Null => Ty::Null,
        Value::Bool(_) => Ty::Boolean,
        Value::Number(_) => Ty::Number,
        Value::String(_) => Ty::String,
        Value::Array(_) => Ty::Array(Box::new(Ty::Unknown)),
        Value::Object(_) => Ty::Object(Object::record(Ty::Unknown)),
    }
}

// ---------------------------------------------------------------------------
// JSON Schema -> type model.

/// Lowers schemas under one root (the root `$ref`s resolve against).
struct Lowering<'a> {
    root: &'a Value,
    max_depth: usize,
    /// Properties of objects nested less deeply than this keep their docs.
    docs_depth: usize,
    nodes: usize,
    /// Schemas being lowered, outermost first: a `$ref` back into one is a cycle.
    path: Vec<&'a Value>,
}

impl<'a> Lowering<'a> {
    fn new(root: &'a Value, max_depth: usize, docs_depth: usize) -> Self {
        Lowering {
            root,
            max_depth,
            docs_depth,
            nodes: 0,
            path: Vec::new(),
        }
    }

    /// `depth` counts objects and arrays; `hops` counts `$ref`s and combinators
    /// since the last of those.
    fn lower(&mut self, schema: &'a Value, depth: usize, hops: usize) -> Ty {
        if depth > self.max_depth || hops > MAX_HOPS || self.nodes >= MAX_NODES {
            return Ty::Unknown;
        }
        self.nodes += 1;
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(false) => return Ty::Never,
            _ => return Ty::Unknown,
        };
        self.path.push(schema);
        let ty = self.lower_object_schema(map, depth, hops);
        self.path.pop();
        ty
    }

    fn lower_object_schema(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
        hops: usize,
    ) -> Ty {
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.follow(reference, depth, hops);
        }
        let mut parts = Vec::new();
        if let Some(own) = self.own_type(map, depth) {
            parts.push(own);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                parts.push(if branches.is_empty() || branches.len() > MAX_UNION {
                    Ty::Unknown
                } else {
                    union(
                        branches
                            .iter()
                            .map(|b| self.lower(b, depth, hops + 1))
                            .collect(),
                    )
                });
            }
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            // Leaving members out only widens the type.
            let members = all
                .iter()
                .take(MAX_UNION)
                .map(|s| self.lower(s, depth, hops + 1))
                .collect();
            parts.push(intersection(members));
        }
        let ty = intersection(parts);
        if map.get("nullable") == Some(&Value::Bool(true)) {
            union(vec![ty, Ty::Null])
        } else {
            ty
        }
    }

    fn follow(&mut self, reference: &str, depth: usize, hops: usize) -> Ty {
        match resolve(self.root, reference) {
            Some(target) if !self.path.iter().any(|outer| std::ptr::eq(*outer, target)) => {
                self.lower(target, depth, hops + 1)
            }
            // Unresolvable, or recursive: the type would be infinite.
            _ => Ty::Unknown,
        }
    }

    /// The type from `const`, `enum` or `type` (or inferred from object/array keywords).
    fn own_type(&mut self, map: &'a Map<String, Value>, depth: usize) -> Option<Ty> {
        if let Some(value) = map.get("const") {
            return Some(literal(value));
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            return Some(if values.len() > MAX_ENUM {
                union(values.iter().map(base_type).collect())
            } else {
                union(values.iter().map(literal).collect())
            });
        }
        match map.get("type") {
            Some(Value::String(name)) => Some(self.typed(name, map, depth)),
            Some(Value::Array(names)) if names.len() <= MAX_UNION => Some(union(
                names
                    .iter()
                    .map(|name| match name {
                        Value::String(name) => self.typed(name, map, depth),
                        _ => Ty::Unknown,
                    })
                    .collect(),
            )),
            Some(_) => Some(Ty::Unknown),
            None => {
                let objectish = [
                    "properties",
                    "additionalProperties",
                    "required",
                    "patternProperties",
                ];
                if objectish.iter().any(|k| map.contains_key(*k)) {
                    Some(self.object(map, depth))
                } else if map.contains_key("items") || map.contains_key("prefixItems") {
                    Some(self.array(map, depth))
                } else {
                    None
                }
            }
        }
    }

    fn typed(&mut self, name: &str, map: &'a Map<String, Value>, depth: usize) -> Ty {
        match name {
            "string" => Ty::String,
            "number" | "integer" => Ty::Number,
            "boolean" => Ty::Boolean,
            "null" => Ty::Null,
            "array" => self.array(map, depth),
            "object" => self.object(map, depth),
            _ => Ty::Unknown,
        }
    }

    fn array(&mut self, map: &'a Map<String, Value>, depth: usize) -> Ty {
        let tuple = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(items)), _) | (None, Some(Value::Array(items))) => Some(items),
            _ => None,
        };
        match tuple {
            Some(items) if items.len() <= MAX_UNION => {
                Ty::Tuple(items.iter().map(|s| self.lower(s, depth + 1, 0)).collect())
            }
            Some(_) => Ty::Array(Box::new(Ty::Unknown)),
            None => match map.get("items") {
                Some(items) => Ty::Array(Box::new(self.lower(items, depth + 1, 0))),
                None => Ty::Array(Box::new(Ty::Unknown)),
            },
        }
    }

    fn object(&mut self, map: &'a Map<String, Value>, depth: usize) -> Ty {
        let mut required: Vec<&'a str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        required.sort_unstable();
        required.dedup();
        let properties = match map.get("properties") {
            Some(Value::Object(properties)) => Some(properties),
            _ => None,
        };
        let mut entries: Vec<(&'a str, Option<&'a Value>)> = properties
            .into_iter()
            .flatten()
            .map(|(name, schema)| (name.as_str(), Some(schema)))
            .collect();
        // Required names the schema does not describe still must be present.
        for name in &required {
            if !properties.is_some_and(|p| p.contains_key(*name)) {
                entries.push((name, None));
            }
        }
        entries.sort_by(|a, b| {
            let a_optional = required.binary_search(&a.0).is_err();
            let b_optional = required.binary_search(&b.0).is_err();
            (a_optional, a.0).cmp(&(b_optional, b.0))
        });

        let mut object = Object::default();
        for (name, schema) in entries {
            if object.props.len() >= MAX_PROPERTIES
                || name.chars().count() > MAX_PROPERTY_NAME_CHARS
            {
                object.omitted += 1;
                continue;
            }
            let (ty, doc) = match schema {
                Some(schema) => {
                    let ty = self.lower(schema, depth + 1, 0);
                    let doc = if depth < self.docs_depth {
                        self.property_doc(schema)
                    } else {
                        String::new()
                    };
                    (ty, doc)
                }
                None => (Ty::Unknown, String::new()),
            };
            let optional = required.binary_search(&name).is_err();
            object.props.push(Prop {
                name: name.to_string(),
                optional,
                ty,
                doc,
            });
        }

        if object.omitted > 0 {
            object.index = Some(Box::new(Ty::Unknown));
        } else if object.props.is_empty() {
            object.index = match map.get("additionalProperties") {
                Some(Value::Bool(false)) => None,
                Some(extra @ Value::Object(_)) => Some(Box::new(self.lower(extra, depth + 1, 0))),
                _ if properties.is_none() || map.contains_key("patternProperties") => {
                    Some(Box::new(Ty::Unknown))
                }
                _ => None,
            };
        }
        Ty::Object(object)
    }

    /// Description plus compact notes (`default: 5, min: 1`) of a property schema.
    fn property_doc(&self, schema: &'a Value) -> String {
        let Value::Object(map) = schema else {
            return String::new();
        };
        let description = match map.get("description") {
            Some(Value::String(text)) => Some(text.as_str()),
            _ => match map.get("$ref") {
                Some(Value::String(reference)) => resolve(self.root, reference)
                    .and_then(|t| t.get("description"))
                    .and_then(Value::as_str),
                _ => None,
            },
        };
        let mut doc = truncate_chars(
            &collapse_whitespace(description.unwrap_or("")),
            MAX_PROPERTY_DOC_CHARS,
        );
        let notes = notes(map);
        if !notes.is_empty() {
            if !doc.is_empty() {
                doc.push(' ');
            }
            doc.push('(');
            doc.push_str(&notes.join(", "));
            doc.push(')');
        }
        doc
    }
}

/// Constraints and hints worth a model's attention, in a fixed order.
fn notes(map: &Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    let json = |value: &Value| truncate_chars(&to_canonical_json(value), MAX_NOTE_CHARS);
    if let Some(Value::String(format)) = map.get("format") {
        notes.push(format!(
            "format: {}",
            truncate_chars(&collapse_whitespace(format), MAX_NOTE_CHARS)
        ));
    }
    if let Some(value) = map.get("default") {
        notes.push(format!("default: {}", json(value)));
    }
    let numeric = [
        ("minimum", "min"),
        ("maximum", "max"),
        ("exclusiveMinimum", "exclusiveMin"),
        ("exclusiveMaximum", "exclusiveMax"),
        ("multipleOf", "multipleOf"),
        ("minLength", "minLength"),
        ("maxLength", "maxLength"),
        ("minItems", "minItems"),
        ("maxItems", "maxItems"),
        ("minProperties", "minProperties"),
        ("maxProperties", "maxProperties"),
    ];
    for (key, label) in numeric {
        if let Some(value @ Value::Number(_)) = map.get(key) {
            notes.push(format!("{label}: {}", json(value)));
        }
    }
    if let Some(value @ Value::String(_)) = map.get("pattern") {
        notes.push(format!("pattern: {}", json(value)));
    }
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        notes.push("uniqueItems".to_string());
    }
    if map.get("deprecated") == Some(&Value::Bool(true)) {
        notes.push("deprecated".to_string());
    }
    let example = match map.get("examples") {
        Some(Value::Array(examples)) => examples.first(),
        _ => map.get("example"),
    };
    if let Some(value) = example {
        notes.push(format!("example: {}", json(value)));
    }
    notes
}

/// Resolves a local JSON-pointer `$ref` (`#`, `#/$defs/X`, `#/definitions/X`,
/// `#/properties/a/items`, …) against `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.contains('%') {
        root.pointer(&percent_decode(pointer)?)
    } else {
        root.pointer(pointer)
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

// ---------------------------------------------------------------------------
// Printing.

/// A property key: bare when it is an identifier name, else a JSON string.
fn property_key(name: &str) -> String {
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

fn needs_parens_in_array(ty: &Ty) -> bool {
    matches!(ty, Ty::Union(_) | Ty::Intersection(_))
}

/// Single-line TypeScript.
fn flat(ty: &Ty) -> String {
    let mut out = String::new();
    write_flat(&mut out, ty);
    out
}

fn write_flat(out: &mut String, ty: &Ty) {
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
fn block(ty: &Ty, indent: usize, column: usize) -> String {
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

fn last_line_chars(text: &str) -> usize {
    text.rsplit('\n')
        .next()
        .map_or(0, |line| line.chars().count())
}

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

fn render_signature(server: &str, tool: &str, schema: &Value) -> String {
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

// ---------------------------------------------------------------------------
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

fn render_declaration(server: &str, tool: &str, exposed_name: &str, def: &ToolDef) -> String {
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
    use serde_json::json;

    use super::*;

    fn tool(description: &str, schema: Value) -> ToolDef {
        ToolDef {
            name: "t".into(),
            title: None,
            description: description.into(),
            input_schema: schema,
            output_schema: None,
            annotations: None,
        }
    }

    fn rendered(schema: Value) -> RenderedStub {
        let def = tool("Does a thing.", schema);
        render(StubInput {
            server_js: "srv",
            tool_js: "run",
            exposed_name: "srv__run",
            def: &def,
        })
    }

    fn args_type(schema: Value) -> String {
        flat(&Lowering::new(&schema, MAX_SCHEMA_DEPTH, 0).lower(&schema, 0, 0))
    }

    #[test]
    fn primitive_and_combined_types() {
        assert_eq!(args_type(json!({"type": "string"})), "string");
        assert_eq!(args_type(json!({"type": "integer"})), "number");
        assert_eq!(
            args_type(json!({"type": ["string", "null"]})),
            "string | null"
        );
        assert_eq!(
            args_type(json!({"enum": ["a", "b", 1, null]})),
            r#""a" | "b" | 1 | null"#
        );
        assert_eq!(
            args_type(json!({"const": {"b": 1, "a": [true]}})),
            r#"{"a":[true],"b":1}"#
        );
        assert_eq!(
            args_type(json!({"anyOf": [{"type": "string"}, {"type": "null"}]})),
            "string | null"
        );
        assert_eq!(
            args_type(json!({"oneOf": [{"type": "string"}, {}]})),
            "unknown"
        );
        assert_eq!(
            args_type(json!({"type": "string", "nullable": true})),
            "string | null"
        );
        assert_eq!(args_type(json!({"type": "wat"})), "unknown");
        assert_eq!(args_type(json!(true)), "unknown");
        assert_eq!(args_type(json!(false)), "never");
        assert_eq!(args_type(json!(42)), "unknown");
        assert_eq!(args_type(json!({"enum": []})), "never");
    }

    #[test]
    fn arrays_and_tuples() {
        assert_eq!(
            args_type(json!({"type": "array", "items": {"type": "string"}})),
            "string[]"
        );
        assert_eq!(args_type(json!({"type": "array"})), "unknown[]");
        assert_eq!(
            args_type(json!({"type": "array", "items": {"type": ["string", "number"]}})),
            "(string | number)[]"
        );
        assert_eq!(
            args_type(json!({"type": "array", "items": [{"type": "string"}, {"type": "number"}]})),
            "[string, number]"
        );
        assert_eq!(
            args_type(json!({"prefixItems": [{"type": "boolean"}]})),
            "[boolean]"
        );
    }

    #[test]
    fn objects_required_first_and_quoted_keys() {
        let schema = json!({
            "type": "object",
            "properties": {
                "z": {"type": "string"},
                "a": {"type": "number"},
                "with-dash": {"type": "boolean"},
                "m": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
            },
            "required": ["z", "m", "extra"]
        });
        assert_eq!(
            args_type(schema),
            r#"{ extra: unknown; m: { x: string }; z: string; a?: number; "with-dash"?: boolean }"#
        );
    }

    #[test]
    fn records_and_empty_objects() {
        assert_eq!(
            args_type(json!({"type": "object"})),
            "Record<string, unknown>"
        );
        assert_eq!(
            args_type(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "Record<string, number>"
        );
        assert_eq!(args_type(json!({"type": "object", "properties": {}})), "{}");
        assert_eq!(
            args_type(json!({"type": "object", "additionalProperties": false})),
            "{}"
        );
    }

    #[test]
    fn all_of_merges_objects() {
        let schema = json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "string"}}, "required": ["a"]}
        ]});
        assert_eq!(args_type(schema), "{ a: string; b?: number }");
        let mixed = json!({"allOf": [{"type": "string"}, {"type": "object"}]});
        assert_eq!(args_type(mixed), "string & Record<string, unknown>");
    }

    #[test]
    fn refs_resolve_and_cycles_degrade() {
        let schema = json!({
            "type": "object",
            "$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "definitions": {"Id": {"type": "integer"}},
            "properties": {
                "root": {"$ref": "#/$defs/Node"},
                "id": {"$ref": "#/definitions/Id"},
                "self": {"$ref": "#"},
                "escaped": {"$ref": "#/%24defs/Node/properties/name"},
                "missing": {"$ref": "#/$defs/Nope"},
                "remote": {"$ref": "https://example.com/schema.json"}
            }
        });
        assert_eq!(
            args_type(schema),
            "{ escaped?: string; id?: number; missing?: unknown; remote?: unknown; \
             root?: { kids?: unknown[]; name?: string }; self?: unknown }"
        );
    }

    #[test]
    fn mutually_recursive_refs_terminate() {
        let schema = json!({
            "$defs": {
                "A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "object", "properties": {"a": {"$ref": "#/$defs/B"}}}]},
                "B": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}
            },
            "$ref": "#/$defs/A"
        });
        let stub = rendered(schema);
        assert!(
            stub.declaration.contains("function run(args: "),
            "{}",
            stub.declaration
        );
    }

    #[test]
    fn depth_is_bounded() {
        let mut schema = json!({"type": "string"});
        for _ in 0..40 {
            schema = json!({"type": "object", "properties": {"n": schema}, "required": ["n"]});
        }
        let text = args_type(schema);
        // Objects at depths 0..=MAX_SCHEMA_DEPTH are shown, their children below that are not.
        assert_eq!(text.matches("n: ").count(), MAX_SCHEMA_DEPTH + 1);
        assert!(text.contains("n: unknown"));
    }

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
    fn unsafe_identifiers_are_fixed() {
        let def = tool("x", json!({}));
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
    fn exponential_refs_are_bounded() {
        // Each definition uses the next one twice: 2^30 expansions if unbounded.
        let mut defs = Map::new();
        for i in 0..30 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"a": next, "b": next}}),
            );
        }
        defs.insert("d30".into(), json!({"type": "string"}));
        let stub = rendered(json!({"$defs": defs, "$ref": "#/$defs/d0"}));
        assert!(stub.declaration.len() <= MAX_DECLARATION_BYTES);
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

    #[test]
    fn summaries_take_the_first_sentence() {
        assert_eq!(first_sentence("", 120), "");
        assert_eq!(first_sentence("  \n One line\nTwo line", 120), "One line");
        assert_eq!(
            first_sentence("Version 1.2 is out. More", 120),
            "Version 1.2 is out."
        );
        assert_eq!(
            first_sentence("使用必应搜索指定的关键词。并返回", 120),
            "使用必应搜索指定的关键词。"
        );
        assert_eq!(first_sentence("No terminator", 120), "No terminator");
        assert_eq!(
            first_sentence(&"长".repeat(300), 120),
            format!("{}…", "长".repeat(119))
        );
    }
}
