//! Names a tool is known by outside its server: the namespaced name exposed over
//! MCP (`<namespace>__<tool>`, valid under `^[a-zA-Z0-9_-]{1,64}$`) and the
//! JavaScript identifiers used by code mode (`tools.<server>.<tool>`).
//!
//! Both are pure functions of their input (and, for exposed names, of the input
//! order), so every node derives the same names from the same manifest.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

/// Longest exposed name MCP clients accept.
pub const MAX_EXPOSED_NAME_LEN: usize = 64;

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_exposed_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_EXPOSED_NAME_LEN && name.bytes().all(is_exposed_byte)
}

fn is_exposed_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Assigns exposed names to `(namespace, tool)` pairs given in canonical order
/// (sorted by server id, then tool name). Deterministic: invalid characters are
/// replaced, over-long names shortened with a hash suffix, and collisions resolved
/// in input order (the first keeps the plain name).
///
/// - The plain name is `<namespace>__<tool>`, or `<tool>` when the namespace is
///   empty; an empty tool name reads `tool`; characters outside `[a-zA-Z0-9_-]`
///   become `_`.
/// - A name over 64 bytes keeps a prefix and ends in `_` + 8 hex digits of
///   SHA-256 of `namespace \0 tool` (the original strings).
/// - A later name that collides gets `_` + 8 hex digits of that hash (then 16,
///   then a counter) so that it is unique, still within 64 bytes.
///
/// ```
/// use quiver_proto::naming::assign_exposed_names;
/// let names = assign_exposed_names(&[("github", "create issue"), ("", "search"), ("", "search")]);
/// assert_eq!(names[0], "github__create_issue");
/// assert_eq!(names[1], "search");
/// assert!(names[2].starts_with("search_") && names[2].len() == 15);
/// ```
pub fn assign_exposed_names(tools: &[(&str, &str)]) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::with_capacity(tools.len());
    // Next counter per base, so many identical inputs stay linear.
    let mut counters: HashMap<String, u64> = HashMap::new();
    tools
        .iter()
        .map(|&(namespace, tool)| {
            let digest = hex::encode(
                Sha256::new()
                    .chain_update(namespace)
                    .chain_update([0u8])
                    .chain_update(tool)
                    .finalize(),
            );
            let base = plain_exposed_name(namespace, tool, &digest);
            if taken.insert(base.clone()) {
                return base;
            }
            for hex_len in [8, 16] {
                let candidate = with_suffix(&base, &format!("_{}", &digest[..hex_len]));
                if taken.insert(candidate.clone()) {
                    return candidate;
                }
            }
            let counter = counters.entry(base.clone()).or_insert(2);
            loop {
                let candidate = with_suffix(&base, &format!("_{}_{}", &digest[..8], *counter));
                *counter += 1;
                if taken.insert(candidate.clone()) {
                    return candidate;
                }
            }
        })
        .collect()
}

/// The sanitised, length-bounded name before collisions are considered.
fn plain_exposed_name(namespace: &str, tool: &str, digest: &str) -> String {
    let tool = if tool.is_empty() { "tool" } else { tool };
    let mut name = String::new();
    if !namespace.is_empty() {
        push_sanitised(&mut name, namespace);
        name.push_str("__");
    }
    push_sanitised(&mut name, tool);
    if name.len() > MAX_EXPOSED_NAME_LEN {
        name = with_suffix(&name, &format!("_{}", &digest[..8]));
    }
    name
}

fn push_sanitised(out: &mut String, text: &str) {
    out.extend(text.chars().map(|c| {
        if c.is_ascii() && is_exposed_byte(c as u8) {
            c
        } else {
            '_'
        }
    }));
}

/// `base` cut so that `base + suffix` fits in 64 bytes (`base` is ASCII).
fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = base
        .len()
        .min(MAX_EXPOSED_NAME_LEN.saturating_sub(suffix.len()));
    format!("{}{suffix}", &base[..keep])
}

/// Words a generated identifier must not be: JavaScript reserved words (strict
/// mode, including future and contextual ones that cannot be bound) and names
/// whose use as a property or binding changes behaviour (`__proto__`, `then`, …).
const RESERVED: &[&str] = &[
    // Keywords and reserved words.
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    // Global values that must not be shadowed.
    "undefined",
    "NaN",
    "Infinity",
    "globalThis",
    // Object and Function prototype members, and thenables.
    "__proto__",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "apply",
    "bind",
    "call",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "prototype",
    "then",
    "toLocaleString",
    "toString",
    "valueOf",
];

/// Whether `word` is reserved or dangerous as a generated identifier.
pub fn is_reserved_word(word: &str) -> bool {
    RESERVED.contains(&word)
}

/// Whether `name` is already what [`js_identifier`] would produce for it: ASCII
/// `[A-Za-z_][A-Za-z0-9_]*` and not reserved.
pub fn is_safe_js_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !is_reserved_word(name)
}

/// A valid, non-reserved JavaScript identifier for `name` (deterministic).
///
/// Every character outside ASCII `[A-Za-z0-9_]` becomes `_` (one per character,
/// nothing collapsed); a leading digit gets a `_` prefix; an empty name is `_`; a
/// reserved or dangerous word gets a `_` suffix.
///
/// ```
/// use quiver_proto::naming::js_identifier;
/// assert_eq!(js_identifier("create-issue"), "create_issue");
/// assert_eq!(js_identifier("2fa"), "_2fa");
/// assert_eq!(js_identifier("delete"), "delete_");
/// assert_eq!(js_identifier("搜索"), "__");
/// ```
pub fn js_identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    if out.is_empty() {
        out.push('_');
    }
    if is_reserved_word(&out) {
        out.push('_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_namespaced_and_sanitised() {
        let names = assign_exposed_names(&[
            ("github", "create_issue"),
            ("", "echo"),
            ("my server", "a.b/c"),
            ("x", ""),
        ]);
        assert_eq!(
            names,
            [
                "github__create_issue",
                "echo",
                "my_server__a_b_c",
                "x__tool"
            ]
        );
    }

    #[test]
    fn non_ascii_becomes_one_underscore_per_character() {
        assert_eq!(assign_exposed_names(&[("鸣潮", "查询")]), ["______"]);
    }

    #[test]
    fn long_names_are_shortened_with_the_hash_of_the_original() {
        let namespace = "n".repeat(40);
        let tool = "t".repeat(40);
        let names = assign_exposed_names(&[(&namespace, &tool)]);
        let digest = hex::encode(Sha256::digest(format!("{namespace}\u{0}{tool}")));
        assert_eq!(names[0].len(), 64);
        assert_eq!(
            names[0],
            format!("{}__{}_{}", namespace, "t".repeat(13), &digest[..8])
        );
    }

    #[test]
    fn exactly_64_bytes_is_kept() {
        let tool = "a".repeat(64);
        assert_eq!(assign_exposed_names(&[("", &tool)]), [tool]);
    }

    #[test]
    fn collisions_keep_the_first_and_suffix_later_ones() {
        let names = assign_exposed_names(&[("a", "b c"), ("a", "b.c"), ("a", "b_c"), ("a", "b_c")]);
        assert_eq!(names[0], "a__b_c");
        let digest = |tool: &str| hex::encode(Sha256::digest(format!("a\u{0}{tool}")));
        assert_eq!(names[1], format!("a__b_c_{}", &digest("b.c")[..8]));
        assert_eq!(names[2], format!("a__b_c_{}", &digest("b_c")[..8]));
        // An exact duplicate has the same hash: 16 hex digits.
        assert_eq!(names[3], format!("a__b_c_{}", &digest("b_c")[..16]));
        let unique: HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn many_duplicates_fall_back_to_a_counter() {
        let input = vec![("ns", "same"); 50];
        let names = assign_exposed_names(&input);
        let unique: HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 50);
        assert!(names.iter().all(|n| is_valid_exposed_name(n)));
        assert!(names[3].ends_with("_2"));
    }

    #[test]
    fn identifiers_are_ascii_and_safe() {
        assert_eq!(js_identifier(""), "_");
        assert_eq!(js_identifier("get_weather"), "get_weather");
        assert_eq!(js_identifier("get-weather.v2 now"), "get_weather_v2_now");
        assert_eq!(js_identifier("$price"), "_price");
        assert_eq!(js_identifier("9lives"), "_9lives");
        assert_eq!(js_identifier("__proto__"), "__proto___");
        assert_eq!(js_identifier("constructor"), "constructor_");
        assert_eq!(js_identifier("then"), "then_");
        assert_eq!(js_identifier("class"), "class_");
        assert_eq!(js_identifier("Delete"), "Delete");
        assert_eq!(js_identifier("查询天气"), "____");
        for word in RESERVED {
            assert!(is_safe_js_identifier(&js_identifier(word)), "{word}");
        }
    }

    #[test]
    fn safe_identifiers_are_fixed_points() {
        for name in ["a", "_", "abc_12", "delete_", "_9"] {
            assert!(is_safe_js_identifier(name));
            assert_eq!(js_identifier(name), name);
        }
        for name in ["", "9a", "a-b", "new", "a$"] {
            assert!(!is_safe_js_identifier(name));
        }
    }
}
