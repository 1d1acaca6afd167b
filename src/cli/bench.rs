//! `quiver bench …`: the benchmarks live in a binary of their own,
//! `quiver-bench` (the `bench/` crate), so the shipped `quiver` holds none
//! of their code. This command runs the `quiver-bench` beside this binary
//! with the same arguments; `cargo build --release` builds both.

use std::{ffi::OsString, os::unix::process::CommandExt as _, process::ExitCode};

/// The benchmarks' binary, looked for in this binary's folder.
const BENCH_BINARY: &str = "quiver-bench";

/// Replaces this process with `quiver-bench ARGS`; returns only when that
/// cannot be started, after saying why and how to build it.
pub fn run(args: &[OsString]) -> ExitCode {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(BENCH_BINARY)));
    let Some(bench) = beside.filter(|path| path.is_file()) else {
        eprintln!(
            "error: the benchmarks are a binary of their own, `{BENCH_BINARY}`, and there is none \
             beside this `quiver`; build both with `cargo build --release` (from the source tree) \
             and run `target/release/quiver bench …`"
        );
        return ExitCode::FAILURE;
    };
    let error = std::process::Command::new(&bench).args(args).exec();
    eprintln!("error: cannot run {}: {error}", bench.display());
    ExitCode::FAILURE
}
