//! The query adapter's training, run short, and the path that loads what it
//! writes. Needs the model (scripts/install-model.sh), unless
//! QUIVER_PARTIAL_TESTS=1 marks a local partial run.

use std::path::PathBuf;

use quiver_view::search::{QueryAdapter, SemanticModel};

use crate::installed_model::model_dir;

#[allow(dead_code)]
#[path = "../examples/train_adapter/train.rs"]
mod train;

#[test]
fn a_short_training_run_learns_and_its_file_loads() -> anyhow::Result<()> {
    let Some(dir) = model_dir()? else {
        return Ok(());
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let scratch = tempfile::tempdir()?;
    let out = scratch.path().join("adapter.bin");
    let options = train::Options {
        out: out.clone(),
        leave_out: Vec::new(),
        epochs: 3,
        l2: vec![1e-3],
        lr: 3e-3,
        max_queries: 600,
        report: false,
        check: false,
        allowance: 1.0,
    };
    let outcome = train::run(&root, &options)?;
    // MetaTool's tune split ranks better by cosine after training on its
    // other queries.
    let metatool = outcome
        .sets
        .iter()
        .position(|s| s == "metatool")
        .expect("metatool is a dev set");
    assert!(
        outcome.after[metatool] > outcome.before[metatool] + 0.01,
        "dev MRR {} → {}",
        outcome.before[metatool],
        outcome.after[metatool]
    );
    // What was written loads, names this model, and moves query vectors.
    let adapter = QueryAdapter::from_bytes(&std::fs::read(&out)?)?;
    let model = SemanticModel::load(&dir, None)?.with_query_cache(0);
    assert_eq!(adapter.model(), model.embedder().id());
    let raw = model.embedder().embed_one("what is the weather in Paris")?;
    let adapted = model
        .with_adapter(Some(adapter.clone()))
        .query_vector("what is the weather in Paris")?;
    assert_eq!(adapted, adapter.apply(&raw));
    assert_ne!(adapted, raw);
    Ok(())
}

#[test]
fn the_shipped_adapter_is_on_by_default_for_its_model() -> anyhow::Result<()> {
    let Some(dir) = model_dir()? else {
        return Ok(());
    };
    let model = SemanticModel::load(&dir, None)?;
    let adapter = model.adapter().expect("the shipped adapter applies");
    assert_eq!(Some(adapter), QueryAdapter::shipped().ok().as_ref());
    assert!(model.with_adapter(None).adapter().is_none());
    Ok(())
}
