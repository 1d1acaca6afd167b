//! Shortening prose for stubs: the first sentence of a description, collapsed
//! whitespace, and truncation at a character boundary. Knows nothing of schemas.

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

pub(super) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max_chars` characters, ending in `…` when cut.
pub(super) fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            format!("{}…", text[..end].trim_end())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
