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
//!   epoch kept is the one with the best mean dev MRR of the cosine ranking;
//! - test: the `test` splits are read only for the report at the end.
//!
//! Loss: cross-entropy of the cosine against every tool of the query's
//! catalogue (temperature [`TAU`]) plus `l2 · ‖W − I‖²`, full-batch-free
//! Adam over shuffled batches of one source each; candle's autograd on the
//! CPU, single-threaded arithmetic order fixed by a seeded shuffle.
//!
//! ```sh
//! cargo run --release -p quiver-view --example train_adapter            # writes the artifact
//! cargo run --release -p quiver-view --example train_adapter -- --leave-out metatool --out /tmp/a.bin
//! ```
//! Options: `--out PATH`, `--leave-out SOURCE` (repeatable), `--epochs N`,
//! `--l2 X`, `--lr X`, `--max-queries N` (per source; a short run),
//! `--no-report`.

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
