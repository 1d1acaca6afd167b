//! A violation as the validator's passes report it: a byte offset into the
//! user's code, a rule id and a message. Turning offsets into lines and columns
//! and shaping what callers receive happen elsewhere.

/// A violation before its position is turned into line and column.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    /// Byte offset into the user's code.
    pub(crate) offset: usize,
    pub(crate) rule: &'static str,
    pub(crate) message: String,
}
