//! "Did you mean …": the closest real names to a mistyped one. A name a
//! client sent is echoed at most [`MAX_ECHOED_NAME`] bytes long, and one
//! longer than that is matched against nothing (no real tool name comes
//! close, and edit distance costs its length times every candidate's).

/// Longest name echoed back (in errors, and so in logs) or matched.
pub const MAX_ECHOED_NAME: usize = 128;

/// `name` as an error may quote it: cut to [`MAX_ECHOED_NAME`] bytes at a
/// character boundary, with `…` when cut.
pub fn echoed(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= MAX_ECHOED_NAME {
        return name.into();
    }
    let mut end = MAX_ECHOED_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &name[..end]).into()
}

/// Up to `limit` candidates closest to `wanted` by edit distance (case-insensitive),
/// only those close enough to be plausible typos, best first.
pub fn closest<'a>(
    wanted: &str,
    candidates: impl Iterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    if wanted.len() > MAX_ECHOED_NAME {
        return Vec::new();
    }
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
    let name = echoed(name);
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
    fn a_long_name_is_cut_when_echoed_and_matched_against_nothing() {
        let long = "x".repeat(1_000_000);
        let message = unknown_tool_message(&long, &[], "search first");
        assert!(message.len() < 200, "{} bytes", message.len());
        assert!(message.contains('…'));
        assert!(closest(&long, ["xxx"].into_iter(), 3).is_empty());
        assert_eq!(echoed("é".repeat(100).as_str()).len(), 128 + '…'.len_utf8());
    }

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
