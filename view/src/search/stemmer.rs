//! A small English stemmer in the style of Porter's suffix stripper, so that
//! "creating", "created" and "creates" meet "create" in the index. It only
//! touches lowercase ASCII words; anything else is returned unchanged.
//!
//! It follows the shape of Porter's algorithm (measure-guarded suffix rules in
//! five steps) with a few changes for tool vocabulary: British `-ise` spellings
//! fold into `-ize`, a handful of irregular words are mapped first, and words
//! whose trailing `s` is not a plural ("news", "status") are left alone.

use std::sync::OnceLock;

/// Which stemmer [`stem`] runs: chosen once per process, from
/// `QUIVER_SEARCH_STEMMER` (`porter`, the default, or `snowball`), so that
/// `quiver bench lexicon` can compare them on the public benchmarks. Every
/// node of a cluster must run the same one (stems are index terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StemmerKind {
    /// The Porter-style stemmer in this file.
    Porter,
    /// Snowball's English stemmer (`rust-stemmers`).
    Snowball,
}

impl StemmerKind {
    /// The process's stemmer.
    pub fn selected() -> StemmerKind {
        static KIND: OnceLock<StemmerKind> = OnceLock::new();
        *KIND.get_or_init(|| match std::env::var("QUIVER_SEARCH_STEMMER").as_deref() {
            Ok("snowball") => StemmerKind::Snowball,
            _ => StemmerKind::Porter,
        })
    }
}

/// Returns the stem of `word`.
///
/// `word` should already be lowercase; words that are not pure ASCII letters,
/// or are shorter than three letters, come back as they are.
///
/// ```
/// use quiver_view::search::stem;
/// assert_eq!(stem("creating"), stem("created"));
/// assert_eq!(stem("queries"), stem("query"));
/// assert_eq!(stem("news"), "news");
/// ```
pub fn stem(word: &str) -> String {
    if word.len() < 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    if StemmerKind::selected() == StemmerKind::Snowball {
        static SNOWBALL: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
        return SNOWBALL
            .get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
            .stem(word)
            .into_owned();
    }
    if let Some(fixed) = irregular(word) {
        return fixed.to_owned();
    }
    let mut w = Word::new(word);
    w.fold_british_ise();
    w.step1a();
    w.step1b();
    w.step1c();
    w.step2();
    w.step3();
    w.step4();
    w.step5();
    w.into_string()
}

/// Words the suffix rules would get wrong, mapped straight to their stem.
fn irregular(word: &str) -> Option<&'static str> {
    Some(match word {
        // A trailing `s` that is not a plural.
        "news" => "news",
        "series" => "series",
        "species" => "species",
        "https" => "https",
        "always" => "always",
        "ios" => "ios",
        "macos" => "macos",
        // Irregular forms common in tool descriptions.
        "analysis" | "analyses" | "analyse" | "analysing" | "analysed" | "analyze"
        | "analyzing" | "analyzed" | "analyzer" | "analyser" | "analytics" | "analytic"
        | "analytical" => "analyz",
        "conversion" | "conversions" => "convert",
        // Words Porter would merge with an unrelated verb ("terminal" and
        // "terminate" both become "termin").
        "terminal" | "terminals" => "terminal",
        "general" | "generally" => "general",
        "national" => "national",
        "children" => "child",
        "people" => "person",
        "indices" => "index",
        "data" => "data",
        "media" => "media",
        "was" | "were" => "be",
        "ran" => "run",
        "wrote" | "written" => "write",
        "made" => "make",
        "found" => "find",
        "sent" => "send",
        "took" | "taken" => "take",
        "gave" | "given" => "give",
        "got" | "gotten" => "get",
        "bought" => "buy",
        "sold" => "sell",
        "built" => "build",
        "left" => "left",
        _ => return None,
    })
}

/// The word being stemmed, as bytes (it is known to be ASCII lowercase).
struct Word {
    b: Vec<u8>,
}

impl Word {
    fn new(word: &str) -> Self {
        Word {
            b: word.as_bytes().to_vec(),
        }
    }

    fn into_string(self) -> String {
        // Only ASCII bytes are ever written.
        String::from_utf8(self.b).unwrap_or_default()
    }

    /// Whether the letter at `i` is a consonant ('y' after a consonant is a vowel).
    fn is_consonant(&self, i: usize) -> bool {
        match self.b[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.is_consonant(i - 1),
            _ => true,
        }
    }

    /// Porter's measure m of the first `len` letters: the number of
    /// vowel-consonant sequences in `[C](VC)^m[V]`.
    fn measure(&self, len: usize) -> usize {
        let mut m = 0;
        let mut i = 0;
        while i < len && self.is_consonant(i) {
            i += 1;
        }
        loop {
            while i < len && !self.is_consonant(i) {
                i += 1;
            }
            if i >= len {
                return m;
            }
            while i < len && self.is_consonant(i) {
                i += 1;
            }
            m += 1;
            if i >= len {
                return m;
            }
        }
    }

    fn has_vowel(&self, len: usize) -> bool {
        (0..len).any(|i| !self.is_consonant(i))
    }

    fn ends_double_consonant(&self, len: usize) -> bool {
        len >= 2 && self.b[len - 1] == self.b[len - 2] && self.is_consonant(len - 1)
    }

    /// consonant-vowel-consonant at the end, the last not w, x or y ("hop", not "how").
    fn ends_cvc(&self, len: usize) -> bool {
        len >= 3
            && self.is_consonant(len - 3)
            && !self.is_consonant(len - 2)
            && self.is_consonant(len - 1)
            && !matches!(self.b[len - 1], b'w' | b'x' | b'y')
    }

    fn ends_with(&self, suffix: &str) -> bool {
        self.b.ends_with(suffix.as_bytes())
    }

    /// Length of the stem left if `suffix` were removed (the word must end with it).
    fn stem_len(&self, suffix: &str) -> usize {
        self.b.len() - suffix.len()
    }

    fn replace_suffix(&mut self, suffix: &str, with: &str) {
        let keep = self.stem_len(suffix);
        self.b.truncate(keep);
        self.b.extend_from_slice(with.as_bytes());
    }

    /// Applies the first rule of `rules` whose suffix matches, if the remaining
    /// stem has a measure above `min_measure`. Stops at the first matching
    /// suffix even when its condition fails, as Porter does.
    fn apply_rules(&mut self, rules: &[(&str, &str)], min_measure: usize) {
        for (suffix, with) in rules {
            if self.ends_with(suffix) {
                if self.measure(self.stem_len(suffix)) > min_measure {
                    self.replace_suffix(suffix, with);
                }
                return;
            }
        }
    }

    /// "organise" → "organize", "summarising" → "summarizing": both spellings
    /// then stem alike. Applied to both sides of the index, so a rare false
    /// fold ("promise" → "promize") is harmless.
    fn fold_british_ise(&mut self) {
        const FOLDS: [(&str, &str); 6] = [
            ("isation", "ization"),
            ("isations", "izations"),
            ("ising", "izing"),
            ("ised", "ized"),
            ("ises", "izes"),
            ("ise", "ize"),
        ];
        if self.b.len() < 6 {
            return;
        }
        for (from, to) in FOLDS {
            if self.ends_with(from) && self.stem_len(from) >= 3 {
                self.replace_suffix(from, to);
                return;
            }
        }
    }

    /// Plurals: "caresses" → "caress", "ponies" → "poni", "cats" → "cat".
    fn step1a(&mut self) {
        if self.ends_with("sses") {
            self.replace_suffix("sses", "ss");
        } else if self.ends_with("ies") {
            self.replace_suffix("ies", "i");
        } else if self.ends_with("ss") || self.ends_with("us") || self.ends_with("is") {
            // "class", "status", "basis": not plurals.
        } else if self.ends_with("s") && self.b.len() > 3 {
            self.b.pop();
        }
    }

    /// Past tense and gerunds: "agreed" → "agree", "hopping" → "hop".
    fn step1b(&mut self) {
        if self.ends_with("eed") {
            if self.measure(self.stem_len("eed")) > 0 {
                self.b.pop();
            }
            return;
        }
        let removed = if self.ends_with("ed") && self.has_vowel(self.stem_len("ed")) {
            self.b.truncate(self.stem_len("ed"));
            true
        } else if self.ends_with("ing") && self.has_vowel(self.stem_len("ing")) {
            self.b.truncate(self.stem_len("ing"));
            true
        } else {
            false
        };
        if !removed {
            return;
        }
        let len = self.b.len();
        if self.ends_with("at") || self.ends_with("bl") || self.ends_with("iz") {
            self.b.push(b'e');
        } else if self.ends_double_consonant(len) && !matches!(self.b[len - 1], b'l' | b's' | b'z')
        {
            self.b.pop();
        } else if self.measure(len) == 1 && self.ends_cvc(len) {
            self.b.push(b'e');
        }
    }

    /// Terminal y after a vowel-bearing stem becomes i: "query" and "queries" meet.
    fn step1c(&mut self) {
        let len = self.b.len();
        if self.ends_with("y") && self.has_vowel(len - 1) {
            self.b[len - 1] = b'i';
        }
    }

    /// Double suffixes to single ones: "relational" → "relate", "optimization" → "optimize".
    fn step2(&mut self) {
        const RULES: [(&str, &str); 21] = [
            ("ational", "ate"),
            ("tional", "tion"),
            ("enci", "ence"),
            ("anci", "ance"),
            ("izer", "ize"),
            ("abli", "able"),
            ("alli", "al"),
            ("entli", "ent"),
            ("eli", "e"),
            ("ousli", "ous"),
            ("ization", "ize"),
            ("ation", "ate"),
            ("ator", "ate"),
            ("alism", "al"),
            ("iveness", "ive"),
            ("fulness", "ful"),
            ("ousness", "ous"),
            ("aliti", "al"),
            ("iviti", "ive"),
            ("biliti", "ble"),
            ("logi", "log"),
        ];
        self.apply_rules(&RULES, 0);
    }

    /// "-icate", "-ative", "-alize", "-ful", "-ness".
    fn step3(&mut self) {
        const RULES: [(&str, &str); 7] = [
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ];
        self.apply_rules(&RULES, 0);
    }

    /// Removes a final derivational suffix from long stems: "adjustment" → "adjust".
    fn step4(&mut self) {
        const SUFFIXES: [&str; 18] = [
            "ement", "ment", "ance", "ence", "able", "ible", "ant", "ent", "ism", "ate", "iti",
            "ous", "ive", "ize", "al", "er", "ic", "ou",
        ];
        if self.ends_with("ion") {
            let len = self.stem_len("ion");
            // Porter asks for m > 1; m > 0 also folds "creation" and "action"
            // into "create" and "act", which tool descriptions need.
            if len > 0 && matches!(self.b[len - 1], b's' | b't') && self.measure(len) > 0 {
                self.b.truncate(len);
            }
            return;
        }
        for suffix in SUFFIXES {
            if self.ends_with(suffix) {
                if self.measure(self.stem_len(suffix)) > 1 {
                    self.b.truncate(self.stem_len(suffix));
                }
                return;
            }
        }
    }

    /// Tidies the end: drops a final e ("probate" → "probat") and a double l.
    fn step5(&mut self) {
        let len = self.b.len();
        if self.ends_with("e") {
            let m = self.measure(len - 1);
            if m > 1 || (m == 1 && !self.ends_cvc(len - 1)) {
                self.b.pop();
            }
        }
        let len = self.b.len();
        if self.ends_with("ll") && self.measure(len) > 1 {
            self.b.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[track_caller]
    fn same(words: &[&str]) {
        let first = stem(words[0]);
        for w in &words[1..] {
            assert_eq!(stem(w), first, "{w} vs {}", words[0]);
        }
    }

    #[test]
    fn inflections_meet() {
        same(&["create", "creates", "created", "creating", "creation"]);
        same(&["search", "searches", "searching", "searched"]);
        same(&["query", "queries", "queried"]);
        same(&["file", "files", "filed"]);
        same(&["run", "running", "runs"]);
        same(&["update", "updates", "updated", "updating"]);
        same(&["directory", "directories"]);
        same(&["image", "images"]);
        same(&["entity", "entities"]);
        same(&[
            "convert",
            "converts",
            "converting",
            "converted",
            "conversion",
        ]);
        same(&["calculate", "calculates", "calculation", "calculator"]);
        same(&["organize", "organise", "organization", "organisation"]);
        same(&["analysis", "analyze", "analyse", "analytics"]);
        same(&["terminate", "terminated", "terminating"]);
        same(&["generate", "generates", "generating", "generation"]);
        same(&["navigate", "navigation", "navigating"]);
        same(&["translate", "translation", "translating"]);
    }

    #[test]
    fn non_plurals_keep_their_s() {
        assert_eq!(stem("news"), "news");
        assert_ne!(stem("news"), stem("new"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("address"), stem("addresses"));
    }

    #[test]
    fn short_and_foreign_words_untouched() {
        assert_eq!(stem("is"), "is");
        assert_eq!(stem("s3"), "s3");
        assert_eq!(stem("天气"), "天气");
        assert_eq!(stem("café"), "café");
        assert_eq!(stem("string"), "string");
        assert_eq!(stem("need"), "need");
    }

    #[test]
    fn distinct_words_stay_distinct() {
        assert_ne!(stem("direction"), stem("directory"));
        assert_ne!(stem("price"), stem("prize"));
        assert_ne!(stem("note"), stem("node"));
        assert_ne!(stem("terminal"), stem("terminate"));
        assert_ne!(stem("general"), stem("generate"));
    }
}
