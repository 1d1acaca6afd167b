//! Trains the query adapter (`view/adapter/query-adapter.bin`): a linear map
//! `W` over the sentence model's query vectors, so that `normalise(W q)`
//! lands near the vectors of the tools that answer `q`.
//!
//! Data (public, licences next to it; how it was derived:
//! scripts/build-search-train.py):
//! - train: `tests/data/search/train/{metatool,apibench-torchhub,tensorflowhub}`
//!   (MetaTool's labelled queries other than the benchmark's, APIBench's
//!   torchhub train split, TensorFlow Hub's queries), each against its
//!   catalogue;
//! - dev: the `tune` split of every public benchmark in
//!   `tests/data/search/public/` (three of them, azure-mcp, seal-tools and
//!   apibench-huggingface, are sources the adapter never trains on). The
//!   adapter kept is the one with the best mean dev MRR of the cosine
//!   ranking among those that cost no dev set more than 0.01;
//! - test: the `test` splits are read only for the report at the end.
//!
//! Loss: cross-entropy of the cosine against every tool of the query's
//! catalogue (temperature 0.05) plus `l2 · ‖W − I‖²`, Adam over batches of
//! one source each in a seeded shuffle; candle's autograd on the CPU.
//!
//! ```sh
//! cargo run --release -p quiver-view --example train_adapter            # writes the artifact
//! cargo run --release -p quiver-view --example train_adapter -- --leave-out metatool --out /tmp/a.bin
//! ```
//! Options: `--out PATH`, `--leave-out SOURCE` (repeatable), `--epochs N`
//! (5),
//! `--l2 X,Y,…` (strengths tried; 0.001,0.01,0.03,0.1), `--lr X`,
//! `--max-queries N` (per source and split; a short run),
//! `--allowance X` (dev MRR any dev set may lose; 0.01), `--no-report`,
//! `--check` (train, then compare with the file at `--out` instead of
//! writing it).
//! A source left out is also left out of the dev sets that choose the
//! epoch, so its test figures are a clean leave-one-source-out.

mod train;

fn main() -> anyhow::Result<()> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let options = train::options(&root)?;
    let outcome = train::run(&root, &options)?;
    for ((set, before), after) in outcome.sets.iter().zip(&outcome.before).zip(&outcome.after) {
        eprintln!("dev {set}: cosine MRR {before:.3} → {after:.3}");
    }
    Ok(())
}
