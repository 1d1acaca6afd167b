//! Splits text into lowercase word pieces and CJK n-grams. Tool names are
//! split on `_ - .`, camelCase and letter/digit boundaries, and the whole word
//! is kept too, so `getStory` yields `get`, `story` and `getstory`. It knows
//! nothing of stopwords or stems (see `analyzer`).

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

/// What a token is; decides how it is weighted and whether it forms phrases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A word that was not split (`weather`).
    Word,
    /// One piece of a split word (`get` and `story` of `getStory`); its
    /// `Compound` follows the pieces.
    Piece,
    /// The whole of a word that was split into pieces (`javascript` from
    /// `JavaScript`, `s3`, `getstory`).
    Compound,
    /// One CJK character.
    CjkUnigram,
    /// Two adjacent CJK characters: Chinese has no spaces, so bigrams stand in
    /// for words.
    CjkBigram,
}

/// Splits text into tokens. Stateless; holds buffers so that repeated calls do
/// not allocate.
#[derive(Debug, Default)]
pub struct Tokenizer {
    run: Vec<char>,
    piece: String,
    whole: String,
}

impl Tokenizer {
    /// A tokenizer with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `emit` with each token of `text`, in order, lowercased.
    ///
    /// ```
    /// use quiver_view::search::{TokenKind, Tokenizer};
    /// let mut tokens = Vec::new();
    /// Tokenizer::new().tokenize("get_githubTrending", |t, k| tokens.push((t.to_owned(), k)));
    /// assert_eq!(tokens[0], ("get".to_owned(), TokenKind::Word));
    /// assert_eq!(tokens[1], ("github".to_owned(), TokenKind::Piece));
    /// assert_eq!(tokens[2], ("trending".to_owned(), TokenKind::Piece));
    /// assert_eq!(tokens[3], ("githubtrending".to_owned(), TokenKind::Compound));
    /// ```
    pub fn tokenize(&mut self, text: &str, mut emit: impl FnMut(&str, TokenKind)) {
        // NFKC folds full-width letters and digits to ASCII; most text is ASCII
        // already and skips it.
        let text: Cow<'_, str> = if text.is_ascii() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(text.nfkc().collect())
        };
        let mut class = CharClass::Separator;
        self.run.clear();
        for c in text.chars() {
            let next = CharClass::of(c);
            if next != class && !self.run.is_empty() {
                self.flush(class, &mut emit);
            }
            class = next;
            if class != CharClass::Separator {
                self.run.push(c);
            }
        }
        if !self.run.is_empty() {
            self.flush(class, &mut emit);
        }
    }

    fn flush(&mut self, class: CharClass, emit: &mut impl FnMut(&str, TokenKind)) {
        match class {
            CharClass::Word => self.flush_word(emit),
            CharClass::Cjk => self.flush_cjk(emit),
            CharClass::Separator => {}
        }
        self.run.clear();
    }

    fn flush_word(&mut self, emit: &mut impl FnMut(&str, TokenKind)) {
        let run = &self.run;
        let split = (1..run.len()).any(|i| is_boundary(run, i));
        let kind = if split {
            TokenKind::Piece
        } else {
            TokenKind::Word
        };
        let mut start = 0;
        for i in 1..=run.len() {
            if i < run.len() && !is_boundary(run, i) {
                continue;
            }
            // Single letters and digits carry no meaning on their own ("s" of "s3").
            if i - start >= 2 {
                self.piece.clear();
                self.piece
                    .extend(run[start..i].iter().flat_map(|c| c.to_lowercase()));
                emit(&self.piece, kind);
            }
            start = i;
        }
        if split {
            self.whole.clear();
            self.whole.extend(run.iter().flat_map(|c| c.to_lowercase()));
            emit(&self.whole, TokenKind::Compound);
        }
    }

    fn flush_cjk(&mut self, emit: &mut impl FnMut(&str, TokenKind)) {
        for i in 0..self.run.len() {
            self.piece.clear();
            self.piece.push(self.run[i]);
            emit(&self.piece, TokenKind::CjkUnigram);
            if let Some(&next) = self.run.get(i + 1) {
                self.piece.push(next);
                emit(&self.piece, TokenKind::CjkBigram);
            }
        }
    }
}

/// Whether a new piece starts at `run[i]` (camelCase, ACRONYMWord, letter↔digit).
fn is_boundary(run: &[char], i: usize) -> bool {
    let (prev, cur) = (run[i - 1], run[i]);
    if prev.is_numeric() != cur.is_numeric() {
        return true;
    }
    if prev.is_lowercase() && cur.is_uppercase() {
        return true;
    }
    // "HTMLParser": the boundary falls before the last capital of the acronym.
    prev.is_uppercase() && cur.is_uppercase() && run.get(i + 1).is_some_and(|n| n.is_lowercase())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Word,
    Cjk,
    Separator,
}

impl CharClass {
    fn of(c: char) -> CharClass {
        if is_cjk(c) {
            CharClass::Cjk
        } else if c.is_alphanumeric() {
            CharClass::Word
        } else {
            CharClass::Separator
        }
    }
}

/// Han, kana and Hangul: scripts written without spaces between words (Hangul
/// does use spaces, but n-grams serve it well enough).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FFFF) // CJK Extensions B–F
}

#[cfg(test)]
mod tests {
    use super::{TokenKind, Tokenizer};

    fn tokens(text: &str) -> Vec<(String, TokenKind)> {
        let mut out = Vec::new();
        Tokenizer::new().tokenize(text, |t, k| out.push((t.to_owned(), k)));
        out
    }

    fn words(text: &str) -> Vec<String> {
        tokens(text)
            .into_iter()
            .filter(|(_, k)| matches!(k, TokenKind::Word | TokenKind::Piece))
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn splits_tool_names() {
        assert_eq!(words("get_github_trending"), ["get", "github", "trending"]);
        assert_eq!(
            words("lol-champion-meta-data"),
            ["lol", "champion", "meta", "data"]
        );
        assert_eq!(words("fs.read_file"), ["fs", "read", "file"]);
        assert_eq!(
            words("npmLicenseCompatibility"),
            ["npm", "license", "compatibility"]
        );
        assert_eq!(words("HTMLParser"), ["html", "parser"]);
        assert_eq!(words("getUIComponents"), ["get", "ui", "components"]);
        assert_eq!(words("ACCOUNT_INFORMATION"), ["account", "information"]);
    }

    #[test]
    fn splits_digits_and_keeps_the_whole_word() {
        let t = tokens("s3_bucket_list get-36kr-trending");
        assert!(t.contains(&("s3".to_owned(), TokenKind::Compound)));
        assert!(t.contains(&("36kr".to_owned(), TokenKind::Compound)));
        assert!(t.contains(&("kr".to_owned(), TokenKind::Piece)));
        assert!(t.contains(&("36".to_owned(), TokenKind::Piece)));
        assert!(!t.iter().any(|(w, _)| w == "s"));
        let t = tokens("JavaScript");
        assert_eq!(
            t.last(),
            Some(&("javascript".to_owned(), TokenKind::Compound))
        );
    }

    #[test]
    fn cjk_unigrams_and_bigrams() {
        let t = tokens("查询天气");
        let grams: Vec<&str> = t.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(grams, ["查", "查询", "询", "询天", "天", "天气", "气"]);
        assert_eq!(t[1].1, TokenKind::CjkBigram);
        assert_eq!(t[0].1, TokenKind::CjkUnigram);
    }

    #[test]
    fn mixed_scripts_and_full_width() {
        let t = words("获取ＢＢＣ新闻，English words");
        assert_eq!(t, ["bbc", "english", "words"]);
        let t = tokens("12306余票");
        assert_eq!(t[0], ("12306".to_owned(), TokenKind::Word));
        assert_eq!(t[1], ("余".to_owned(), TokenKind::CjkUnigram));
    }

    #[test]
    fn garbage_yields_nothing() {
        assert!(tokens("").is_empty());
        assert!(tokens("  ,.;!! -- __ ").is_empty());
        assert!(tokens("a b c 1 2").is_empty());
        assert!(tokens("🙂🙂").is_empty());
    }
}
