//! What screening found in a tool definition: a rule, a severity, the field
//! and the span of text that matched. Findings travel with the manifest so
//! that every node (and every tenant's view) sees the same ones.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::pb;

/// How much a finding matters; ordered `Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth showing an operator; served.
    Low,
    /// Suspicious; served unless a policy holds it.
    Medium,
    /// An attempt to steer the model; held back by default.
    High,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 3] = [Severity::Low, Severity::Medium, Severity::High];

    /// The configuration and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    /// Parses `low`, `medium` or `high`.
    pub fn parse(text: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a rule found in one field of a tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    /// The rule's id (`hidden-characters`, `exfiltration`, …; see
    /// docs/security.md).
    pub rule: String,
    /// How much it matters.
    pub severity: Severity,
    /// Where: `name`, `description`, `inputSchema.properties.path.description`, ….
    pub field: String,
    /// First character (not byte) of the span, in the field's text as the
    /// upstream sent it.
    pub start: u32,
    /// One past its last character.
    pub end: u32,
    /// The span (shortened to about 200 characters), invisible characters
    /// written as `\u{…}` so that an operator can see them.
    pub excerpt: String,
}

impl From<&Finding> for pb::Finding {
    fn from(f: &Finding) -> pb::Finding {
        pb::Finding {
            rule: f.rule.clone(),
            severity: match f.severity {
                Severity::Low => pb::Severity::Low,
                Severity::Medium => pb::Severity::Medium,
                Severity::High => pb::Severity::High,
            }
            .into(),
            field: f.field.clone(),
            start: f.start,
            end: f.end,
            excerpt: f.excerpt.clone(),
        }
    }
}

impl From<&pb::Finding> for Finding {
    fn from(f: &pb::Finding) -> Finding {
        Finding {
            rule: f.rule.clone(),
            severity: match f.severity() {
                pb::Severity::Low | pb::Severity::Unspecified => Severity::Low,
                pb::Severity::Medium => Severity::Medium,
                pb::Severity::High => Severity::High,
            },
            field: f.field.clone(),
            start: f.start,
            end: f.end,
            excerpt: f.excerpt.clone(),
        }
    }
}
