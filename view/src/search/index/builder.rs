//! Building a [`SearchIndex`]: documents are analysed field by field into raw
//! per-field term counts and field lengths. Nothing here depends on which
//! tools a view sees; weights are taken at query time over a [`super::Subset`].
//!
//! [`SearchIndex::update`] is how a new catalogue version is indexed: a
//! document whose text is unchanged keeps its postings (copied from the
//! previous index, never analysed again), and only new or changed documents
//! are analysed. A full build is an update of the empty index, so both paths
//! give the same index.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{
    BITSET_SHARE, DocDigest, FIELDS, Field, Posting, Postings, SearchIndex, normalize_name,
};
use crate::{
    search::{analyzer::Analyzer, doc::SearchDoc, tokenizer::TokenKind},
    tool_set::ToolSet,
};

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

/// The digest of everything of `doc` the index reads.
fn digest(doc: &SearchDoc) -> DocDigest {
    let mut hash = Sha256::new();
    let mut field = |text: &str| {
        hash.update((text.len() as u64).to_le_bytes());
        hash.update(text.as_bytes());
    };
    field(&doc.name);
    field(&doc.server);
    field(&doc.server_description);
    field(&doc.description);
    for param in &doc.params {
        field(&param.name);
        field(&param.description);
    }
    let full: [u8; 32] = hash.finalize().into();
    let mut short = [0u8; 16];
    short.copy_from_slice(&full[..16]);
    short
}

impl SearchIndex {
    /// Indexes `docs`; hits refer to them by position.
    pub fn build(docs: &[SearchDoc]) -> SearchIndex {
        SearchIndex::empty().update(docs)
    }

    /// An index of nothing.
    fn empty() -> SearchIndex {
        SearchIndex {
            vocabulary: HashMap::new(),
            terms: Vec::new(),
            lengths: Vec::new(),
            name_offsets: vec![0],
            name_terms: Vec::new(),
            exact_names: HashMap::new(),
            sorted_names: Vec::new(),
            param_names: HashMap::new(),
            digests: Vec::new(),
            large_counts: HashMap::new(),
            everything: super::Subset {
                set: ToolSet::empty(0),
                average: [1.0; FIELDS],
            },
            analysed: 0,
        }
    }

    /// The index of `docs` (hits refer to them by position), taking the
    /// postings of every document whose text this index already holds
    /// instead of analysing it again. Ranks exactly as
    /// [`SearchIndex::build`] of `docs` does; this index is unchanged.
    pub fn update(&self, docs: &[SearchDoc]) -> SearchIndex {
        let digests: Vec<DocDigest> = docs.iter().map(digest).collect();
        let mut old_by_digest: HashMap<DocDigest, u32> = HashMap::new();
        for (d, g) in self.digests.iter().enumerate() {
            old_by_digest.entry(*g).or_insert(d as u32);
        }
        let source: Vec<Option<u32>> = digests
            .iter()
            .map(|g| old_by_digest.get(g).copied())
            .collect();
        // Old document → the new documents that take its postings.
        let mut takers: Vec<Vec<u32>> = vec![Vec::new(); self.len()];
        let mut builder = IndexBuilder {
            vocabulary: self.vocabulary.clone(),
            ..IndexBuilder::default()
        };
        let mut built: Vec<Option<BuiltDoc>> = Vec::with_capacity(docs.len());
        for (d, doc) in docs.iter().enumerate() {
            match source[d] {
                Some(old) => {
                    takers[old as usize].push(d as u32);
                    built.push(None);
                }
                None => built.push(Some(builder.analyse(doc))),
            }
        }

        let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); builder.vocabulary.len()];
        let mut large_counts = HashMap::new();
        for (term, postings) in self.terms.iter().enumerate() {
            for posting in postings.list.iter() {
                for &doc in &takers[posting.doc as usize] {
                    lists[term].push(Posting { doc, ..*posting });
                    if let Some(counts) = self.large_counts.get(&(term as u32, posting.doc)) {
                        large_counts.insert((term as u32, doc), *counts);
                    }
                }
            }
        }
        for (d, doc) in built.iter().enumerate() {
            let Some(doc) = doc else { continue };
            for (term, counts) in &doc.terms {
                let posting = Posting {
                    doc: d as u32,
                    counts: counts.map(|c| {
                        if c >= f32::from(u16::MAX) {
                            u16::MAX
                        } else {
                            c as u16
                        }
                    }),
                };
                if posting.counts.contains(&u16::MAX) {
                    large_counts.insert((*term, d as u32), *counts);
                }
                lists[*term as usize].push(posting);
            }
        }

        // Terms no document holds any more are dropped; ids are compacted.
        let mut new_id: Vec<u32> = vec![u32::MAX; lists.len()];
        let mut kept = 0u32;
        for (term, list) in lists.iter().enumerate() {
            if !list.is_empty() {
                new_id[term] = kept;
                kept += 1;
            }
        }
        let vocabulary: HashMap<Box<str>, u32> = builder
            .vocabulary
            .into_iter()
            .filter_map(|(word, id)| {
                let id = new_id[id as usize];
                (id != u32::MAX).then_some((word, id))
            })
            .collect();
        let large_counts = large_counts
            .into_iter()
            .map(|((term, doc), counts)| ((new_id[term as usize], doc), counts))
            .collect();
        let n = docs.len();
        let terms: Vec<Postings> = lists
            .into_iter()
            .filter(|list| !list.is_empty())
            .map(|mut list| {
                if !list.is_sorted_by_key(|p| p.doc) {
                    list.sort_unstable_by_key(|p| p.doc);
                }
                let bits = (list.len() * BITSET_SHARE >= n).then(|| {
                    let mut words = vec![0u64; n.div_ceil(64)];
                    for p in &list {
                        words[p.doc as usize / 64] |= 1 << (p.doc % 64);
                    }
                    words.into_boxed_slice()
                });
                Postings {
                    list: list.into_boxed_slice(),
                    bits,
                }
            })
            .collect();

        let mut lengths = Vec::with_capacity(n);
        let mut name_offsets = Vec::with_capacity(n + 1);
        let mut name_terms = Vec::new();
        name_offsets.push(0);
        for (d, doc) in built.iter().enumerate() {
            match (doc, source[d]) {
                (Some(doc), _) => {
                    lengths.push(doc.lengths);
                    name_terms.extend(doc.name_terms.iter().map(|&t| new_id[t as usize]));
                }
                (None, Some(old)) => {
                    let old = old as usize;
                    lengths.push(self.lengths[old]);
                    let range =
                        self.name_offsets[old] as usize..self.name_offsets[old + 1] as usize;
                    name_terms.extend(self.name_terms[range].iter().map(|&t| new_id[t as usize]));
                }
                (None, None) => unreachable!("every document is analysed or reused"),
            }
            name_offsets.push(name_terms.len() as u32);
        }

        let analysed = built.iter().filter(|d| d.is_some()).count();
        let (exact_names, sorted_names, param_names) = names_of(docs);
        let mut index = SearchIndex {
            vocabulary,
            terms,
            lengths,
            name_offsets,
            name_terms,
            exact_names,
            sorted_names,
            param_names,
            digests,
            large_counts,
            everything: super::Subset {
                set: ToolSet::empty(0),
                average: [1.0; FIELDS],
            },
            analysed,
        };
        index.everything = index.subset(ToolSet::full(n));
        index
    }
}

/// The name tables of `docs`: exact names (`name` and `server + name`),
/// sorted names for prefixes, and parameter names.
#[allow(clippy::type_complexity)]
fn names_of(
    docs: &[SearchDoc],
) -> (
    HashMap<Box<str>, Vec<u32>>,
    Vec<(Box<str>, u32)>,
    HashMap<Box<str>, Vec<u32>>,
) {
    let mut exact_names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
    let mut sorted_names = Vec::with_capacity(docs.len());
    let mut param_names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
    for (d, doc) in docs.iter().enumerate() {
        let d = d as u32;
        let name = normalize_name(&doc.name);
        let qualified = format!("{}{}", normalize_name(&doc.server), name);
        exact_names.entry(qualified.into()).or_default().push(d);
        if !name.is_empty() {
            exact_names.entry(name.as_str().into()).or_default().push(d);
            sorted_names.push((name.into_boxed_str(), d));
        }
        for param in &doc.params {
            let name = normalize_name(&param.name);
            if name.chars().count() >= 4 {
                let docs = param_names.entry(name.into()).or_default();
                if docs.last() != Some(&d) {
                    docs.push(d);
                }
            }
        }
    }
    for docs in exact_names.values_mut() {
        docs.dedup();
    }
    sorted_names.sort_unstable();
    (exact_names, sorted_names, param_names)
}

/// Analyses documents into terms, growing one vocabulary.
#[derive(Default)]
struct IndexBuilder {
    analyzer: Analyzer,
    vocabulary: HashMap<Box<str>, u32>,
    /// Scratch for the document being analysed.
    term_freqs: HashMap<u32, [f32; FIELDS]>,
}

/// One document, analysed.
struct BuiltDoc {
    /// Its terms (ascending) with their count in each field.
    terms: Vec<(u32, [f32; FIELDS])>,
    lengths: [f32; FIELDS],
    /// The words of its name, in the order they first appear.
    name_terms: Vec<u32>,
}

impl IndexBuilder {
    fn analyse(&mut self, doc: &SearchDoc) -> BuiltDoc {
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
        let mut terms: Vec<_> = self.term_freqs.drain().collect();
        terms.sort_unstable_by_key(|(t, _)| *t);
        BuiltDoc {
            terms,
            lengths,
            name_terms,
        }
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
            let id = match vocabulary.get(term) {
                Some(&id) => id,
                None => {
                    let next = vocabulary.len() as u32;
                    vocabulary.insert(term.into(), next);
                    next
                }
            };
            term_freqs.entry(id).or_insert([0.0; FIELDS])[f] += 1.0;
            lengths[f] += match kind {
                TokenKind::Word | TokenKind::Piece => 1.0,
                // Chinese words are about two characters: count a bigram as half a word.
                TokenKind::CjkBigram => 0.5,
                TokenKind::Compound | TokenKind::CjkUnigram => 0.0,
            };
            if matches!(kind, TokenKind::Word | TokenKind::Piece)
                && let Some(names) = name_terms.as_deref_mut()
                && !names.contains(&id)
            {
                names.push(id);
            }
        });
    }
}
