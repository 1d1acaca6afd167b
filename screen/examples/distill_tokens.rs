//! Builds the detector's token table (`screen/detector/tokens.bin`) from the
//! sentence model every role loads ([`TokenTable::distil`]): each word piece
//! of its vocabulary run through the model alone, projected onto the first
//! principal components, quantised to bytes.
//!
//! ```sh
//! scripts/install-model.sh
//! cargo run -p quiver-screen --example distill_tokens -- [OUT] [DIM]
//! ```
//!
//! Deterministic: the same model gives the same table (a test checks the
//! shipped one).

use anyhow::Context as _;
use quiver_screen::detector::{pca, table::TokenTable};
use quiver_view::search::{Embedder, semantic::default_model_dir};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .unwrap_or_else(|| "screen/detector/tokens.bin".into());
    let dim: usize = args
        .next()
        .map(|d| d.parse())
        .transpose()?
        .unwrap_or(pca::DIM);
    let dir = default_model_dir().context("set HOME or QUIVER_SEARCH_MODEL_DIR")?;
    let embedder = Embedder::load(&dir)?;
    let started = std::time::Instant::now();
    let table = TokenTable::distil(
        embedder.vocabulary()?,
        |batch| embedder.embed_ids(batch),
        dim,
    )?;
    std::fs::write(&out, table.to_bytes())?;
    eprintln!(
        "wrote {out} ({} word pieces, {dim} dimensions) in {:.1?}",
        table.len(),
        started.elapsed()
    );
    Ok(())
}
