//! Sizes as they are on the wire: a text inside a JSON string costs more
//! than its bytes (every `"` and `\` two, control characters two or six).
//! Output caps count these, so a quote-heavy result cannot leave a node
//! larger than the cap, and a cut text is still valid text.

/// Bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Bytes `text` takes as a JSON string, quotes included.
pub fn json_string_len(text: &str) -> usize {
    2 + text.chars().map(escaped_len).sum::<usize>()
}

/// The longest prefix of `text` (whole characters) whose JSON string form,
/// quotes included, takes at most `budget` bytes; empty when not even one
/// character fits.
pub fn prefix_within(text: &str, budget: usize) -> &str {
    let mut used = 2;
    for (at, c) in text.char_indices() {
        used += escaped_len(c);
        if used > budget {
            return &text[..at];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_match_what_serde_json_writes() {
        for text in [
            "plain",
            "\"quoted\" and \\slashed\\",
            "lines\nand\ttabs\r\u{1}\u{1f}",
            "ünïcödé ✓ 🎉",
            "",
        ] {
            let written = serde_json::to_string(text).unwrap();
            assert_eq!(json_string_len(text), written.len(), "{text:?}");
        }
    }

    #[test]
    fn a_prefix_fits_its_budget_and_is_the_longest_that_does() {
        let text = "\"a\"\u{1}é".repeat(50);
        for budget in [0, 2, 3, 7, 40, 41, 500, 10_000] {
            let prefix = prefix_within(&text, budget);
            assert!(text.starts_with(prefix));
            let written = serde_json::to_string(prefix).unwrap().len();
            assert!(written <= budget.max(2), "{budget}: {written}");
            if prefix.len() < text.len() {
                let next = text[prefix.len()..].chars().next().unwrap();
                let longer = &text[..prefix.len() + next.len_utf8()];
                assert!(serde_json::to_string(longer).unwrap().len() > budget);
            }
        }
    }

    #[test]
    fn quote_heavy_text_still_gives_a_preview() {
        let text = "\"".repeat(1_000);
        let prefix = prefix_within(&text, 100);
        assert_eq!(prefix.len(), 49);
    }
}
