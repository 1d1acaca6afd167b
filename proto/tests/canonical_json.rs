//! Canonical JSON is a function of the value alone: key order, whitespace and
//! number spelling in the input never change the bytes.

use crate::common;

use proptest::prelude::*;
use quiver_proto::canonical::to_canonical_json;
use serde_json::Value;

use common::{json_value, reinserted, reordered_text};

proptest! {
    #[test]
    fn canonical_json_is_valid_and_idempotent(value in json_value()) {
        let canonical = to_canonical_json(&value);
        let reparsed: Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
        prop_assert_eq!(to_canonical_json(&reparsed), canonical);
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter(value in json_value()) {
        let canonical = to_canonical_json(&value);
        prop_assert_eq!(&to_canonical_json(&reinserted(&value)), &canonical);
        let respelled: Value = serde_json::from_str(&reordered_text(&value)).expect("reordered text parses");
        prop_assert_eq!(to_canonical_json(&respelled), canonical);
    }

    #[test]
    fn floats_round_trip_exactly(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let canonical = to_canonical_json(&Value::from(f));
        let back: f64 = serde_json::from_str(&canonical).expect("a number");
        prop_assert_eq!(back, if f == 0.0 { 0.0 } else { f });
        // Between 1e-6 and 1e21 ECMAScript and Rust's Display agree (no exponent).
        if f != 0.0 && (1e-6..1e21).contains(&f.abs()) {
            prop_assert_eq!(canonical, format!("{f}"));
        } else if f.abs() >= 1e21 || (f != 0.0 && f.abs() < 1e-6) {
            prop_assert!(canonical.contains('e'), "{} should use an exponent", canonical);
        }
    }

    #[test]
    fn canonical_json_has_no_insignificant_whitespace(value in json_value()) {
        let canonical = to_canonical_json(&value);
        // Outside strings there are no spaces or newlines; inside, control characters are escaped.
        let mut in_string = false;
        let mut escaped = false;
        for c in canonical.chars() {
            if in_string {
                prop_assert!(c >= ' ', "raw control character in a string");
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
            } else {
                prop_assert!(!c.is_whitespace(), "whitespace outside strings: {}", canonical);
                in_string = c == '"';
            }
        }
    }
}

#[test]
fn rfc8785_style_example() {
    let text = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    let value: Value = serde_json::from_str(text).expect("valid JSON");
    assert_eq!(
        to_canonical_json(&value),
        "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
         \"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
    );
}
