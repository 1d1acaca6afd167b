//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

mod adapter_training;
mod encoder_reference;
mod installed_model;
mod semantic_search;
mod shared_index;
mod tenant_views_property;
