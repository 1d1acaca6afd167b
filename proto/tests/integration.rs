//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

mod common;

mod canonical_json;
mod catalog_datasets;
mod exposed_names;
mod manifest_datasets;
mod stub_golden;
mod stub_rendering;
