//! Strategies and helpers shared by the integration tests.
// Each test binary uses a different subset of these.
#![allow(dead_code)]

use std::path::PathBuf;

use proptest::{collection::vec, prelude::*};
use serde_json::{Map, Value, json};

/// Any JSON value: unicode strings, extreme numbers, nesting.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            vec((key(), inner), 0..8)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Object keys: plain names, JSON Schema keywords, dangerous and arbitrary unicode.
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}",
        ".{0,8}",
        Just("type".to_string()),
        Just("properties".to_string()),
        Just("$ref".to_string()),
        Just("__proto__".to_string()),
        Just("\u{1f600}".to_string()),
        Just("\u{fb01}".to_string()),
    ]
}

/// JSON Schemas built from the keywords the stub renderer understands, with
/// `$ref`s (including cyclic ones) and arbitrary junk mixed in.
pub fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "minimum": 0, "default": 3})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"type": "object"})),
        Just(json!({"$ref": "#/$defs/a"})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"$ref": "#/properties/x"})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!({"enum": ["x", 1, null, 2.5]})),
        Just(json!({"const": {"k": [1.5, "*/"]}})),
        ".{0,20}".prop_map(|d| json!({"type": "string", "description": d, "format": "uri"})),
        json_value(),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            (vec((key(), inner.clone()), 0..6), vec(key(), 0..3), any::<bool>()).prop_map(
                |(properties, required, closed)| {
                    let properties: Map<String, Value> = properties.into_iter().collect();
                    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": !closed})
                }
            ),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items, "description": "list */ of"})),
            vec(inner.clone(), 0..4).prop_map(|branches| json!({"anyOf": branches})),
            vec(inner.clone(), 0..4).prop_map(|branches| json!({"allOf": branches})),
            vec(inner.clone(), 0..3).prop_map(|items| json!({"type": "array", "prefixItems": items})),
            inner.clone().prop_map(|extra| json!({"type": "object", "additionalProperties": extra})),
            (inner.clone(), inner).prop_map(|(a, x)| json!({"type": "object", "$defs": {"a": a}, "properties": {"x": x}})),
        ]
    })
}

/// JSON text of `value` with every object's members in reverse order and extra
/// whitespace: the same value, spelled differently.
pub fn reordered_text(value: &Value) -> String {
    let mut out = String::new();
    write_reordered(&mut out, value);
    out
}

fn write_reordered(out: &mut String, value: &Value) {
    match value {
        Value::Array(items) => {
            out.push_str("[ ");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" ,\n ");
                }
                write_reordered(out, item);
            }
            out.push_str(" ]");
        }
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (key, item)) in map.iter().rev().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&serde_json::to_string(key).expect("strings serialize"));
                out.push_str(" : ");
                write_reordered(out, item);
            }
            out.push_str("\n}");
        }
        scalar => out.push_str(&serde_json::to_string(scalar).expect("scalars serialize")),
    }
}

/// The same value rebuilt with every object's keys inserted in reverse order.
pub fn reinserted(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(reinserted).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map.iter().rev() {
                out.insert(key.clone(), reinserted(item));
            }
            Value::Object(out)
        }
        scalar => scalar.clone(),
    }
}

#[path = "../../../tests/support/partial_run.rs"]
mod partial_run;

/// A dataset under `../shared/datasets`. When it is absent the test fails,
/// unless `QUIVER_PARTIAL_TESTS=1` marks a local partial run: then `None` (skip).
pub fn dataset(relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets")
        .join(relative);
    partial_run::required_input(
        &path,
        "this test needs ../shared/datasets next to the repository",
    )
}

/// A deterministic permutation of `items` (xorshift, seeded).
pub fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
    items
}
