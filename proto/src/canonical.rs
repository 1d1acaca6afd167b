//! Canonical JSON (RFC 8785 style): object keys sorted by UTF-16 code units, no
//! insignificant whitespace, numbers in their shortest round-trip form. Two
//! semantically equal JSON values always give the same bytes.
//!
//! Integers are written exactly as integers (RFC 8785 would route them through
//! IEEE 754 doubles; tool schemas never need that and exact integers are safer).

use std::{cmp::Ordering, fmt::Write as _};

use serde_json::{Number, Value};

/// Serializes `value` canonically.
///
/// ```
/// use quiver_proto::canonical::to_canonical_json;
/// let value = serde_json::json!({"b": [1.0, 2.5e-7, "x\n"], "a": null});
/// assert_eq!(to_canonical_json(&value), r#"{"a":null,"b":[1,2.5e-7,"x\n"]}"#);
/// ```
pub fn to_canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Orders object keys as RFC 8785 does: by their UTF-16 code units.
pub fn compare_keys(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted explicitly: the map's own order depends on serde_json's features.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| compare_keys(a.0, b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Writes `s` as a JSON string literal, escaping only what RFC 8785 escapes.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(f) = n.as_f64() {
        write_f64(out, f);
    } else {
        // Unreachable without `arbitrary_precision`; keep serde_json's own text then.
        let _ = write!(out, "{n}");
    }
}

/// Writes a finite double the way ECMAScript's `Number.prototype.toString` does.
pub(crate) fn write_f64(out: &mut String, f: f64) {
    if f == 0.0 || !f.is_finite() {
        // -0 is "0"; non-finite numbers cannot occur in JSON, "0" keeps this total.
        out.push('0');
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    // `{:e}` gives the shortest digits that round-trip, e.g. "1.2345e-7".
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let k = digits.len() as i32;
    // ECMAScript's n: the value is 0.d1d2…dk × 10^n.
    let n = exponent + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn float(f: f64) -> String {
        let mut out = String::new();
        write_f64(&mut out, f);
        out
    }

    #[test]
    fn floats_follow_ecmascript_number_to_string() {
        let cases: [(f64, &str); 18] = [
            (1.0, "1"),
            (-1.0, "-1"),
            (-0.0, "0"),
            (0.5, "0.5"),
            (123.456, "123.456"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1.25e-6, "0.00000125"),
            (1e-7, "1e-7"),
            (-2.5e-7, "-2.5e-7"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (9007199254740993.0, "9007199254740992"),
            // RFC 8785's example; the literal has more digits than the double keeps.
            (333_333_333.333_333_3, "333333333.3333333"),
        ];
        for (value, expected) in cases {
            assert_eq!(float(value), expected, "formatting {value:?}");
        }
    }

    #[test]
    fn integers_stay_exact() {
        let value = json!([u64::MAX, i64::MIN, 0, -7]);
        assert_eq!(
            to_canonical_json(&value),
            "[18446744073709551615,-9223372036854775808,0,-7]"
        );
    }

    #[test]
    fn strings_escape_minimally() {
        let value = json!("a\"b\\c\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é😀/<>");
        assert_eq!(
            to_canonical_json(&value),
            "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}é😀/<>\""
        );
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+FB01 sorts after U+1F600 in UTF-8/code points but before it in UTF-16
        // (the emoji is the surrogate pair D83D DE00).
        let value = json!({"\u{fb01}": 1, "\u{1f600}": 2, "b": 3, "a": 4, "": 5, "aa": 6});
        assert_eq!(
            to_canonical_json(&value),
            "{\"\":5,\"a\":4,\"aa\":6,\"b\":3,\"\u{1f600}\":2,\"\u{fb01}\":1}"
        );
    }

    #[test]
    fn nested_structures_have_no_whitespace() {
        let value: Value = serde_json::from_str(
            r#" { "z" : [ 1 , { "y" : true , "x" : null } ] , "a" : { } , "m" : [ ] } "#,
        )
        .expect("valid JSON");
        assert_eq!(
            to_canonical_json(&value),
            r#"{"a":{},"m":[],"z":[1,{"x":null,"y":true}]}"#
        );
    }

    #[test]
    fn integral_floats_read_back_to_the_same_text() {
        let value: Value = serde_json::from_str("[1.0, 1e2, -0.0, 2.50]").expect("valid JSON");
        let canonical = to_canonical_json(&value);
        assert_eq!(canonical, "[1,100,0,2.5]");
        let again: Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
        assert_eq!(to_canonical_json(&again), canonical);
    }
}
