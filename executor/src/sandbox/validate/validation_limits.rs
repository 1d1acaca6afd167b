//! The size and nesting limits a script is validated against, with their
//! defaults. Plain configuration: it knows nothing about how they are enforced.

/// Limits applied before and during validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationLimits {
    /// Largest accepted script, in bytes of UTF-8. Default 64 KiB.
    pub max_code_bytes: usize,
    /// Deepest accepted nesting of brackets, blocks, functions and expressions.
    /// Default 64.
    pub max_depth: usize,
}

impl Default for ValidationLimits {
    fn default() -> Self {
        Self {
            max_code_bytes: 64 * 1024,
            max_depth: 64,
        }
    }
}
