//! Plain BM25 (k1 = 1.2, b = 0.75) over one bag of words per tool, with
//! lowercase alphanumeric tokens: the baseline our ranking is measured against.
//! No stemming, stopwords, synonyms or fields, on purpose.

use std::collections::HashMap;

use super::{SearchDoc, SearchHit, index::idf, score_scratch::ScoreScratch, top_k::TopK};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The BM25 baseline; same API as [`super::SearchIndex`], raw BM25 scores.
///
/// ```
/// use quiver_view::search::{Bm25Index, SearchDoc};
/// let docs = [SearchDoc { name: "get_weather".into(), description: "Weather now".into(), ..SearchDoc::default() }];
/// assert_eq!(Bm25Index::build(&docs).search("weather", 3)[0].doc, 0);
/// ```
#[derive(Debug)]
pub struct Bm25Index {
    vocabulary: HashMap<Box<str>, u32>,
    /// Per term: IDF and (doc, saturated length-normalised tf).
    postings: Vec<(f32, Vec<(u32, f32)>)>,
    docs: usize,
}

impl Bm25Index {
    /// Indexes `docs` (all fields in one bag of words).
    pub fn build(docs: &[SearchDoc]) -> Bm25Index {
        let mut vocabulary: HashMap<Box<str>, u32> = HashMap::new();
        let mut doc_terms: Vec<(HashMap<u32, f32>, f32)> = Vec::with_capacity(docs.len());
        for doc in docs {
            let mut freqs: HashMap<u32, f32> = HashMap::new();
            let mut length = 0.0;
            let params = doc
                .params
                .iter()
                .flat_map(|p| [p.name.as_str(), p.description.as_str()]);
            let texts = [
                doc.name.as_str(),
                doc.description.as_str(),
                doc.server.as_str(),
                doc.server_description.as_str(),
            ];
            for text in texts.into_iter().chain(params) {
                for_each_token(text, |token| {
                    let next = vocabulary.len() as u32;
                    let id = *vocabulary.entry(token.into()).or_insert(next);
                    *freqs.entry(id).or_default() += 1.0;
                    length += 1.0;
                });
            }
            doc_terms.push((freqs, length));
        }
        let n = docs.len();
        let average = if n == 0 {
            1.0
        } else {
            (doc_terms.iter().map(|(_, l)| l).sum::<f32>() / n as f32).max(1.0)
        };
        let mut lists: Vec<Vec<(u32, f32)>> = (0..vocabulary.len()).map(|_| Vec::new()).collect();
        for (d, (freqs, length)) in doc_terms.iter().enumerate() {
            let norm = 1.0 - B + B * length / average;
            let mut terms: Vec<_> = freqs.iter().collect();
            terms.sort_unstable_by_key(|(t, _)| **t);
            for (&term, &tf) in terms {
                lists[term as usize].push((d as u32, tf * (K1 + 1.0) / (tf + K1 * norm)));
            }
        }
        Bm25Index {
            vocabulary,
            postings: lists.into_iter().map(|l| (idf(n, l.len()), l)).collect(),
            docs: n,
        }
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether no tools are indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The `limit` best tools for `query` by BM25, best first; ties go to the
    /// lower document index.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.docs == 0 {
            return Vec::new();
        }
        let mut terms: Vec<(u32, f32)> = Vec::new();
        for_each_token(query, |token| {
            if let Some(&id) = self.vocabulary.get(token) {
                match terms.iter_mut().find(|(t, _)| *t == id) {
                    Some((_, count)) => *count += 1.0,
                    None => terms.push((id, 1.0)),
                }
            }
        });
        if terms.is_empty() {
            return Vec::new();
        }
        ScoreScratch::with(self.docs, |scratch| {
            for (term, count) in terms {
                let (idf, list) = &self.postings[term as usize];
                for &(doc, weight) in list {
                    let score = &mut scratch.score[doc as usize];
                    if *score == 0.0 {
                        scratch.touched.push(doc);
                    }
                    *score += count * idf * weight;
                }
            }
            let mut top = TopK::new(limit);
            for &doc in &scratch.touched {
                top.push(doc, scratch.score[doc as usize]);
            }
            scratch.reset();
            top.into_hits()
        })
    }
}

/// Lowercase runs of alphanumeric characters.
fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let mut token = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            token.extend(c.to_lowercase());
        } else if !token.is_empty() {
            f(&token);
            token.clear();
        }
    }
    if !token.is_empty() {
        f(&token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, description: &str) -> SearchDoc {
        SearchDoc {
            name: name.into(),
            description: description.into(),
            ..SearchDoc::default()
        }
    }

    #[test]
    fn ranks_by_bm25() {
        let docs = [
            doc("a", "weather weather forecast"),
            doc("b", "weather"),
            doc("c", "stock prices"),
        ];
        let index = Bm25Index::build(&docs);
        let hits = index.search("weather forecast", 10);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [0, 1]);
        assert!(index.search("unknown", 10).is_empty());
        assert!(index.search("weather", 0).is_empty());
        assert_eq!(index.len(), 3);
    }

    #[test]
    fn tokens_are_lowercase_alphanumeric_runs() {
        let mut tokens = Vec::new();
        for_each_token("get_Weather-now 3d 天气", |t| tokens.push(t.to_owned()));
        assert_eq!(tokens, ["get", "weather", "now", "3d", "天气"]);
    }
}
