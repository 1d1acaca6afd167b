//! Building a [`SearchIndex`]: documents are analysed field by field, then
//! postings are weighted (BM25F) once every field's average length is known.

use std::collections::HashMap;

use super::{Posting, Postings, SearchIndex, idf, normalize_name};
use crate::search::{analyzer::Analyzer, doc::SearchDoc, tokenizer::TokenKind};

/// The fields of a tool, in the order of the tables below.
#[derive(Debug, Clone, Copy)]
enum Field {
    Name = 0,
    Description = 1,
    ParamName = 2,
    ParamDescription = 3,
    ServerName = 4,
    ServerDescription = 5,
    /// The first sentence of the description, which usually says what the
    /// tool does; the rest is detail (arguments, caveats, examples).
    Summary = 6,
}

const FIELDS: usize = 7;
/// How much a match in each field counts. The name says what a tool does in
/// two or three words; parameters and the server only hint at it.
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.0, 0.6, 0.3, 1.0, 0.4, 0.8];
/// BM25 length normalisation per field: short fields (names) barely need it.
const FIELD_B: [f32; FIELDS] = [0.3, 0.75, 0.5, 0.75, 0.2, 0.75, 0.5];
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// The first sentence of a description (at most about 300 bytes).
fn summary(description: &str) -> &str {
    let text = description.trim_start();
    let mut end = text.len().min(300);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    for stop in [". ", ".\n", "\n\n", "。", "！", "？"] {
        if let Some(i) = text[..end].find(stop) {
            end = i;
        }
    }
    &text[..end]
}

impl SearchIndex {
    /// Indexes `docs`; hits refer to them by position.
    pub fn build(docs: &[SearchDoc]) -> SearchIndex {
        let mut builder = IndexBuilder::default();
        for doc in docs {
            builder.add(doc);
        }
        builder.finish()
    }
}

/// Accumulates documents, then computes postings once field lengths are known.
#[derive(Default)]
pub(crate) struct IndexBuilder {
    analyzer: Analyzer,
    vocabulary: HashMap<Box<str>, u32>,
    docs: Vec<BuiltDoc>,
    names: Vec<(String, String)>,
    param_names: HashMap<Box<str>, Vec<u32>>,
    /// Scratch for the document being added.
    term_freqs: HashMap<u32, [f32; FIELDS]>,
}

struct BuiltDoc {
    terms: Vec<(u32, [f32; FIELDS])>,
    lengths: [f32; FIELDS],
    name_terms: Vec<u32>,
}

impl IndexBuilder {
    pub(crate) fn add(&mut self, doc: &SearchDoc) {
        let mut lengths = [0.0; FIELDS];
        let mut name_terms = Vec::new();
        self.add_field(Field::Name, &doc.name, &mut lengths, Some(&mut name_terms));
        self.add_field(Field::Description, &doc.description, &mut lengths, None);
        self.add_field(
            Field::Summary,
            summary(&doc.description),
            &mut lengths,
            None,
        );
        for param in &doc.params {
            self.add_field(Field::ParamName, &param.name, &mut lengths, None);
            self.add_field(
                Field::ParamDescription,
                &param.description,
                &mut lengths,
                None,
            );
        }
        self.add_field(Field::ServerName, &doc.server, &mut lengths, None);
        self.add_field(
            Field::ServerDescription,
            &doc.server_description,
            &mut lengths,
            None,
        );
        name_terms.sort_unstable();
        name_terms.dedup();
        let mut terms: Vec<_> = self.term_freqs.drain().collect();
        terms.sort_unstable_by_key(|(t, _)| *t);
        self.docs.push(BuiltDoc {
            terms,
            lengths,
            name_terms,
        });
        let index = self.names.len() as u32;
        for param in &doc.params {
            let name = normalize_name(&param.name);
            if name.chars().count() >= 4 {
                let docs = self.param_names.entry(name.into()).or_default();
                if docs.last() != Some(&index) {
                    docs.push(index);
                }
            }
        }
        self.names.push((doc.server.clone(), doc.name.clone()));
    }

    fn add_field(
        &mut self,
        field: Field,
        text: &str,
        lengths: &mut [f32; FIELDS],
        mut name_terms: Option<&mut Vec<u32>>,
    ) {
        let f = field as usize;
        let vocabulary = &mut self.vocabulary;
        let term_freqs = &mut self.term_freqs;
        self.analyzer.analyze(text, |term, kind| {
            let next = vocabulary.len() as u32;
            let id = *vocabulary.entry(term.into()).or_insert(next);
            term_freqs.entry(id).or_insert([0.0; FIELDS])[f] += 1.0;
            lengths[f] += match kind {
                TokenKind::Word | TokenKind::Piece => 1.0,
                // Chinese words are about two characters: count a bigram as half a word.
                TokenKind::CjkBigram => 0.5,
                TokenKind::Compound | TokenKind::CjkUnigram => 0.0,
            };
            if matches!(kind, TokenKind::Word | TokenKind::Piece)
                && let Some(names) = name_terms.as_deref_mut()
            {
                names.push(id);
            }
        });
    }

    pub(crate) fn finish(self) -> SearchIndex {
        let n = self.docs.len();
        let mut average = [0.0f32; FIELDS];
        for doc in &self.docs {
            for (a, l) in average.iter_mut().zip(doc.lengths) {
                *a += l;
            }
        }
        for a in &mut average {
            *a = if n > 0 && *a > 0.0 {
                *a / n as f32
            } else {
                1.0
            };
        }

        let mut term_lists: Vec<Vec<Posting>> =
            (0..self.vocabulary.len()).map(|_| Vec::new()).collect();
        for (d, doc) in self.docs.iter().enumerate() {
            let norm: [f32; FIELDS] = std::array::from_fn(|f| {
                1.0 - FIELD_B[f] + FIELD_B[f] * doc.lengths[f] / average[f]
            });
            for (term, freqs) in &doc.terms {
                let tf: f32 = (0..FIELDS)
                    .map(|f| FIELD_WEIGHT[f] * freqs[f] / norm[f])
                    .sum();
                term_lists[*term as usize].push(Posting {
                    doc: d as u32,
                    weight: tf / (K1 + tf),
                });
            }
        }
        let terms: Vec<Postings> = term_lists
            .into_iter()
            .map(|list| Postings {
                idf: idf(n, list.len()),
                list: list.into_boxed_slice(),
            })
            .collect();
        let mut name_offsets = Vec::with_capacity(n + 1);
        let mut name_terms = Vec::new();
        name_offsets.push(0);
        for doc in &self.docs {
            name_terms.extend(doc.name_terms.iter().map(|&t| (t, terms[t as usize].idf)));
            name_offsets.push(name_terms.len() as u32);
        }

        let mut exact_names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        let mut sorted_names = Vec::with_capacity(n);
        for (d, (server, name)) in self.names.iter().enumerate() {
            let name = normalize_name(name);
            let qualified = format!("{}{}", normalize_name(server), name);
            exact_names
                .entry(qualified.into())
                .or_default()
                .push(d as u32);
            if !name.is_empty() {
                exact_names
                    .entry(name.as_str().into())
                    .or_default()
                    .push(d as u32);
                sorted_names.push((name.into_boxed_str(), d as u32));
            }
        }
        for docs in exact_names.values_mut() {
            docs.dedup();
        }
        sorted_names.sort_unstable();

        SearchIndex {
            vocabulary: self.vocabulary,
            terms,
            name_offsets,
            name_terms,
            exact_names,
            sorted_names,
            param_names: self.param_names,
            docs: n,
        }
    }
}
