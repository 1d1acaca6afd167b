//! Semantic search with the real model (installed by scripts/install-model.sh;
//! scripts/test.sh runs it first). Without the model these tests fail, unless
//! QUIVER_PARTIAL_TESTS=1 marks a local partial run.

use std::{path::PathBuf, sync::Arc};

use quiver_view::search::{
    Blend, HybridIndex, SearchDoc, SemanticModel,
    eval::{self, Ranker},
    semantic::default_model_dir,
};

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn model() -> anyhow::Result<Option<Arc<SemanticModel>>> {
    let dir = default_model_dir().expect("HOME or QUIVER_SEARCH_MODEL_DIR is set");
    if !eval::test_input_present(
        &dir.join("model.safetensors"),
        "run scripts/install-model.sh",
    )? {
        return Ok(None);
    }
    Ok(Some(Arc::new(SemanticModel::load(&dir, None)?)))
}

fn doc(name: &str, description: &str) -> SearchDoc {
    SearchDoc {
        name: name.into(),
        server: "s".into(),
        description: description.into(),
        ..SearchDoc::default()
    }
}

#[test]
fn vectors_are_unit_length_and_padding_does_not_change_them() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let embedder = model.embedder();
    let short = "weather";
    let long =
        "Get the current weather conditions and a five-day forecast for any city in the world";
    let alone = embedder.embed_one(short)?;
    // In a batch, `short` is padded to the length of `long`: the mask must
    // keep the padding out of the mean.
    let batched = embedder.embed(&[short, long])?;
    assert_eq!(alone.len(), embedder.dim());
    let norm: f32 = alone.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    let diff = alone
        .iter()
        .zip(&batched[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(diff < 1e-4, "padding changed the vector by {diff}");
    Ok(())
}

#[test]
fn a_deferred_index_turns_hybrid_once_its_vectors_are_built_and_reuses_them() -> anyhow::Result<()>
{
    let Some(model) = model()? else { return Ok(()) };
    let docs = [
        doc("get_forecast", "Weather forecast for a location"),
        doc("send_message", "Post a message to a chat channel"),
        doc("create_invoice", "Bill a customer"),
    ];
    let query = "is it going to be sunny on saturday";
    // Built on the background thread; ranks lexically until then (the
    // query shares no word with any tool, so it finds nothing yet).
    let deferred = HybridIndex::build_deferred(&docs, Some(model.clone()));
    if !deferred.is_semantic() {
        assert!(deferred.search(query, 3).is_empty());
    }
    assert!(
        deferred.wait_semantic(std::time::Duration::from_secs(120)),
        "the background thread never delivered the vectors"
    );
    let hits = deferred.search(query, 3);
    assert_eq!(hits.first().map(|h| h.doc), Some(0), "{hits:?}");
    assert_eq!(
        hits,
        HybridIndex::build(&docs, Some(model.clone())).search(query, 3)
    );
    // The same definitions again: every vector is cached, hybrid at once.
    let again = HybridIndex::build_deferred(&docs, Some(model));
    assert!(again.is_semantic());
    assert_eq!(again.search(query, 3), hits);
    Ok(())
}

#[test]
fn paraphrases_without_shared_words_are_found() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let docs = [
        doc("get_forecast", "Weather forecast for a location"),
        doc("send_message", "Post a message to a chat channel"),
        doc("create_invoice", "Bill a customer"),
    ];
    let hybrid = HybridIndex::build(&docs, Some(model));
    assert!(hybrid.is_semantic());
    // The query shares no word (nor synonym) with the tools: the lexical
    // side finds no tool, the semantic side the forecast.
    let query = "is it going to be sunny on saturday";
    let lexical = hybrid.lexical().search(query, 3);
    assert!(lexical.is_empty(), "{lexical:?}");
    let hits = hybrid.search(query, 3);
    assert_eq!(hits.first().map(|h| h.doc), Some(0), "{hits:?}");
    // Chinese still ranks through the lexical side.
    let docs = [
        doc("天气预报", "查询城市天气"),
        doc("发送消息", "发送聊天消息"),
    ];
    let hybrid = HybridIndex::build(&docs, model_again()?);
    assert_eq!(hybrid.search("查询天气", 2).first().map(|h| h.doc), Some(0));
    Ok(())
}

fn model_again() -> anyhow::Result<Option<Arc<SemanticModel>>> {
    model()
}

/// On the frozen test split of both public benchmarks, the hybrid must beat
/// our lexical ranking and the model alone on MRR.
#[test]
fn hybrid_beats_each_side_on_the_public_test_splits() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    for name in ["azure-mcp", "metatool"] {
        let path = project_root().join(format!("tests/data/search/public/{name}/queries.json"));
        let report = eval::run(
            &project_root().join("../shared/datasets"),
            &path,
            Some(&model),
        )?;
        println!("{report}");
        let row = report
            .rows
            .iter()
            .find(|r| r.split == "test")
            .expect("test row");
        let m = |r| row.get(r).expect("ranker ran");
        let (lexical, semantic, hybrid) =
            (m(Ranker::Lexical), m(Ranker::Semantic), m(Ranker::Hybrid));
        assert!(
            hybrid.mrr > lexical.mrr,
            "{name}: hybrid {hybrid:?} lexical {lexical:?}"
        );
        assert!(
            hybrid.mrr > semantic.mrr,
            "{name}: hybrid {hybrid:?} semantic {semantic:?}"
        );
    }
    Ok(())
}

/// Prints the tune-split metrics of a grid of blends; how [`Blend::DEFAULT`]
/// was chosen. `cargo test --release -p quiver-view --test integration semantic_search::tune_blend -- --ignored --nocapture`
#[test]
#[ignore = "prints a grid; run in release"]
fn tune_blend() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let root = project_root();
    let datasets = root.join("../shared/datasets");
    let mut sets = Vec::new();
    for file in [
        "public/azure-mcp/queries.json",
        "public/metatool/queries.json",
        "queries.json",
    ] {
        let prepared = eval::prepare(
            &datasets,
            &root.join("tests/data/search").join(file),
            Some(&model),
        )?;
        sets.push((
            file,
            prepared
                .into_iter()
                .filter(|p| p.query.split == "tune")
                .collect::<Vec<_>>(),
        ));
    }
    println!("lexical weight, floor, ceiling, min | per set Hit@1 / Hit@5 / MRR");
    for lexical in [0.3f32, 0.4, 0.5, 0.6, 0.7] {
        for floor in [0.0f32, 0.1, 0.2] {
            for ceiling in [0.6f32, 0.7, 0.8] {
                for min in [0.2f32, 0.3] {
                    let blend = Blend {
                        lexical,
                        semantic: 1.0 - lexical,
                        cos_floor: floor,
                        cos_ceiling: ceiling,
                        min_semantic_only: min,
                    };
                    let mut line = format!("{lexical:.1} {floor:.1} {ceiling:.1} {min:.1} |");
                    let mut mean = 0.0;
                    for (_, set) in &sets {
                        let ranks: Vec<_> = set.iter().map(|p| p.hybrid_rank(&blend)).collect();
                        let m = eval::Metrics::from_ranks(&ranks);
                        mean += m.mrr / sets.len() as f64;
                        line += &format!(" {:.3} {:.3} {:.3} |", m.hit_at_1, m.hit_at_5, m.mrr);
                    }
                    println!("{line} mean MRR {mean:.3}");
                }
            }
        }
    }
    for (file, set) in &sets {
        let report = eval::report(set, &Blend::DEFAULT);
        println!("{file}\n{report}");
    }
    Ok(())
}

/// Learning from outcomes, simulated: tenant `a` replays the `tune` queries of
/// MetaTool as an agent would (search, then call the right tool if it is in
/// the top five, else call the first hit and fail); then the `test` queries,
/// which were never replayed, are measured with and without `a`'s signals.
/// Tenant `b`, which replayed nothing, must rank exactly as without signals.
#[test]
fn outcomes_improve_later_searches_of_that_tenant_only() -> anyhow::Result<()> {
    use quiver_view::search::{SignalConfig, SignalStore, corpus::Corpus};
    let Some(model) = model()? else { return Ok(()) };
    let dir = project_root().join("tests/data/search/public/metatool");
    let corpus = Corpus::load_file(&dir.join("tools.json"), "metatool")?;
    let ids = corpus.ids();
    let index = HybridIndex::build(&corpus.docs, Some(model));
    let queries = eval::load_queries(&dir.join("queries.json"))?;
    let store = SignalStore::in_memory(SignalConfig::default());
    let now = 1_000_000;
    // As `ToolView::search_for` does: one embedding ranks the tools and
    // matches the tenant's past queries by meaning.
    let search = |tenant: &str, query: &str, limit: usize| {
        let vector = index.query_vector(query);
        let adjustments = store.embedded_adjustments(tenant, query, vector.as_deref(), now);
        let hits = index.search_embedded(query, vector.as_deref(), limit, |d| {
            adjustments.get(&ids[d]).copied().unwrap_or(0.0)
        });
        (hits, vector)
    };
    for q in queries.iter().filter(|q| q.split == "tune") {
        let (hits, vector) = search("a", &q.query, 5);
        let shown: Vec<String> = hits.iter().map(|h| ids[h.doc].clone()).collect();
        store.record_embedded_search("a", &q.query, vector.as_deref(), &shown, now);
        match shown.iter().find(|s| q.relevant.contains(s)) {
            Some(found) => store.record_call("a", found, true, now),
            None => {
                if let Some(first) = shown.first() {
                    store.record_call("a", first, false, now);
                }
            }
        }
    }
    let rank = |tenant: Option<&str>, q: &eval::LabelledQuery| {
        let hits = match tenant {
            Some(t) => search(t, &q.query, ids.len()).0,
            None => index.search(&q.query, ids.len()),
        };
        hits.iter()
            .position(|h| q.relevant.contains(&ids[h.doc]))
            .map(|p| p + 1)
    };
    let test: Vec<_> = queries.iter().filter(|q| q.split == "test").collect();
    let metrics = |tenant| {
        eval::Metrics::from_ranks(&test.iter().map(|q| rank(tenant, q)).collect::<Vec<_>>())
    };
    let (before, after, other) = (metrics(None), metrics(Some("a")), metrics(Some("b")));
    println!(
        "MetaTool test split, {} queries: without signals {before:?}\nwith tenant a's signals {after:?}",
        test.len()
    );
    assert!(after.mrr > before.mrr, "{after:?} vs {before:?}");
    assert_eq!(other, before, "tenant b saw tenant a's signals");
    Ok(())
}
