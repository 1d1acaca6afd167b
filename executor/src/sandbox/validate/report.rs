//! What a rejected script is told: every violation with its rule id, message
//! and position. Self-contained (no parser types) so that the types can move to
//! a contract crate shared with clients; the rules themselves live elsewhere.

use std::fmt;

use serde::Serialize;

/// Every reason a script was rejected, sorted by position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationErrors {
    /// At most [`MAX_VIOLATIONS`] violations, deduplicated, in source order.
    pub errors: Vec<Violation>,
}

impl ValidationErrors {
    /// The rule ids of all violations, in order (handy in tests and logs).
    pub fn rules(&self) -> Vec<&'static str> {
        self.errors.iter().map(|v| v.rule).collect()
    }

    /// A rejection because validation itself could not complete.
    pub fn internal(message: &str) -> ValidationErrors {
        ValidationErrors {
            errors: vec![Violation {
                rule: "internal",
                message: message.to_string(),
                line: 1,
                column: 1,
            }],
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, violation) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// One rejected construct.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Stable rule id, e.g. `eval`, `constructor-chain`, `syntax`.
    pub rule: &'static str,
    /// What was found, why it is rejected and, where useful, what to do instead.
    pub message: String,
    /// 1-based line in the user's script.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, col {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// At most this many violations are reported.
pub const MAX_VIOLATIONS: usize = 20;
