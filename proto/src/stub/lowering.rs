//! JSON Schema to the type model, bounded in depth, size and `$ref` hops so
//! that hostile schemas degrade to `unknown` instead of blowing up. It must not
//! depend on map order: properties come out required first, sorted by name.

use serde_json::{Map, Value};

use super::{
    text::{collapse_whitespace, truncate_chars},
    type_model::{Object, Prop, Ty, base_type, intersection, literal, union},
};
use crate::canonical::to_canonical_json;

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
/// Longest property description kept.
const MAX_PROPERTY_DOC_CHARS: usize = 1_000;
/// Longest value in a property note (`default: …`).
const MAX_NOTE_CHARS: usize = 80;

/// Lowers schemas under one root (the root `$ref`s resolve against).
pub(super) struct Lowering<'a> {
    root: &'a Value,
    max_depth: usize,
    /// Properties of objects nested less deeply than this keep their docs.
    docs_depth: usize,
    nodes: usize,
    /// Schemas being lowered, outermost first: a `$ref` back into one is a cycle.
    path: Vec<&'a Value>,
}

impl<'a> Lowering<'a> {
    pub(super) fn new(root: &'a Value, max_depth: usize, docs_depth: usize) -> Self {
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
    pub(super) fn lower(&mut self, schema: &'a Value, depth: usize, hops: usize) -> Ty {
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

#[cfg(test)]
mod tests {
    use super::{
        super::{test_support::*, typescript::flat},
        Lowering,
    };

    /// `schema` lowered as the arguments of a tool and printed on one line.
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
}
