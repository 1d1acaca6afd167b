//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

mod engine_bench;
mod engine_hardening;
mod engine_intrinsics_allowlist;
mod engine_limits;
mod engine_script_api;
mod validate_benign;
mod validate_escapes;
mod validate_fuzz;
mod worker_loop;
mod worker_process;
