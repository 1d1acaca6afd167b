//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

mod support;

mod code_mode_describe_declaration;
mod code_mode_execute_rejected;
mod code_mode_execute_script_error;
mod code_mode_execute_success;
mod code_mode_lists_meta_tools;
mod jwt_validation;
mod listing_saves_tokens;
mod operation_duration_metrics;
mod passthrough_forwards_client_arguments;
mod passthrough_lists_namespaced_tools;
mod passthrough_rejects_invalid_arguments;
mod passthrough_unknown_tool_suggests;
mod search_call_tool_forwards;
mod search_tools_returns_hits;
mod upstream_error_redacted;
