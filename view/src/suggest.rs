//! "Did you mean …": the closest real names to a mistyped one.

/// Up to `limit` candidates closest to `wanted` by edit distance (case-insensitive),
/// only those close enough to be plausible typos, best first.
pub fn closest<'a>(
    wanted: &str,
    candidates: impl Iterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let wanted_lower = wanted.to_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let distance = strsim::levenshtein(&wanted_lower, &lower);
            let contains = !wanted_lower.is_empty()
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower));
            let budget = (wanted.chars().count().max(c.chars().count()) / 3).max(2);
            (distance <= budget || contains)
                .then_some((if contains { distance.min(1) } else { distance }, c))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// `unknown tool `x`; did you mean `a`, `b`?` or a hint to search.
pub fn unknown_tool_message(name: &str, suggestions: &[String], hint: &str) -> String {
    if suggestions.is_empty() {
        format!("unknown tool `{name}`; {hint}")
    } else {
        let list = suggestions
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!("unknown tool `{name}`; did you mean {list}?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos_first() {
        let names = ["find_symbols", "find_files", "delete_repo"];
        assert_eq!(
            closest("find_symb0ls", names.into_iter(), 3)[0],
            "find_symbols"
        );
    }

    #[test]
    fn ignores_unrelated_names() {
        let names = ["delete_repository"];
        assert!(closest("weather", names.into_iter(), 3).is_empty());
    }

    #[test]
    fn message_lists_suggestions() {
        let msg = unknown_tool_message("x", &["a".into()], "search first");
        assert_eq!(msg, "unknown tool `x`; did you mean `a`?");
    }
}
