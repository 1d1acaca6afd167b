//! Shows an error with every cause behind it (`a: b: c`), for the places in
//! this crate that log an error or fold it into a report. Library errors keep
//! their causes as sources, so their own message never repeats them.

use std::{error::Error, fmt};

/// Displays an error followed by each of its sources, separated by `: `.
pub(crate) struct ErrorChain<'a>(pub(crate) &'a (dyn Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("loading corpus x")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_follows_the_message() {
        let error = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(
            ErrorChain(&error).to_string(),
            "loading corpus x: disk on fire"
        );
    }
}
