//! Ranking with a built index: each query concept scores its best member per
//! document, coverage of the query keeps more of the score, and names made of
//! query words, queries naming a tool and identifiers naming a parameter earn
//! bonuses. Scores are shares of the best a tool could get for the query.
//! Every statistic (IDF, average field length, tool count) is the subset's.

use super::{IdfMemo, SearchIndex, Subset, query_plan::QueryPlan};
use crate::search::{
    score_scratch::ScoreScratch,
    top_k::{SearchHit, TopK},
};

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

impl SearchIndex {
    /// The `limit` best tools for `query`, best first; ties go to the lower
    /// document index. A query with no known terms gives no hits.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_in(&self.everything, query, limit)
    }

    /// The `limit` best of `subset`'s tools for `query`, best first, as
    /// [`SearchIndex::search`] ranks them in an index of those tools alone
    /// (hits name documents of this index). Tools outside the subset are
    /// never touched and shift no score.
    pub fn search_in(&self, subset: &Subset, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || subset.is_empty() {
            return Vec::new();
        }
        let idfs = IdfMemo::default();
        let plan = self.plan(query, subset, &idfs);
        if plan.concepts.is_empty() {
            return Vec::new();
        }
        let bonuses = self.exact_match_bonuses(&plan, subset);
        let bonus = |doc: u32| {
            bonuses
                .binary_search_by_key(&doc, |&(d, _)| d)
                .map_or(0.0, |i| bonuses[i].1)
        };
        ScoreScratch::with(self.len(), |scratch| {
            self.accumulate(&plan, subset, &idfs, scratch);
            let base = |doc: u32| {
                let d = doc as usize;
                let coverage = scratch.coverage[d] / plan.total;
                scratch.score[d] * (COVERAGE_FLOOR + (1.0 - COVERAGE_FLOOR) * coverage)
            };
            let full = |doc: u32, base: f32| {
                base + self.name_coverage_bonus(doc, &plan, subset, &idfs) + bonus(doc)
            };
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
    fn accumulate(
        &self,
        plan: &QueryPlan,
        subset: &Subset,
        idfs: &IdfMemo,
        scratch: &mut ScoreScratch,
    ) {
        let everything = subset.set.is_full();
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
                let factor = member.weight * idfs.of(self, member.term, subset);
                for posting in postings.list.iter() {
                    let d = posting.doc as usize;
                    if !everything && !subset.set.contains(d) {
                        continue;
                    }
                    let value = factor * self.weight(member.term, posting, subset);
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
    fn name_coverage_bonus(
        &self,
        doc: u32,
        plan: &QueryPlan,
        subset: &Subset,
        idfs: &IdfMemo,
    ) -> f32 {
        let d = doc as usize;
        let name =
            &self.name_terms[self.name_offsets[d] as usize..self.name_offsets[d + 1] as usize];
        let mut concepts: u64 = 0;
        let (mut matched, mut all) = (0.0, 0.0);
        for &term in name {
            let idf = idfs.of(self, term, subset);
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
    fn exact_match_bonuses(&self, plan: &QueryPlan, subset: &Subset) -> Vec<(u32, f32)> {
        let mut bonuses = Vec::new();
        let seen = |d: &&u32| subset.set.contains(**d as usize);
        let query = plan.normalized.as_str();
        if let Some(docs) = self.exact_names.get(query) {
            bonuses.extend(
                docs.iter()
                    .filter(seen)
                    .map(|&d| (d, EXACT_NAME_BONUS * plan.total)),
            );
        }
        if query.chars().count() >= 4 {
            let start = self
                .sorted_names
                .partition_point(|(name, _)| &**name < query);
            let visible = self.sorted_names[start..]
                .iter()
                .filter(|(_, d)| subset.set.contains(*d as usize));
            for (name, doc) in visible.take(64) {
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
                    bonuses.extend(
                        docs.iter()
                            .filter(seen)
                            .map(|&d| (d, NAMED_TOOL_BONUS * share)),
                    );
                }
                if let Some(docs) = self.param_names.get(identifier.as_str()) {
                    bonuses.extend(
                        docs.iter()
                            .filter(seen)
                            .map(|&d| (d, NAMED_PARAM_BONUS * share)),
                    );
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
}

#[cfg(test)]
mod tests {
    use super::{super::query_plan::identifiers, *};
    use crate::search::index::IdfMemo;
    use crate::search::{SearchDoc, SearchParam};

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
    fn morphology_finds_tools() {
        let docs = corpus();
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "deleting files")[0], "delete_file");
        assert_eq!(
            names(&index, &docs, "weather forecast for a city")[0],
            "get_weather_by_city"
        );
        assert_eq!(
            names(&index, &docs, "create new repositories")[0],
            "create_repository"
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
        let plan = index.plan("天气预报", index.everything(), &IdfMemo::default());
        // 天气 and 预报 are known bigrams; their characters add no concepts.
        assert!(plan.concepts.len() <= 3, "{plan:?}");
    }

    #[test]
    fn index_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<SearchIndex>();
        check::<crate::search::Bm25Index>();
    }
}
