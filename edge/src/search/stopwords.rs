//! Words too common to say anything about which tool is wanted: English
//! function words, the filler of requests ("please", "I want to") and of tool
//! descriptions ("a given", "the specified"), and CJK function characters.

/// Whether the lowercase word `word` is dropped from documents and queries.
pub fn is_stopword(word: &str) -> bool {
    ENGLISH.binary_search(&word).is_ok()
}

/// Whether a single CJK character is a function character (的, 了, 是…),
/// dropped as a unigram (bigrams containing it are kept).
pub fn is_cjk_stop_char(c: &str) -> bool {
    CJK.contains(&c)
}

/// Sorted, for binary search (a unit test checks the order).
const ENGLISH: &[&str] = &[
    "a", "able", "about", "above", "after", "again", "all", "also", "am", "an", "and", "another",
    "any", "anything", "are", "around", "as", "at", "available", "based", "be", "been", "before",
    "being", "both", "but", "by", "can", "could", "currently", "did", "do", "does", "doing",
    "during", "each", "eg", "either", "else", "etc", "ever", "every", "for", "from", "given",
    "going", "gonna", "had", "has", "have", "having", "he", "hello", "help", "her", "here", "hers",
    "him", "his", "how", "however", "i", "ie", "if", "im", "in", "into", "is", "it", "its",
    "itself", "just", "kindly", "let", "lets", "like", "may", "mcp", "me", "might", "mine", "more",
    "most", "much", "must", "my", "myself", "need", "needs", "no", "nor", "of", "often",
    "on", "once", "one", "only", "onto", "or", "other", "our", "ours", "out", "over", "own",
    "please", "provided", "provides", "quite", "rather", "really", "same", "she", "should",
    "so", "some", "somebody", "someone", "something", "specific", "specified", "such", "than",
    "thank", "thanks", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
    "this", "those", "though", "through", "thus", "to", "too", "tool", "tools", "toward",
    "towards", "under", "until", "upon", "us", "use", "used", "uses", "using", "very", "via",
    "wanna", "want", "wants", "was", "way", "we", "were", "what", "whatever", "when", "where",
    "whether", "which", "while", "who", "whom", "whose", "why", "will", "with", "within",
    "without", "would", "yet", "you", "your", "yours", "yourself",
];

const CJK: &[&str] = &[
    "的", "了", "是", "在", "和", "与", "及", "或", "等", "之", "其", "为", "以", "并", "将",
    "把", "被", "从", "对", "于", "也", "都", "就", "而", "吗", "呢", "吧", "啊", "我", "你",
    "他", "她", "它", "们", "这", "那", "个", "一", "下", "请", "帮", "想", "要", "能", "可",
    "如", "该", "此", "所", "有", "中",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_list_is_sorted_and_unique() {
        assert!(ENGLISH.windows(2).all(|w| w[0] < w[1]), "keep ENGLISH sorted");
    }

    #[test]
    fn recognises_stopwords() {
        assert!(is_stopword("the"));
        assert!(is_stopword("please"));
        assert!(!is_stopword("weather"));
        assert!(!is_stopword("new"));
        assert!(!is_stopword("get"));
        assert!(is_cjk_stop_char("的"));
        assert!(!is_cjk_stop_char("天"));
    }
}
