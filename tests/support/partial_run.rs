//! Inputs the tests need from outside the repository (`../shared/datasets`).
//! A missing input fails the test; only `QUIVER_PARTIAL_TESTS=1`, which marks
//! a local partial run, turns that into a skip with a note. CI never sets it.
//! Std only: the proto crate's tests include this file too.

use std::path::{Path, PathBuf};

/// The variable that marks a local run allowed to skip tests whose inputs are
/// absent (the same one the view crate's model tests read).
pub const PARTIAL_TESTS_ENV: &str = "QUIVER_PARTIAL_TESTS";

/// `path` when it exists. When it does not: `None` (the caller returns, and the
/// skip is printed) if this is a partial run, else the test fails with `fix`.
pub fn required_input(path: &Path, fix: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path.to_path_buf());
    }
    let partial = std::env::var_os(PARTIAL_TESTS_ENV).is_some_and(|v| v == "1");
    assert!(
        partial,
        "{} not found: {fix}; or set {PARTIAL_TESTS_ENV}=1 for a local partial run",
        path.display()
    );
    eprintln!(
        "SKIPPED ({PARTIAL_TESTS_ENV}=1): {} not found",
        path.display()
    );
    None
}
