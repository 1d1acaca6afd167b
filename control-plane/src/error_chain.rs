//! An error and its causes as one line, for text that leaves the error type
//! behind (a log line, the detail inside an operator-facing message).

/// `error: cause: cause of the cause`.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
