//! The `quiver` binary the benchmarks drive.

use std::path::PathBuf;

use anyhow::Context as _;

/// The `quiver` beside this binary (`cargo build` puts both in the same folder).
pub(crate) fn binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating quiver-bench")?;
    let quiver = exe.with_file_name("quiver");
    anyhow::ensure!(
        quiver.is_file(),
        "no `quiver` beside {} (build both with `cargo build --release`)",
        exe.display()
    );
    Ok(quiver)
}
