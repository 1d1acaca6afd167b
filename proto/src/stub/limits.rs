//! The bounds every stub is rendered within: schema depth, declaration size,
//! signature and summary length. Plain constants, shared by the printers; this
//! file must not depend on any other part of the stub.

/// Deepest schema nesting (objects, arrays) rendered before types become `unknown`.
pub const MAX_SCHEMA_DEPTH: usize = 8;
/// Largest declaration, in bytes; bigger schemas are shown shortened.
pub const MAX_DECLARATION_BYTES: usize = 16 * 1024;
/// Longest signature, in characters.
pub const MAX_SIGNATURE_CHARS: usize = 200;
/// Longest summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 90;
/// Optional arguments are shown in a signature only while it stays within this many characters.
pub const SIGNATURE_OPTIONAL_BUDGET: usize = 80;
