//! One search index per manifest version, shared by every view: ranking a
//! view's subset of the shared index must give exactly what an index of the
//! view's tools alone gives (the same tools, the same order, the same f32
//! scores), so a tool hidden from a tenant changes none of its scores; and
//! an index updated from the previous version must rank exactly as one
//! built from scratch. Checked on the real LiveMCPBench catalogue (527
//! tools) with every labelled query of `tests/data/search/queries.json`,
//! lexically and with the sentence model.

use std::{path::PathBuf, sync::Arc};

use quiver_proto::{
    Manifest, ServerEntry,
    catalog::Catalog,
    tenant::{Tenant, TenantDirectory},
};
use quiver_view::{
    TenantViews, ToolSet,
    search::{
        HybridIndex, SearchDoc, SearchHit, SearchIndex,
        corpus::Corpus,
        eval::{self, load_queries},
    },
};
use serde_json::json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The LiveMCPBench catalogue, or `None` in a local partial run without it.
fn livemcpbench() -> anyhow::Result<Option<Corpus>> {
    let datasets = root().join("../shared/datasets");
    let path = Corpus::path(&datasets, "livemcpbench")?;
    if !eval::test_input_present(&path, "the shared datasets sit next to the repository")? {
        return Ok(None);
    }
    Ok(Some(Corpus::load(&datasets, "livemcpbench")?))
}

/// Every labelled query over LiveMCPBench.
fn queries() -> anyhow::Result<Vec<String>> {
    let all = load_queries(&root().join("tests/data/search/queries.json"))?;
    Ok(all
        .into_iter()
        .filter(|q| q.corpus == "livemcpbench")
        .map(|q| q.query)
        .collect())
}

use crate::installed_model::model;

/// A small seeded generator, so the subsets are the same on every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Views of different shapes over `docs`: all servers but a few (broad), a
/// few servers (narrow), every other tool, and a random half of the tools.
fn subsets(docs: &[SearchDoc], seed: u64) -> Vec<(&'static str, Vec<usize>)> {
    let mut servers: Vec<&str> = docs.iter().map(|d| d.server.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    let mut rng = SplitMix64(seed);
    let hidden: Vec<&str> = (0..3)
        .map(|_| servers[rng.next() as usize % servers.len()])
        .collect();
    let shown: Vec<&str> = (0..4)
        .map(|_| servers[rng.next() as usize % servers.len()])
        .collect();
    let all = 0..docs.len();
    vec![
        (
            "broad",
            all.clone()
                .filter(|&d| !hidden.contains(&docs[d].server.as_str()))
                .collect(),
        ),
        (
            "narrow",
            all.clone()
                .filter(|&d| shown.contains(&docs[d].server.as_str()))
                .collect(),
        ),
        ("every other tool", all.clone().step_by(2).collect()),
        (
            "random half",
            all.filter(|_| rng.next().is_multiple_of(2)).collect(),
        ),
    ]
}

/// Hits of an index built from `subset`'s documents alone, named by their
/// documents in the whole catalogue.
fn renamed(hits: Vec<SearchHit>, subset: &[usize]) -> Vec<SearchHit> {
    hits.into_iter()
        .map(|h| SearchHit {
            doc: subset[h.doc],
            score: h.score,
        })
        .collect()
}

#[test]
fn a_views_lexical_ranking_is_that_of_its_tools_alone() -> anyhow::Result<()> {
    let Some(corpus) = livemcpbench()? else {
        return Ok(());
    };
    let queries = queries()?;
    assert!(queries.len() > 100, "{} queries", queries.len());
    let docs = &corpus.docs;
    let shared = SearchIndex::build(docs);
    for (shape, subset) in subsets(docs, 0x5eed_0001) {
        tracing::info!("--- {shape}: {} of {} tools", subset.len(), docs.len());
        let alone_docs: Vec<SearchDoc> = subset.iter().map(|&d| docs[d].clone()).collect();
        let alone = SearchIndex::build(&alone_docs);
        let view = shared.subset(ToolSet::from_sorted(docs.len(), subset.iter().copied()));
        for query in &queries {
            // Every matching tool, so every score is compared, not just the top.
            let expected = renamed(alone.search(query, subset.len()), &subset);
            let got = shared.search_in(&view, query, subset.len());
            assert_eq!(got, expected, "{shape} view, query {query:?}");
        }
    }
    Ok(())
}

#[test]
fn a_hidden_tool_stuffed_with_the_query_changes_no_score() -> anyhow::Result<()> {
    let Some(corpus) = livemcpbench()? else {
        return Ok(());
    };
    let queries = queries()?;
    let mut docs = corpus.docs.clone();
    let visible = ToolSet::full(docs.len());
    let before = SearchIndex::build(&docs);
    let before_hits: Vec<Vec<SearchHit>> = queries
        .iter()
        .map(|q| before.search_in(before.everything(), q, 50))
        .collect();
    // A tool that repeats every query's words, in every field, seen by no
    // one: it would top every ranking and lower every IDF if it counted.
    let stuffing = queries.join(" ");
    docs.push(SearchDoc {
        name: "search_everything".into(),
        server: "attacker".into(),
        server_description: stuffing.clone(),
        description: stuffing.clone(),
        params: Vec::new(),
    });
    let after = SearchIndex::build(&docs);
    let view = after.subset(ToolSet::from_sorted(docs.len(), visible.iter()));
    for (query, expected) in queries.iter().zip(&before_hits) {
        assert_eq!(
            &after.search_in(&view, query, 50),
            expected,
            "query {query:?}"
        );
    }
    // Seen, it does change the ranking: the check above can fail.
    let everyone = after.search(&queries[0], 1);
    assert_eq!(everyone[0].doc, docs.len() - 1);
    Ok(())
}

#[test]
fn a_views_hybrid_ranking_is_that_of_its_tools_alone() -> anyhow::Result<()> {
    let (Some(corpus), Some(model)) = (livemcpbench()?, model()?) else {
        return Ok(());
    };
    let queries = queries()?;
    let docs = &corpus.docs;
    let shared = HybridIndex::build(docs, Some(model.clone()));
    assert!(shared.is_semantic());
    for (shape, subset) in subsets(docs, 0x5eed_0002) {
        let alone_docs: Vec<SearchDoc> = subset.iter().map(|&d| docs[d].clone()).collect();
        // The model's cache holds every vector by now: no second embedding.
        let alone = HybridIndex::build(&alone_docs, Some(model.clone()));
        let view = shared.subset(ToolSet::from_sorted(docs.len(), subset.iter().copied()));
        for query in &queries {
            let expected = renamed(alone.search(query, 20), &subset);
            let vector = shared.query_vector(query);
            let got = shared.search_embedded_in(&view, query, vector.as_deref(), 20, |_| 0.0);
            assert_eq!(got, expected, "{shape} view, query {query:?}");
        }
    }
    Ok(())
}

/// The next version of `docs`: a few servers gone, a few tools reworded,
/// new tools, and the rest unchanged (shuffled among the new ones).
fn next_version(docs: &[SearchDoc]) -> Vec<SearchDoc> {
    let mut servers: Vec<&str> = docs.iter().map(|d| d.server.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    let gone: Vec<&str> = servers.iter().step_by(9).copied().collect();
    let mut next: Vec<SearchDoc> = docs
        .iter()
        .filter(|d| !gone.contains(&d.server.as_str()))
        .enumerate()
        .map(|(i, d)| {
            let mut d = d.clone();
            if i % 25 == 0 {
                d.description =
                    format!("{} Also lists invoices and calendar events.", d.description);
            }
            d
        })
        .collect();
    for i in 0..12 {
        next.insert(
            (i * 37) % next.len(),
            SearchDoc {
                name: format!("new_tool_{i}"),
                server: "newcomer".into(),
                server_description: "A server added after the first version".into(),
                description: format!("Books a meeting room number {i} and sends the invitation"),
                params: Vec::new(),
            },
        );
    }
    next
}

#[test]
fn an_updated_index_ranks_exactly_as_a_full_rebuild() -> anyhow::Result<()> {
    let Some(corpus) = livemcpbench()? else {
        return Ok(());
    };
    let queries = queries()?;
    let first = SearchIndex::build(&corpus.docs);
    let next = next_version(&corpus.docs);
    let updated = first.update(&next);
    let rebuilt = SearchIndex::build(&next);
    // Only the reworded and new tools were analysed again.
    let changed = next.iter().filter(|d| !corpus.docs.contains(d)).count();
    assert!(changed > 12, "{changed} changed tools");
    assert_eq!(updated.analysed(), changed);
    assert_eq!(rebuilt.analysed(), next.len());
    assert_eq!(
        updated.terms(),
        rebuilt.terms(),
        "no term of a removed tool is left"
    );
    assert_eq!(updated.postings(), rebuilt.postings());
    let mut views: Vec<(&str, Vec<usize>)> = subsets(&next, 0x5eed_0003);
    views.push(("all", (0..next.len()).collect()));
    for (shape, subset) in views {
        let set = ToolSet::from_sorted(next.len(), subset.iter().copied());
        let (a, b) = (updated.subset(set.clone()), rebuilt.subset(set));
        for query in &queries {
            assert_eq!(
                updated.search_in(&a, query, subset.len()),
                rebuilt.search_in(&b, query, subset.len()),
                "{shape} view, query {query:?}"
            );
        }
    }
    // And back: an update can also remove what the last one added.
    let back = updated.update(&corpus.docs);
    for query in &queries {
        assert_eq!(back.search(query, 30), first.search(query, 30), "{query:?}");
    }
    Ok(())
}

/// `count` tenants over `manifest`, tenant `i` shown every server but
/// those whose position is `i` modulo `count`.
fn tenants(manifest: &Manifest, count: usize) -> Arc<TenantDirectory> {
    let tenants = (0..count).map(|i| {
        let servers: Vec<&str> = manifest
            .servers
            .iter()
            .enumerate()
            .filter(|(s, _)| s % count != i)
            .map(|(_, s)| s.id.as_str())
            .collect();
        serde_json::from_value::<Tenant>(json!({
            "id": format!("t{i}"), "display_name": "t", "created_ms": 0, "updated_ms": 0,
            "servers": servers,
        }))
        .expect("a tenant")
    });
    Arc::new(TenantDirectory::new(tenants))
}

#[test]
fn tenant_views_after_a_manifest_change_rank_as_views_built_afresh() -> anyhow::Result<()> {
    let datasets = root().join("../shared/datasets");
    let path = Corpus::path(&datasets, "livemcpbench")?;
    if !eval::test_input_present(&path, "the shared datasets sit next to the repository")? {
        return Ok(());
    }
    let catalog = Catalog::load(&path, "livemcpbench")?;
    let entries: Vec<ServerEntry> = catalog
        .servers
        .iter()
        .map(|s| ServerEntry {
            id: s.id.clone(),
            description: s.description.clone(),
            namespace: s.id.clone(),
            tags: Vec::new(),
            group: String::new(),
            validation: Default::default(),
            features: Vec::new(),
            tools: s.tools.clone(),
            findings: Default::default(),
        })
        .collect();
    let v1 = Arc::new(Manifest::build(1, entries.clone()));
    // Version 2: one server gone, one tool reworded.
    let mut changed = entries;
    changed.remove(3);
    changed[0].tools[0].description = "Translates a document into French".into();
    let v2 = Arc::new(Manifest::build(2, changed));
    let directory = tenants(&v2, 4);
    let first = TenantViews::new(v1, directory.clone());
    for i in 0..4 {
        first.for_tenant(&format!("t{i}")).expect("a view");
    }
    let next = first.next(v2.clone(), directory.clone());
    let fresh = TenantViews::new(v2, directory);
    assert_eq!(next.index().search().lexical().analysed(), 1);
    for i in 0..4 {
        let tenant = format!("t{i}");
        let (a, b) = (
            next.for_tenant(&tenant).expect("a view"),
            fresh.for_tenant(&tenant).expect("a view"),
        );
        assert_eq!(a.tools(), b.tools());
        for query in queries()? {
            let names = |view: &quiver_view::ToolView| -> Vec<(String, f32)> {
                view.search(&query, 10)
                    .into_iter()
                    .map(|(t, s)| (t.tool.exposed_name.clone(), s))
                    .collect()
            };
            assert_eq!(names(&a), names(&b), "tenant {tenant}, query {query:?}");
        }
    }
    Ok(())
}

#[test]
fn a_view_of_ten_thousand_tools_holds_a_few_kilobytes_of_its_own() -> anyhow::Result<()> {
    let Some(corpus) = livemcpbench()? else {
        return Ok(());
    };
    // The catalogue twenty times over, under distinct server names.
    let entries: Vec<ServerEntry> = (0..20)
        .flat_map(|copy| {
            let mut servers: Vec<(String, Vec<quiver_proto::ToolDef>)> = Vec::new();
            for doc in &corpus.docs {
                let id = format!("{}-r{copy}", doc.server);
                if servers.last().is_none_or(|(s, _)| *s != id) {
                    servers.push((id.clone(), Vec::new()));
                }
                if let Some((_, tools)) = servers.last_mut() {
                    tools.push(quiver_proto::ToolDef {
                        name: doc.name.clone(),
                        title: None,
                        description: doc.description.clone(),
                        input_schema: json!({"type": "object"}),
                        output_schema: None,
                        annotations: None,
                        meta: None,
                    });
                }
            }
            servers
                .into_iter()
                .map(|(id, tools)| ServerEntry::new(id, tools))
        })
        .collect();
    let manifest = Arc::new(Manifest::build(1, entries));
    assert!(manifest.tools.len() >= 10_000, "{}", manifest.tools.len());
    let directory = tenants(&manifest, 50);
    let views = TenantViews::new(manifest.clone(), directory);
    let view = views.for_tenant("t7").expect("a view");
    assert!(view.len() > manifest.tools.len() * 9 / 10);
    // A bitset of the tools, one of the servers, a rank directory: no copy
    // of postings, vectors or names.
    assert!(view.own_bytes() < 4096, "{} bytes", view.own_bytes());
    // Everything else is the index every view shares.
    assert!(Arc::ptr_eq(view.index(), views.index()));
    Ok(())
}
