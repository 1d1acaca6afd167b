//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

#[path = "../../tests/support/protected_upstream.rs"]
mod protected_upstream;
mod support;

mod cancelled_calls_reach_the_server;
mod dead_transport_marks_the_upstream_down;
mod lists_tools_across_pages;
mod oauth_refusals;
mod oauth_service_account;
mod tool_calls_pass_results_through;
