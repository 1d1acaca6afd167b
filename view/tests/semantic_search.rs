//! Semantic search with the real model (installed by scripts/install-model.sh;
//! scripts/test.sh runs it first). Without the model these tests fail, unless
//! QUIVER_PARTIAL_TESTS=1 marks a local partial run.

use std::{path::PathBuf, sync::Arc};

use quiver_view::search::{
    Blend, HybridIndex, SearchDoc, SearchHit, SemanticModel,
    eval::{self, Ranker},
    semantic::default_model_dir,
};

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

use crate::installed_model::model;

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

/// The test-split rows of a public benchmark ranked with `model`.
fn test_row(name: &str, model: &Arc<SemanticModel>) -> anyhow::Result<eval::EvalRow> {
    let path = project_root().join(format!("tests/data/search/public/{name}/queries.json"));
    let report = eval::run(
        &project_root().join("../shared/datasets"),
        &path,
        Some(model),
    )?;
    println!("{report}");
    Ok(report
        .rows
        .into_iter()
        .find(|r| r.split == "test")
        .expect("test row"))
}

/// On the frozen test split of both public benchmarks, the hybrid of the
/// model's own vectors beats our lexical ranking and the model alone on MRR
/// (how the blend earns its place). With the query adapter, as served, the
/// hybrid still beats the lexical side on both, and on MetaTool (whose
/// other queries the adapter learned from) beats the hybrid without it.
/// There the adapted cosine alone ranks better still (docs/benchmarks.md,
/// "Issue 55"): the blend was kept because it serves every set best.
#[test]
fn hybrid_beats_each_side_on_the_public_test_splits() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let dir = default_model_dir().expect("HOME or QUIVER_SEARCH_MODEL_DIR is set");
    let raw = Arc::new(SemanticModel::load(&dir, None)?.with_adapter(None));
    for name in ["azure-mcp", "metatool"] {
        let row = test_row(name, &raw)?;
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
        let served = test_row(name, &model)?;
        let adapted = served.get(Ranker::Hybrid).expect("ranker ran");
        assert!(
            adapted.mrr > served.get(Ranker::Lexical).expect("ranker ran").mrr,
            "{name}: hybrid with the adapter {adapted:?}"
        );
        if name == "metatool" {
            assert!(
                adapted.mrr > hybrid.mrr + 0.05,
                "{name}: the adapter's hybrid {adapted:?} against {hybrid:?}"
            );
        }
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
        "public/seal-tools/queries.json",
        "public/apibench-huggingface/queries.json",
        "public/apibench-torchhub/queries.json",
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
    // A blend is eligible when no set's tune MRR falls more than 0.01
    // below what the blend it replaces (`previous`) gives; the best mean of
    // the eligible ones is chosen. The blend before the query adapter
    // (issue 55) replaced one of lexical 0.6, cosine 0.1–0.7, min 0.2.
    let previous = Blend {
        lexical: 0.7,
        semantic: 0.3,
        cos_floor: 0.1,
        cos_ceiling: 0.9,
        min_semantic_only: 0.1,
    };
    let mrr = |blend: &Blend, set: &[eval::PreparedQuery]| {
        let ranks: Vec<_> = set.iter().map(|p| p.hybrid_rank(blend)).collect();
        eval::Metrics::from_ranks(&ranks).mrr
    };
    let floor: Vec<f64> = sets
        .iter()
        .map(|(_, set)| mrr(&previous, set) - 0.01)
        .collect();
    let mut best = (f64::NEG_INFINITY, previous);
    for blend in grid() {
        let mut line = format!(
            "{:.1} {:.1} {:.1} {:.1} |",
            blend.lexical, blend.cos_floor, blend.cos_ceiling, blend.min_semantic_only
        );
        let mut mean = 0.0;
        let mut eligible = true;
        for ((_, set), floor) in sets.iter().zip(&floor) {
            let ranks: Vec<_> = set.iter().map(|p| p.hybrid_rank(&blend)).collect();
            let m = eval::Metrics::from_ranks(&ranks);
            mean += m.mrr / sets.len() as f64;
            eligible &= m.mrr >= *floor;
            line += &format!(" {:.3} {:.3} {:.3} |", m.hit_at_1, m.hit_at_5, m.mrr);
        }
        println!("{line} mean MRR {mean:.4}");
        if eligible && mean > best.0 {
            best = (mean, blend);
        }
    }
    println!(
        "best on the tune splits, no set 0.01 below the previous blend: {:?} (mean MRR {:.4})",
        best.1, best.0
    );
    for (file, set) in &sets {
        let report = eval::report(set, &Blend::DEFAULT);
        println!("{file}\n{report}");
    }
    Ok(())
}

/// The blends [`tune_blend`] tries.
fn grid() -> Vec<Blend> {
    let mut grid = Vec::new();
    for lexical in [0.3f32, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] {
        for cos_floor in [0.0f32, 0.1, 0.2] {
            for cos_ceiling in [0.6f32, 0.7, 0.8, 0.9] {
                for min_semantic_only in [0.1f32, 0.2, 0.3] {
                    grid.push(Blend {
                        lexical,
                        semantic: 1.0 - lexical,
                        cos_floor,
                        cos_ceiling,
                        min_semantic_only,
                    });
                }
            }
        }
    }
    grid
}

/// A tenant's agent searching one catalogue with a signal store, as
/// `ToolView::search_for` does: one embedding ranks the tools and matches the
/// tenant's past queries by meaning.
struct Learner<'a> {
    index: &'a HybridIndex,
    ids: &'a [String],
    store: quiver_view::search::SignalStore,
    now: u64,
}

impl Learner<'_> {
    fn search(
        &self,
        tenant: &str,
        query: &str,
        limit: usize,
    ) -> (Vec<SearchHit>, Option<Vec<f32>>) {
        // As `ToolView::search_for`: ranked with the adapted vector, matched
        // with past queries by the model's own.
        let (vector, own) = self.index.query_vectors(query).unzip();
        let adjustments = self
            .store
            .embedded_adjustments(tenant, query, own.as_deref(), self.now);
        let hits = self
            .index
            .search_embedded(query, vector.as_deref(), limit, |d| {
                adjustments.get(&self.ids[d]).copied().unwrap_or(0.0)
            });
        (hits, own)
    }

    /// The agent looks at the first five; when the tool it needs is not
    /// there it asks for twenty and calls it if it is there; else it calls
    /// the first hit, which fails.
    fn replay(&self, tenant: &str, queries: &[&eval::LabelledQuery]) {
        for q in queries {
            let mut first = None;
            for limit in [5, 20] {
                let (hits, vector) = self.search(tenant, &q.query, limit);
                let shown: Vec<String> = hits.iter().map(|h| self.ids[h.doc].clone()).collect();
                self.store.record_embedded_search(
                    tenant,
                    &q.query,
                    vector.as_deref(),
                    &shown,
                    self.now,
                );
                first = shown.first().cloned();
                if let Some(found) = shown.iter().find(|s| q.relevant.contains(s)) {
                    self.store.record_call(tenant, found, true, self.now);
                    first = None;
                    break;
                }
            }
            if let Some(first) = first {
                self.store.record_call(tenant, &first, false, self.now);
            }
        }
    }

    /// Metrics of `queries` as `tenant` (`None`: no signals at all).
    fn metrics(&self, tenant: Option<&str>, queries: &[&eval::LabelledQuery]) -> eval::Metrics {
        let ranks: Vec<Option<usize>> = queries
            .iter()
            .map(|q| {
                let hits = match tenant {
                    Some(t) => self.search(t, &q.query, self.ids.len()).0,
                    None => self.index.search(&q.query, self.ids.len()),
                };
                hits.iter()
                    .position(|h| q.relevant.contains(&self.ids[h.doc]))
                    .map(|p| p + 1)
            })
            .collect();
        eval::Metrics::from_ranks(&ranks)
    }
}

/// A public set's hybrid index, tool ids and labelled queries.
type PublicSet = (HybridIndex, Vec<String>, Vec<eval::LabelledQuery>);

/// A public set loaded and indexed with the model (with or without the
/// query adapter), if the model is installed.
fn public_set(name: &str, adapter: bool) -> anyhow::Result<Option<PublicSet>> {
    use quiver_view::search::corpus::Corpus;
    let Some(model) = model()? else {
        return Ok(None);
    };
    let model = match adapter {
        true => model,
        false => {
            let dir = default_model_dir().expect("HOME or QUIVER_SEARCH_MODEL_DIR is set");
            Arc::new(SemanticModel::load(&dir, None)?.with_adapter(None))
        }
    };
    let dir = project_root().join("tests/data/search/public").join(name);
    let corpus = Corpus::load_file(&dir.join("tools.json"), name)?;
    let index = HybridIndex::build(&corpus.docs, Some(model));
    let queries = eval::load_queries(&dir.join("queries.json"))?;
    Ok(Some((index, corpus.ids(), queries)))
}

/// A tenant `a` replays the `tune` queries of `set` as an agent would
/// ([`Learner::replay`]); then the `test` queries, never replayed, are
/// measured without signals, with `a`'s, and as tenant `b`, which replayed
/// nothing.
fn signal_lift(
    set: &str,
    adapter: bool,
) -> anyhow::Result<Option<(eval::Metrics, eval::Metrics, eval::Metrics)>> {
    use quiver_view::search::{SignalConfig, SignalStore};
    let Some((index, ids, queries)) = public_set(set, adapter)? else {
        return Ok(None);
    };
    let learner = Learner {
        index: &index,
        ids: &ids,
        store: SignalStore::in_memory(SignalConfig::default()),
        now: 1_000_000,
    };
    let tune: Vec<_> = queries.iter().filter(|q| q.split == "tune").collect();
    let test: Vec<_> = queries.iter().filter(|q| q.split == "test").collect();
    learner.replay("a", &tune);
    let measured = (
        learner.metrics(None, &test),
        learner.metrics(Some("a"), &test),
        learner.metrics(Some("b"), &test),
    );
    println!(
        "{set} test split ({} queries), query adapter {}: without signals {:?}\nwith tenant a's signals {:?}",
        test.len(),
        if adapter { "on" } else { "off" },
        measured.0,
        measured.1
    );
    Ok(Some(measured))
}

/// Learning from outcomes, simulated on MetaTool as served (the query
/// adapter on): `a`'s later searches improve, `b`'s are exactly as without
/// signals.
#[test]
fn outcomes_improve_later_searches_of_that_tenant_only() -> anyhow::Result<()> {
    let Some((before, after, other)) = signal_lift("metatool", true)? else {
        return Ok(());
    };
    // Measured at +0.006 MRR and +0.012 Hit@1 with the settings chosen
    // for the adapter (the earlier settings lost 0.005 MRR here).
    assert!(
        after.mrr > before.mrr && after.hit_at_1 > before.hit_at_1,
        "{after:?} vs {before:?}"
    );
    assert_eq!(other, before, "tenant b saw tenant a's signals");
    Ok(())
}

/// What the signals add without and on top of the query adapter, on a set it
/// trained on (MetaTool) and on sets it never saw; printed for
/// docs/benchmarks.md.
/// Tenant isolation holds either way.
/// `cargo test --release -p quiver-view --test integration semantic_search::outcomes_on_top_of_the_adapter -- --ignored --nocapture`
#[test]
#[ignore = "prints figures; run in release"]
fn outcomes_on_top_of_the_adapter() -> anyhow::Result<()> {
    for set in ["metatool", "azure-mcp", "apibench-huggingface"] {
        for adapter in [false, true] {
            let Some((before, _, other)) = signal_lift(set, adapter)? else {
                return Ok(());
            };
            assert_eq!(other, before, "tenant b saw tenant a's signals");
        }
    }
    Ok(())
}

/// How the signals' similarity settings were chosen, on tune splits alone:
/// for MetaTool (distinct tools; the query adapter trained on its other
/// queries), azure-mcp (many sibling tools of one server) and APIBench
/// HuggingFace (many near-equivalent models), half of each tune split (by
/// position) is replayed, the other half measured. Kept: the best mean MRR
/// lift among settings that cost no set more than 0.005. (The first
/// settings were chosen on MetaTool alone and cost azure-mcp 0.08 test MRR.)
/// `cargo test --release -p quiver-view --test integration semantic_search::tune_signals -- --ignored --nocapture`
#[test]
#[ignore = "prints a grid; run in release"]
fn tune_signals() -> anyhow::Result<()> {
    use quiver_view::search::{SignalConfig, SignalStore};
    let mut sets = Vec::new();
    for name in ["metatool", "azure-mcp", "apibench-huggingface"] {
        let Some(set) = public_set(name, true)? else {
            return Ok(());
        };
        sets.push((name, set));
    }
    let mut best: Option<(f64, SignalConfig)> = None;
    for max_adjustment in [0.05f32, 0.1, 0.15, 0.25] {
        for cosine_floor in [0.3f32, 0.5, 0.7, 0.8] {
            for min_similarity in [0.1f32, 0.25, 0.5] {
                let config = SignalConfig {
                    max_adjustment,
                    cosine_floor,
                    min_similarity,
                    ..SignalConfig::default()
                };
                let mut line = format!(
                    "max {max_adjustment:.2} floor {cosine_floor:.1} min {min_similarity:.2}:"
                );
                let (mut mean, mut harmless) = (0.0, true);
                for (name, (index, ids, queries)) in &sets {
                    let tune: Vec<_> = queries.iter().filter(|q| q.split == "tune").collect();
                    let replayed: Vec<_> = tune.iter().step_by(2).copied().collect();
                    let measured: Vec<_> = tune.iter().skip(1).step_by(2).copied().collect();
                    let learner = Learner {
                        index,
                        ids,
                        store: SignalStore::in_memory(config),
                        now: 1_000_000,
                    };
                    learner.replay("a", &replayed);
                    let before = learner.metrics(None, &measured);
                    let after = learner.metrics(Some("a"), &measured);
                    let lift = after.mrr - before.mrr;
                    mean += lift / sets.len() as f64;
                    harmless &= lift >= -0.005;
                    line += &format!(
                        " {name} {:.4} -> {:.4} ({lift:+.4});",
                        before.mrr, after.mrr
                    );
                }
                println!(
                    "{line} mean lift {mean:+.4}{}",
                    if harmless { "" } else { " (harms a set)" }
                );
                if harmless && best.as_ref().is_none_or(|(m, _)| mean > *m) {
                    best = Some((mean, config));
                }
            }
        }
    }
    println!("best mean lift on the measured halves, harming no set: {best:?}");
    Ok(())
}

/// Where a query's embedding time goes. `cargo test --release -p quiver-view --test integration semantic_search::query_embedding_profile -- --ignored --nocapture`
#[test]
#[ignore = "prints timings; run in release"]
fn query_embedding_profile() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let embedder = model.embedder();
    let queries = [
        "create a github issue",
        "weather forecast for a city in europe next week",
    ];
    for q in queries {
        let _ = embedder.embed_one(q)?;
        let started = std::time::Instant::now();
        for _ in 0..50 {
            std::hint::black_box(embedder.embed_one(q)?);
        }
        println!("{q:?}: {:?} per embedding", started.elapsed() / 50);
    }
    Ok(())
}

#[test]
fn a_repeated_query_gets_the_vector_it_got_before() -> anyhow::Result<()> {
    let Some(model) = model()? else { return Ok(()) };
    let first = model.query_vector("weather forecast for a city")?;
    let again = model.query_vector("weather forecast for a city")?;
    assert_eq!(first, again);
    // Without a cache the embedding itself gives the same vector.
    let dir = default_model_dir().expect("HOME or QUIVER_SEARCH_MODEL_DIR is set");
    let uncached = SemanticModel::load(&dir, None)?.with_query_cache(0);
    let fresh = uncached.query_vector("weather forecast for a city")?;
    let diff = first
        .iter()
        .zip(&fresh)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "cached and fresh vectors differ by {diff}");
    Ok(())
}
