//! Turns text into index terms: tokenize, drop stopwords, stem. Documents and
//! queries go through the same analysis, so they meet on the same terms.

use std::collections::HashMap;

use super::{
    stemmer::stem,
    stopwords::{is_cjk_stop_char, is_stopword},
    tokenizer::{TokenKind, Tokenizer},
};

/// Tokenizer + stopwords + stemmer, with a cache of stems (documents repeat
/// their words a lot; an analyzer kept across a whole index build pays for each
/// distinct word once).
#[derive(Debug, Default)]
pub struct Analyzer {
    tokenizer: Tokenizer,
    stems: HashMap<String, String>,
}

impl Analyzer {
    /// An analyzer with an empty stem cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `emit` with each term of `text`, in order.
    ///
    /// ```
    /// use quiver_view::search::Analyzer;
    /// let mut terms = Vec::new();
    /// Analyzer::new().analyze("Creating the GitHub issues", |t, _| terms.push(t.to_owned()));
    /// assert_eq!(terms, ["creat", "git", "hub", "github", "issu"]);
    /// ```
    pub fn analyze(&mut self, text: &str, mut emit: impl FnMut(&str, TokenKind)) {
        self.analyze_with_source(text, |_, term, kind| emit(term, kind));
    }

    /// Like [`Analyzer::analyze`], also passing each term's source token
    /// (lowercase, before stemming) first.
    pub fn analyze_with_source(&mut self, text: &str, mut emit: impl FnMut(&str, &str, TokenKind)) {
        let stems = &mut self.stems;
        self.tokenizer.tokenize(text, |token, kind| match kind {
            TokenKind::Word | TokenKind::Piece | TokenKind::Compound => {
                if is_stopword(token) {
                    return;
                }
                if let Some(s) = stems.get(token) {
                    emit(token, s, kind);
                    return;
                }
                let s = stem(token);
                emit(token, &s, kind);
                // Bound the cache: a build sees a few thousand distinct words.
                if stems.len() < 1 << 16 {
                    stems.insert(token.to_owned(), s);
                }
            }
            TokenKind::CjkUnigram => {
                if !is_cjk_stop_char(token) {
                    emit(token, token, kind);
                }
            }
            TokenKind::CjkBigram => emit(token, token, kind),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Analyzer::new().analyze(text, |t, _| out.push(t.to_owned()));
        out
    }

    #[test]
    fn query_and_tool_name_meet() {
        assert_eq!(terms("create issues"), terms("create_issue"));
        assert_eq!(
            terms("Get the weather for a city"),
            terms("get_weather_city")
        );
    }

    #[test]
    fn drops_stopwords_and_cjk_function_characters() {
        assert_eq!(terms("what is the weather"), ["weather"]);
        let t = terms("我的天气");
        assert!(!t.contains(&"我".to_owned()));
        assert!(!t.contains(&"的".to_owned()));
        assert!(t.contains(&"天气".to_owned()));
        assert!(t.contains(&"的天".to_owned()));
    }
}
