//! Our tool ranking: BM25F over the fields of a tool (name, description,
//! parameters, server), with stemming, stopwords, CJK n-grams, related terms at
//! a lower weight, a reward for covering more of the query, and boosts for
//! tool-name matches. It ranks what it is given and knows nothing of tenants
//! or views: the caller builds one index per view.
//!
//! Measured and left out: a bonus for query word pairs found next to each
//! other in a name or description made no difference on the labelled queries.
//!
//! Query cost is proportional to the postings of the query's terms; scores
//! accumulate in per-thread arrays reused across queries (`ScoreScratch`).

use std::collections::HashMap;

use super::{
    analyzer::Analyzer,
    doc::SearchDoc,
    score_scratch::ScoreScratch,
    stemmer::stem,
    stopwords::is_stopword,
    synonyms::SynonymTable,
    tokenizer::{TokenKind, Tokenizer},
    top_k::TopK,
};

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

/// Query weight of a piece of a split query word when the whole word is a
/// known term ("GitHub" is searched as `github`, and only weakly as `git`, `hub`).
const PIECE_WEIGHT: f32 = 0.35;
/// Query weight of a single CJK character (bigrams carry Chinese words).
const CJK_UNIGRAM_WEIGHT: f32 = 0.25;
/// Share of the score kept by a document matching none of the other query
/// concepts; the rest is earned by covering the query (IDF-weighted).
const COVERAGE_FLOOR: f32 = 0.3;
/// Bonus (as a share of the query's total weight) for a name made of query terms.
const NAME_BONUS: f32 = 0.5;
/// Bonus for a query that is the tool's name (or server and name).
const EXACT_NAME_BONUS: f32 = 1.0;
/// Bonus (shared among the query's identifiers) for an identifier in the
/// query that is a tool's name.
const NAMED_TOOL_BONUS: f32 = 0.5;
/// Bonus (shared among the query's identifiers) for an identifier in the
/// query that is one of the tool's parameters (`ticker_symbol`).
const NAMED_PARAM_BONUS: f32 = 0.5;
/// Bonus for a query that is the start of a tool's name.
const PREFIX_NAME_BONUS: f32 = 0.3;
/// Query weight of each half of a split unknown word ("flowchart").
const SPLIT_WEIGHT: f32 = 0.8;
/// Weight of two query words joined into one indexed term ("mind map"),
/// standing in for each of the two words.
const JOINED_WEIGHT: f32 = 0.6;
/// Share of an unknown CJK bigram's weight that lowers displayed scores.
const UNKNOWN_BIGRAM_SHARE: f32 = 0.3;
/// Concepts beyond this many (the least important) are dropped from a query.
const MAX_CONCEPTS: usize = 64;

/// Ranks tools for natural-language queries. Immutable once built; share it
/// behind an `Arc` and swap in a new one when the tool set changes.
///
/// ```
/// use quiver_view::search::{SearchDoc, SearchIndex};
/// let doc = |name: &str, description: &str| SearchDoc {
///     name: name.into(),
///     server: "github".into(),
///     description: description.into(),
///     ..SearchDoc::default()
/// };
/// let docs = [doc("list_issues", "List issues of a repository"),
///             doc("create_issue", "Open a new issue in a repository")];
/// let index = SearchIndex::build(&docs);
/// let hits = index.search("create a github issue", 5);
/// assert_eq!(hits[0].doc, 1);
/// assert!(hits[0].score > hits[1].score);
/// ```
#[derive(Debug)]
pub struct SearchIndex {
    vocabulary: HashMap<Box<str>, u32>,
    terms: Vec<Postings>,
    /// `name_terms[name_offsets[d]..name_offsets[d + 1]]`: the terms of doc
    /// d's name, with their IDF.
    name_offsets: Vec<u32>,
    name_terms: Vec<(u32, f32)>,
    /// Normalised `name` and `server + name` → docs.
    exact_names: HashMap<Box<str>, Vec<u32>>,
    /// Normalised names, sorted, for prefix matches.
    sorted_names: Vec<(Box<str>, u32)>,
    /// Normalised parameter names → docs.
    param_names: HashMap<Box<str>, Vec<u32>>,
    docs: usize,
}

/// One document that matched a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    /// Index of the document in the slice the index was built from.
    pub doc: usize,
    /// How well the document matches. For [`SearchIndex`]: in `0..=1`, the
    /// share of the best score a tool could get for this query, query words
    /// that no tool knows counting as unmatched (so it is absolute, not
    /// relative to the first hit; 1 for a query that names the tool). On the
    /// real catalogues, above ~0.5 is a strong match and below ~0.15 a weak
    /// one. For [`super::Bm25Index`]: the raw BM25 score.
    pub score: f32,
}

#[derive(Debug, Default)]
struct Postings {
    idf: f32,
    list: Box<[Posting]>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Saturated, length-normalised, field-weighted term frequency, in `0..1`.
    weight: f32,
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

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether no tools are indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The `limit` best tools for `query`, best first; ties go to the lower
    /// document index. A query with no known terms gives no hits.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.docs == 0 {
            return Vec::new();
        }
        let plan = self.plan(query);
        if plan.concepts.is_empty() {
            return Vec::new();
        }
        let bonuses = self.exact_match_bonuses(&plan);
        let bonus = |doc: u32| {
            bonuses
                .binary_search_by_key(&doc, |&(d, _)| d)
                .map_or(0.0, |i| bonuses[i].1)
        };
        ScoreScratch::with(self.docs, |scratch| {
            self.accumulate(&plan, scratch);
            let base = |doc: u32| {
                let d = doc as usize;
                let coverage = scratch.coverage[d] / plan.total;
                scratch.score[d] * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * coverage)
            };
            let full =
                |doc: u32, base: f32| base + self.name_coverage_bonus(doc, &plan) + bonus(doc);
            // The name bonus costs more than the rest, and most touched tools
            // matched one common word. Score the best `limit` by base score in
            // full first: the worst of them bounds what a tool must reach, and
            // a tool whose base score plus the largest name bonus falls short
            // is skipped unscored.
            let mut by_base = TopK::new(limit);
            for &doc in &scratch.touched {
                by_base.push(doc, base(doc));
            }
            let seeds = by_base.into_hits();
            let bar = if seeds.len() == limit {
                seeds
                    .iter()
                    .map(|h| full(h.doc as u32, h.score))
                    .fold(f32::INFINITY, f32::min)
            } else {
                f32::NEG_INFINITY
            };
            let max_name_bonus = NAME_BONUS * plan.total;
            let mut top = TopK::new(limit);
            for &doc in &scratch.touched {
                let base = base(doc);
                if base + max_name_bonus < bar && bonus(doc) == 0.0 {
                    continue;
                }
                top.push(doc, full(doc, base));
            }
            scratch.reset();
            let scale = 1.0 / (plan.total * (1.0 + NAME_BONUS) + plan.unmatched);
            let mut hits = top.into_hits();
            for hit in &mut hits {
                hit.score = (hit.score * scale).min(1.0);
            }
            hits
        })
    }

    /// Adds up, per document, the best match of each query concept and the
    /// coverage of the query.
    fn accumulate(&self, plan: &QueryPlan, scratch: &mut ScoreScratch) {
        let mut members = plan.members.as_slice();
        for (index, concept) in plan.concepts.iter().enumerate() {
            let count = members
                .iter()
                .take_while(|m| m.concept as usize == index)
                .count();
            let (these, rest) = members.split_at(count);
            members = rest;
            // A concept scores its best member only: a tool that says "get",
            // "fetch" and "retrieve" is not three times as relevant.
            for member in these {
                let postings = &self.terms[member.term as usize];
                let factor = member.weight * postings.idf;
                for posting in postings.list.iter() {
                    let d = posting.doc as usize;
                    let value = factor * posting.weight;
                    if scratch.best[d] == 0.0 {
                        scratch.touched_now.push(posting.doc);
                    }
                    if value > scratch.best[d] {
                        scratch.best[d] = value;
                        scratch.best_share[d] = member.share;
                    }
                }
            }
            for &doc in &scratch.touched_now {
                let d = doc as usize;
                if scratch.coverage[d] == 0.0 {
                    scratch.touched.push(doc);
                }
                scratch.score[d] += scratch.best[d];
                // A match through a relative covers the concept only in part.
                scratch.coverage[d] += concept.importance * scratch.best_share[d];
                scratch.best[d] = 0.0;
            }
            scratch.touched_now.clear();
        }
    }

    /// Bonus for a name made of query terms: the IDF-weighted share of the
    /// name the query covers, times the share of the query the name covers.
    fn name_coverage_bonus(&self, doc: u32, plan: &QueryPlan) -> f32 {
        let d = doc as usize;
        let name =
            &self.name_terms[self.name_offsets[d] as usize..self.name_offsets[d + 1] as usize];
        let mut concepts: u64 = 0;
        let (mut matched, mut all) = (0.0, 0.0);
        for &(term, idf) in name {
            all += idf;
            let start = plan.lookup.partition_point(|&(t, _)| t < term);
            let mut hit = false;
            for &(_, concept) in plan.lookup[start..].iter().take_while(|&&(t, _)| t == term) {
                concepts |= 1 << concept;
                hit = true;
            }
            if hit {
                matched += idf;
            }
        }
        if concepts == 0 || all == 0.0 {
            return 0.0;
        }
        let mut covered = 0.0;
        while concepts != 0 {
            covered += plan.concepts[concepts.trailing_zeros() as usize].importance;
            concepts &= concepts - 1;
        }
        NAME_BONUS * (matched / all) * covered
    }

    /// Bonuses for a query that is a tool's name (or the start of one) and for
    /// identifiers in the query (`repo_path`, `getStory`) that name a tool or
    /// one of its parameters. Sorted by document, one entry per document.
    fn exact_match_bonuses(&self, plan: &QueryPlan) -> Vec<(u32, f32)> {
        let mut bonuses = Vec::new();
        let query = plan.normalized.as_str();
        if let Some(docs) = self.exact_names.get(query) {
            bonuses.extend(docs.iter().map(|&d| (d, EXACT_NAME_BONUS * plan.total)));
        }
        if query.chars().count() >= 4 {
            let start = self
                .sorted_names
                .partition_point(|(name, _)| &**name < query);
            for (name, doc) in self.sorted_names[start..].iter().take(64) {
                if !name.starts_with(query) {
                    break;
                }
                if name.len() > query.len() {
                    let share = query.len() as f32 / name.len() as f32;
                    bonuses.push((*doc, PREFIX_NAME_BONUS * share * plan.total));
                }
            }
        }
        if !plan.identifiers.is_empty() {
            let share = plan.total / plan.identifiers.len() as f32;
            for identifier in &plan.identifiers {
                if identifier.as_str() != query
                    && let Some(docs) = self.exact_names.get(identifier.as_str())
                {
                    bonuses.extend(docs.iter().map(|&d| (d, NAMED_TOOL_BONUS * share)));
                }
                if let Some(docs) = self.param_names.get(identifier.as_str()) {
                    bonuses.extend(docs.iter().map(|&d| (d, NAMED_PARAM_BONUS * share)));
                }
            }
        }
        bonuses.sort_unstable_by_key(|&(d, _)| d);
        bonuses.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        bonuses
    }

    /// Analyses a query into concepts (each query term with its relatives) and
    /// the normalised text for name matches.
    fn plan(&self, query: &str) -> QueryPlan {
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
                    let known = self.vocabulary.contains_key(term);
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
            self.vocabulary.contains_key(term)
                || synonyms
                    .related(term)
                    .iter()
                    .any(|(r, _)| self.vocabulary.contains_key(r.as_str()))
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
                && let Some((left, right)) = self.decompound(&main.source)
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
            let in_vocabulary = self.vocabulary.get(main.term.as_str());
            if let Some(&id) = in_vocabulary {
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
                if let Some(&id) = self.vocabulary.get(related.as_str()) {
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
            if let Some(&id) = self.vocabulary.get(joined.as_str()) {
                stand_ins.push((id, 1.0));
            }
            for (related, weight) in synonyms.related(&joined) {
                if let Some(&id) = self.vocabulary.get(related.as_str()) {
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
        let unseen = idf(self.docs, 1);
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
                    .map(|&(id, w)| w * self.terms[id as usize].idf)
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
    fn decompound(&self, word: &str) -> Option<(String, String)> {
        if !word.is_ascii() || word.len() < 6 {
            return None;
        }
        let middle = word.len() / 2;
        let mut cuts: Vec<usize> = (3..=word.len() - 3).collect();
        cuts.sort_by_key(|&cut| cut.abs_diff(middle));
        cuts.into_iter().find_map(|cut| {
            let (left, right) = (stem(&word[..cut]), stem(&word[cut..]));
            let indexed = |t: &str| self.vocabulary.contains_key(t) && !is_stopword(t);
            (indexed(&left) && indexed(&right)).then_some((left, right))
        })
    }
}

/// A query, analysed against one index.
#[derive(Debug, Default)]
struct QueryPlan {
    concepts: Vec<Concept>,
    /// Grouped by concept, in concept order.
    members: Vec<Member>,
    /// (term, concept), sorted, for name matching.
    lookup: Vec<(u32, u16)>,
    /// Sum of the concepts' importances: the most a tool could score.
    total: f32,
    /// What the query words no tool knows would have weighed (for display).
    unmatched: f32,
    /// The whole query, normalised as names are.
    normalized: String,
    /// Identifier-like words of the query (`repo_path`, `getStory`), normalised.
    identifiers: Vec<String>,
}

/// One query term and its relatives: a tool scores the best of them.
#[derive(Debug)]
struct Concept {
    /// The most a member can contribute (query weight × IDF).
    importance: f32,
}

#[derive(Debug)]
struct Member {
    term: u32,
    concept: u16,
    weight: f32,
    /// `weight` relative to the concept's heaviest member: how much of the
    /// concept a match on this member covers.
    share: f32,
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
fn identifiers(query: &str) -> Vec<String> {
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

/// Lowercase letters and digits only: `Get-Weather` and `get_weather` meet.
fn normalize_name(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Accumulates documents, then computes postings once field lengths are known.
#[derive(Default)]
struct IndexBuilder {
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
    fn add(&mut self, doc: &SearchDoc) {
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

    fn finish(self) -> SearchIndex {
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

/// BM25's inverse document frequency (always positive).
pub(crate) fn idf(docs: usize, containing: usize) -> f32 {
    let (n, df) = (docs as f32, containing as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::SearchParam;

    fn doc(server: &str, name: &str, description: &str) -> SearchDoc {
        SearchDoc {
            name: name.into(),
            server: server.into(),
            description: description.into(),
            ..SearchDoc::default()
        }
    }

    fn corpus() -> Vec<SearchDoc> {
        vec![
            doc(
                "github",
                "list_issues",
                "List issues in a GitHub repository.",
            ),
            doc(
                "github",
                "create_issue",
                "Create a new issue in a GitHub repository.",
            ),
            doc("github", "get_issue", "Get details of a specific issue."),
            doc(
                "github",
                "create_repository",
                "Create a new GitHub repository in your account.",
            ),
            doc(
                "weather",
                "get_forecast",
                "Weather forecast for a location given latitude and longitude.",
            ),
            SearchDoc {
                params: vec![SearchParam {
                    name: "city".into(),
                    description: "Name of the city".into(),
                }],
                ..doc(
                    "weather",
                    "get_weather_by_city",
                    "Current weather for a city.",
                )
            },
            doc("files", "delete_file", "Remove a file from disk."),
            doc("files", "read_file", "Read the contents of a file."),
            doc(
                "web",
                "fetch_page",
                "Fetch a web page by URL and return its text.",
            ),
            doc("china", "query_weather", "查询指定城市的天气预报"),
            doc("china", "search_news", "搜索最新的新闻资讯"),
            doc(
                "slack",
                "post_message",
                "Send a message to a Slack channel.",
            ),
        ]
    }

    fn names(index: &SearchIndex, docs: &[SearchDoc], query: &str) -> Vec<String> {
        index
            .search(query, 5)
            .into_iter()
            .map(|h| docs[h.doc].name.clone())
            .collect()
    }

    #[test]
    fn create_issue_beats_list_issues() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "create issue")[0], "create_issue");
        assert_eq!(
            names(&index, &docs, "create a github issue")[0],
            "create_issue"
        );
        assert_eq!(names(&index, &docs, "list the issues")[0], "list_issues");
    }

    #[test]
    fn synonyms_and_morphology_find_tools() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "erase a file")[0], "delete_file");
        assert_eq!(names(&index, &docs, "deleting files")[0], "delete_file");
        assert_eq!(
            names(&index, &docs, "weather forecast for a city")[0],
            "get_weather_by_city"
        );
        assert_eq!(names(&index, &docs, "new repo")[0], "create_repository");
        assert_eq!(
            names(&index, &docs, "send a msg to slack")[0],
            "post_message"
        );
    }

    #[test]
    fn chinese_queries_match_chinese_and_english_tools() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "天气预报")[0], "query_weather");
        assert_eq!(names(&index, &docs, "新闻")[0], "search_news");
        let top = names(&index, &docs, "查询天气");
        assert!(
            top.contains(&"get_forecast".to_owned())
                || top.contains(&"get_weather_by_city".to_owned())
        );
    }

    #[test]
    fn exact_name_wins_and_scores_one() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        let hits = index.search("get_issue", 3);
        assert_eq!(docs[hits[0].doc].name, "get_issue");
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        let hits = index.search("github.create_repository", 3);
        assert_eq!(docs[hits[0].doc].name, "create_repository");
    }

    #[test]
    fn scores_are_ordered_and_bounded() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        let hits = index.search("read the file contents from disk", 10);
        assert!(!hits.is_empty());
        for pair in hits.windows(2) {
            assert!(pair[0].score >= pair[1].score);
        }
        assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0));
    }

    #[test]
    fn garbage_and_limits() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        assert!(index.search("", 10).is_empty());
        assert!(index.search("   ?!#  ", 10).is_empty());
        assert!(index.search("zzqx qqqz", 10).is_empty());
        assert!(index.search("the of and", 10).is_empty());
        assert!(index.search("issue", 0).is_empty());
        assert_eq!(index.search("issue", 2).len(), 2);
        let empty = SearchIndex::build(&[]);
        assert!(empty.is_empty());
        assert!(empty.search("issue", 5).is_empty());
    }

    #[test]
    fn ties_break_by_document_index() {
        let docs = vec![doc("a", "same", "twin tool"), doc("b", "same", "twin tool")];
        let index = SearchIndex::build(&docs);
        let hits = index.search("twin", 2);
        assert_eq!(hits[0].doc, 0);
        assert_eq!(hits[1].doc, 1);
        assert_eq!(hits[0].score, hits[1].score);
    }

    #[test]
    fn repeated_queries_give_identical_results() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        let first = index.search("fetch a web page", 5);
        for _ in 0..3 {
            assert_eq!(index.search("fetch a web page", 5), first);
        }
    }

    #[test]
    fn query_identifiers_name_parameters_and_tools() {
        assert_eq!(
            identifiers("use repo_path and getStory, not plain words"),
            ["repopath", "getstory"]
        );
        assert_eq!(identifiers("get-tickets -flag- a_b"), ["gettickets"]);
        let param = |name: &str| SearchParam {
            name: name.into(),
            description: String::new(),
        };
        let docs = vec![
            SearchDoc {
                params: vec![param("symbol")],
                ..doc("finance", "get_quote", "Latest price of a stock.")
            },
            SearchDoc {
                params: vec![param("ticker_symbol"), param("strike")],
                ..doc("finance", "get_options", "Options chain.")
            },
        ];
        let index = SearchIndex::build(&docs);
        assert_eq!(
            names(&index, &docs, "something taking a ticker_symbol")[0],
            "get_options"
        );
        assert_eq!(
            names(&index, &docs, "call get_quote for AAPL")[0],
            "get_quote"
        );
    }

    #[test]
    fn joined_and_split_words_meet() {
        let docs = vec![
            doc(
                "maps",
                "convert_to_mindmap",
                "Turn markdown into a mindmap.",
            ),
            doc(
                "charts",
                "generate_flow_diagram",
                "Draw a flow chart of a process.",
            ),
            doc("charts", "generate_pie_chart", "Pie chart of shares."),
        ];
        let index = SearchIndex::build(&docs);
        assert_eq!(
            names(&index, &docs, "make a mind map")[0],
            "convert_to_mindmap"
        );
        assert_eq!(
            names(&index, &docs, "flowchart of a process")[0],
            "generate_flow_diagram"
        );
    }

    #[test]
    fn unknown_words_lower_the_score_shown_not_the_order() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        let plain = index.search("read file", 3);
        let vague = index.search("read file zebrafish quasar", 3);
        assert_eq!(plain[0].doc, vague[0].doc);
        assert!(
            vague[0].score < plain[0].score * 0.7,
            "{vague:?} vs {plain:?}"
        );
    }

    #[test]
    fn cjk_characters_inside_known_words_are_not_counted_twice() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        let plan = index.plan("天气预报");
        // 天气 and 预报 are known bigrams; their characters add no concepts.
        assert!(plan.concepts.len() <= 3, "{plan:?}");
    }

    #[test]
    fn index_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<SearchIndex>();
        check::<super::super::Bm25Index>();
    }
}
