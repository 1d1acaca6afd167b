//! English stemming for the index, so that "creating", "created" and
//! "creates" meet "create": Snowball's English stemmer (`rust-stemmers`).
//! It replaced a hand-written Porter-style stemmer that did no better on the
//! public benchmarks (`quiver bench lexicon`, docs/benchmarks.md). Only
//! lowercase ASCII words of three letters or more are stemmed; anything else
//! (identifiers with digits, accented or CJK words) is returned unchanged.

use std::sync::OnceLock;

/// Returns the stem of `word`.
///
/// `word` should already be lowercase.
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
    static SNOWBALL: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    SNOWBALL
        .get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
        .stem(word)
        .into_owned()
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
        same(&["create", "creates", "created", "creating"]);
        same(&["search", "searches", "searching", "searched"]);
        same(&["query", "queries", "queried"]);
        same(&["file", "files", "filed"]);
        same(&["run", "running", "runs"]);
        same(&["update", "updates", "updated", "updating"]);
        same(&["directory", "directories"]);
        same(&["image", "images"]);
        same(&["entity", "entities"]);
        same(&["convert", "converts", "converting", "converted"]);
        same(&["generate", "generates", "generating", "generated"]);
        same(&["translate", "translates", "translating"]);
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
        assert_ne!(stem("general"), stem("generate"));
    }
}
