//! `quiver bench …`: the benchmarks live in a binary of their own,
//! `quiver-bench` (the `bench/` crate), so the shipped `quiver` holds none
//! of their code. This command runs the `quiver-bench` beside this binary
//! with the same arguments (in its place, on Unix); `cargo build --release`
//! builds both.

use std::{ffi::OsString, process::ExitCode};

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
    let mut command = std::process::Command::new(&bench);
    command.args(args);
    // Where a process can be replaced, the benchmark takes this one's place
    // (its signals and exit status are the caller's directly).
    #[cfg(unix)]
    let error = std::os::unix::process::CommandExt::exec(&mut command);
    #[cfg(not(unix))]
    let error = match command.status() {
        Ok(status) => {
            return match status.code() {
                Some(0) => ExitCode::SUCCESS,
                Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                None => ExitCode::FAILURE,
            };
        }
        Err(error) => error,
    };
    eprintln!("error: cannot run {}: {error}", bench.display());
    ExitCode::FAILURE
}
