//! Checks applied to a script before it runs.

pub mod validate;
