//! Why static validation refused a script: every violation, with its rule id
//! and position. The validator produces it; the edge shows it to the model;
//! the gRPC wire carries it whole.

use std::{borrow::Cow, fmt};

use serde::{Deserialize, Serialize};

/// At most this many violations are reported.
pub const MAX_VIOLATIONS: usize = 20;

/// Every reason a script was rejected, sorted by position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationErrors {
    /// At most [`MAX_VIOLATIONS`] violations, deduplicated, in source order.
    pub errors: Vec<Violation>,
}

impl ValidationErrors {
    /// The rule ids of all violations, in order (handy in tests and logs).
    pub fn rules(&self) -> Vec<&str> {
        self.errors.iter().map(|v| v.rule.as_ref()).collect()
    }

    /// A rejection because validation itself could not complete.
    pub fn internal(message: &str) -> ValidationErrors {
        ValidationErrors {
            errors: vec![Violation {
                rule: Cow::Borrowed("internal"),
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Stable rule id, e.g. `eval`, `constructor-chain`, `syntax`.
    pub rule: Cow<'static, str>,
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
