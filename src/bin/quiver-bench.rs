//! `quiver-bench`: Quiver's benchmarks (the `quiver-bench` crate), a binary
//! apart from the shipped `quiver`; `quiver bench …` runs it.

fn main() -> std::process::ExitCode {
    quiver_bench::main()
}
