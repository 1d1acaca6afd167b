//! Exposed names and JavaScript identifiers are always valid, unique where they
//! must be, and deterministic, whatever the tool and server names are.

use std::collections::HashSet;

use proptest::{collection::vec, prelude::*};
use quiver_proto::naming::{
    assign_exposed_names, is_reserved_word, is_safe_js_identifier, is_valid_exposed_name,
    js_identifier,
};

/// Names drawn from a small pool (many exact duplicates and sanitising collisions)
/// mixed with arbitrary unicode and over-long ones.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["", "a", "a b", "a.b", "a_b", "tool", "搜索", "🔥", "x-y"]).prop_map(String::from),
        2 => ".{0,20}",
        1 => "[a-z_]{60,90}",
        1 => ".{60,90}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn exposed_names_are_valid_unique_and_deterministic(pairs in vec((name(), name()), 0..60)) {
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        let names = assign_exposed_names(&borrowed);
        prop_assert_eq!(names.len(), pairs.len());
        for name in &names {
            prop_assert!(is_valid_exposed_name(name), "invalid exposed name {:?}", name);
        }
        let unique: HashSet<&String> = names.iter().collect();
        prop_assert_eq!(unique.len(), names.len(), "duplicate exposed names in {:?}", names);
        prop_assert_eq!(assign_exposed_names(&borrowed), names);
    }

    #[test]
    fn the_first_of_a_name_keeps_it(namespace in "[a-z]{1,10}", tool in "[a-z_]{1,10}", copies in 1usize..10) {
        let pairs = vec![(namespace.as_str(), tool.as_str()); copies];
        let names = assign_exposed_names(&pairs);
        prop_assert_eq!(&names[0], &format!("{namespace}__{tool}"));
    }

    #[test]
    fn js_identifiers_are_safe_and_idempotent(name in name()) {
        let identifier = js_identifier(&name);
        prop_assert!(is_safe_js_identifier(&identifier), "unsafe identifier {:?}", identifier);
        prop_assert!(!is_reserved_word(&identifier));
        prop_assert_eq!(js_identifier(&identifier), identifier);
    }
}
