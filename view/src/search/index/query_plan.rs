//! A query analysed against one index: its words stemmed and weighted, split
//! or joined where the index writes them differently, each grown into a
//! concept with its relatives. Scoring the concepts is the index's job.

use super::{IdfMemo, SearchIndex, Subset, idf, normalize_name};
use crate::search::{
    analyzer::Analyzer,
    stemmer::stem,
    stopwords::is_stopword,
    synonyms::SynonymTable,
    tokenizer::{TokenKind, Tokenizer},
};

/// Query weight of a piece of a split query word when the whole word is a
/// known term ("GitHub" is searched as `github`, and only weakly as `git`, `hub`).
const PIECE_WEIGHT: f32 = 0.35;
/// Query weight of a single CJK character (bigrams carry Chinese words).
const CJK_UNIGRAM_WEIGHT: f32 = 0.25;
/// Query weight of each half of a split unknown word ("flowchart").
const SPLIT_WEIGHT: f32 = 0.8;
/// Weight of two query words joined into one indexed term ("mind map"),
/// standing in for each of the two words.
const JOINED_WEIGHT: f32 = 0.6;
/// Share of an unknown CJK bigram's weight that lowers displayed scores.
const UNKNOWN_BIGRAM_SHARE: f32 = 0.3;
/// Concepts beyond this many (the least important) are dropped from a query.
const MAX_CONCEPTS: usize = 64;

impl SearchIndex {
    /// Analyses a query into concepts (each query term with its relatives) and
    /// the normalised text for name matches, against the terms `subset`'s
    /// tools hold (a word only hidden tools use is unknown here).
    pub(crate) fn plan(&self, query: &str, subset: &Subset, idfs: &IdfMemo) -> QueryPlan {
        let mut analyzer = Analyzer::new();
        let mut mains: Vec<MainTerm> = Vec::new();
        let mut pieces: Vec<String> = Vec::new();
        analyzer.analyze_with_source(query, |source, term, kind| {
            if kind != TokenKind::Piece && kind != TokenKind::Compound {
                flush_pieces(&mut mains, &mut pieces, 1.0);
            }
            match kind {
                TokenKind::Word => {
                    add_main(&mut mains, term, source, 1.0, kind);
                }
                TokenKind::Piece => {
                    pieces.push(term.to_owned());
                }
                TokenKind::Compound => {
                    let known = self.term_in(term, subset).is_some();
                    flush_pieces(
                        &mut mains,
                        &mut pieces,
                        if known { PIECE_WEIGHT } else { 1.0 },
                    );
                    if known {
                        add_main(&mut mains, term, source, 1.0, kind);
                    }
                }
                TokenKind::CjkBigram => add_main(&mut mains, term, source, 1.0, kind),
                TokenKind::CjkUnigram => {
                    add_main(&mut mains, term, source, CJK_UNIGRAM_WEIGHT, kind)
                }
            }
        });
        flush_pieces(&mut mains, &mut pieces, 1.0);

        let synonyms = SynonymTable::builtin();
        let known = |term: &str| {
            self.term_in(term, subset).is_some()
                || synonyms
                    .related(term)
                    .iter()
                    .any(|(r, _)| self.term_in(r, subset).is_some())
        };
        // A CJK character inside a known bigram adds nothing but noise.
        let known_bigrams: Vec<&str> = mains
            .iter()
            .filter(|m| m.kind == TokenKind::CjkBigram && known(&m.term))
            .map(|m| m.term.as_str())
            .collect();
        let covered: Vec<bool> = mains
            .iter()
            .map(|m| {
                m.kind == TokenKind::CjkUnigram
                    && known_bigrams.iter().any(|b| b.contains(m.term.as_str()))
            })
            .collect();
        let mut mains: Vec<MainTerm> = mains
            .into_iter()
            .zip(covered)
            .filter(|(_, covered)| !covered)
            .map(|(m, _)| m)
            .collect();
        // An unknown word that the tools write as two ("flowchart" → flow chart).
        let mut split = Vec::new();
        for (i, main) in mains.iter().enumerate() {
            if main.kind == TokenKind::Word
                && !known(&main.term)
                && let Some((left, right)) = self.decompound(&main.source, subset)
            {
                split.push((i, left, right));
            }
        }
        for (i, left, right) in split.into_iter().rev() {
            let weight = mains[i].weight * SPLIT_WEIGHT;
            let source = mains[i].source.clone();
            mains.splice(
                i..=i,
                [(left, weight), (right, weight)].map(|(term, weight)| MainTerm {
                    term,
                    source: source.clone(),
                    weight,
                    kind: TokenKind::Piece,
                }),
            );
        }

        let is_main = |term: &str| mains.iter().any(|m| m.term == term);
        let mut concepts: Vec<Vec<(u32, f32)>> = Vec::with_capacity(mains.len());
        let mut merged = vec![false; mains.len()];
        for main in &mains {
            let mut members = Vec::new();
            let in_vocabulary = self.term_in(&main.term, subset);
            if let Some(id) = in_vocabulary {
                members.push((id, main.weight));
            }
            let related = synonyms.related(&main.term);
            // "vs" next to "compare": an unknown word whose meaning another query
            // word already carries would only count that meaning twice.
            if in_vocabulary.is_none() && related.iter().any(|(r, _)| is_main(r)) {
                merged[concepts.len()] = true;
                concepts.push(Vec::new());
                continue;
            }
            for (related, weight) in related {
                if is_main(related) {
                    continue;
                }
                if let Some(id) = self.term_in(related, subset) {
                    add_member(&mut members, id, main.weight * weight);
                }
            }
            concepts.push(members);
        }
        // Two query words that the tools write as one ("mind map" → mindmap,
        // "look up" → lookup): the joined term and its relatives stand in for
        // each of the two words, at a bit over half weight.
        let mut raw: Vec<String> = Vec::new();
        Tokenizer::new().tokenize(query, |token, kind| {
            if kind == TokenKind::Word {
                raw.push(token.to_owned());
            }
        });
        for pair in raw.windows(2) {
            let joined = stem(&format!("{}{}", pair[0], pair[1]));
            if is_main(&joined) {
                continue;
            }
            let mut stand_ins: Vec<(u32, f32)> = Vec::new();
            if let Some(id) = self.term_in(&joined, subset) {
                stand_ins.push((id, 1.0));
            }
            for (related, weight) in synonyms.related(&joined) {
                if let Some(id) = self.term_in(related, subset) {
                    add_member(&mut stand_ins, id, *weight);
                }
            }
            for word in pair {
                let term = stem(word);
                if let Some(i) = mains.iter().position(|m| m.term == term) {
                    for &(id, weight) in &stand_ins {
                        add_member(
                            &mut concepts[i],
                            id,
                            mains[i].weight * weight * JOINED_WEIGHT,
                        );
                    }
                }
            }
        }

        let mut plan = QueryPlan {
            normalized: normalize_name(query),
            identifiers: identifiers(query),
            ..QueryPlan::default()
        };
        // Query words no tool knows lower every score shown, not the ranking:
        // "create a github issue" must not look like a perfect match for a
        // tool named `create` in a catalogue without GitHub.
        let unseen = idf(subset.len(), 1);
        for ((main, members), merged) in mains.iter().zip(&concepts).zip(merged) {
            if members.is_empty() && !merged {
                let share = match main.kind {
                    TokenKind::CjkUnigram => 0.0,
                    // Most unknown bigrams straddle two words ("询天" of 查询天气).
                    TokenKind::CjkBigram => UNKNOWN_BIGRAM_SHARE,
                    _ => 1.0,
                };
                plan.unmatched += main.weight * unseen * share;
            }
        }
        let mut kept: Vec<(f32, Vec<(u32, f32)>)> = concepts
            .into_iter()
            .filter(|members| !members.is_empty())
            .map(|members| {
                let importance = members
                    .iter()
                    .map(|&(id, w)| w * idfs.of(self, id, subset))
                    .fold(0.0, f32::max);
                (importance, members)
            })
            .collect();
        if kept.len() > MAX_CONCEPTS {
            let mut importances: Vec<f32> = kept.iter().map(|(i, _)| *i).collect();
            importances.sort_by(|a, b| b.total_cmp(a));
            let threshold = importances[MAX_CONCEPTS - 1];
            kept.retain(|(i, _)| *i >= threshold);
            kept.truncate(MAX_CONCEPTS);
        }
        for (index, (importance, members)) in kept.into_iter().enumerate() {
            let top_weight = members.iter().map(|&(_, w)| w).fold(0.0, f32::max);
            plan.concepts.push(Concept { importance });
            plan.total += importance;
            for (term, weight) in members {
                plan.members.push(Member {
                    term,
                    concept: index as u16,
                    weight,
                    share: weight / top_weight,
                });
                plan.lookup.push((term, index as u16));
            }
        }
        plan.lookup.sort_unstable();

        plan
    }

    /// Splits an unknown ASCII word into two indexed terms, most balanced split
    /// first, each part at least three letters.
    fn decompound(&self, word: &str, subset: &Subset) -> Option<(String, String)> {
        if !word.is_ascii() || word.len() < 6 {
            return None;
        }
        let middle = word.len() / 2;
        let mut cuts: Vec<usize> = (3..=word.len() - 3).collect();
        cuts.sort_by_key(|&cut| cut.abs_diff(middle));
        cuts.into_iter().find_map(|cut| {
            let (left, right) = (stem(&word[..cut]), stem(&word[cut..]));
            let indexed = |t: &str| self.term_in(t, subset).is_some() && !is_stopword(t);
            (indexed(&left) && indexed(&right)).then_some((left, right))
        })
    }
}

/// A query, analysed against one index.
#[derive(Debug, Default)]
pub(crate) struct QueryPlan {
    pub(crate) concepts: Vec<Concept>,
    /// Grouped by concept, in concept order.
    pub(crate) members: Vec<Member>,
    /// (term, concept), sorted, for name matching.
    pub(crate) lookup: Vec<(u32, u16)>,
    /// Sum of the concepts' importances: the most a tool could score.
    pub(crate) total: f32,
    /// What the query words no tool knows would have weighed (for display).
    pub(crate) unmatched: f32,
    /// The whole query, normalised as names are.
    pub(crate) normalized: String,
    /// Identifier-like words of the query (`repo_path`, `getStory`), normalised.
    pub(crate) identifiers: Vec<String>,
}

/// One query term and its relatives: a tool scores the best of them.
#[derive(Debug)]
pub(crate) struct Concept {
    /// The most a member can contribute (query weight × IDF).
    pub(crate) importance: f32,
}

#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) term: u32,
    pub(crate) concept: u16,
    pub(crate) weight: f32,
    /// `weight` relative to the concept's heaviest member: how much of the
    /// concept a match on this member covers.
    pub(crate) share: f32,
}

/// A term of the query itself (before relatives are added).
#[derive(Debug)]
struct MainTerm {
    term: String,
    /// The lowercase token it was stemmed from.
    source: String,
    weight: f32,
    kind: TokenKind,
}

fn add_main(mains: &mut Vec<MainTerm>, term: &str, source: &str, weight: f32, kind: TokenKind) {
    match mains.iter_mut().find(|m| m.term == term) {
        Some(main) => main.weight = main.weight.max(weight),
        None => mains.push(MainTerm {
            term: term.to_owned(),
            source: source.to_owned(),
            weight,
            kind,
        }),
    }
}

fn flush_pieces(mains: &mut Vec<MainTerm>, pieces: &mut Vec<String>, weight: f32) {
    for piece in pieces.drain(..) {
        add_main(mains, &piece, &piece, weight, TokenKind::Piece);
    }
}

fn add_member(members: &mut Vec<(u32, f32)>, id: u32, weight: f32) {
    match members.iter_mut().find(|(t, _)| *t == id) {
        Some((_, w)) => *w = w.max(weight),
        None => members.push((id, weight)),
    }
}

/// Words of a query written like code (`repo_path`, `get-tickets`,
/// `getStory`), normalised as names are.
pub(crate) fn identifiers(query: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let is_part = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    for word in query.split(|c: char| !is_part(c)) {
        let chars: Vec<char> = word.chars().collect();
        let camel = chars
            .windows(2)
            .any(|w| w[0].is_lowercase() && w[1].is_uppercase());
        let joined = word
            .trim_matches(|c| c == '_' || c == '-')
            .contains(['_', '-']);
        if camel || joined {
            let name = normalize_name(word);
            if name.chars().count() >= 4 && !found.contains(&name) {
                found.push(name);
            }
        }
    }
    found
}
