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

/// From which severity of finding a tool is held back: served to nobody
/// (an upstream's policy) or hidden from one tenant (a tenant's). The
/// spellings are `low`, `medium`, `high` and `never`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HoldAt {
    /// Any finding holds the tool back.
    Low,
    /// Medium and high findings do.
    Medium,
    /// Only high findings do (the default).
    #[default]
    High,
    /// Nothing is held back (findings are still reported).
    Never,
}

impl HoldAt {
    /// Every setting, strictest first.
    pub const ALL: [HoldAt; 4] = [HoldAt::Low, HoldAt::Medium, HoldAt::High, HoldAt::Never];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldAt::Low => "low",
            HoldAt::Medium => "medium",
            HoldAt::High => "high",
            HoldAt::Never => "never",
        }
    }

    /// Parses a configuration spelling; the error names the valid ones.
    pub fn parse(text: &str) -> Result<HoldAt, UnknownHoldLevel> {
        HoldAt::ALL
            .into_iter()
            .find(|h| h.as_str() == text)
            .ok_or_else(|| UnknownHoldLevel(text.to_string()))
    }

    /// Whether a tool whose worst finding is `worst` is held back.
    pub fn holds(self, worst: Option<Severity>) -> bool {
        let Some(worst) = worst else {
            return false;
        };
        match self {
            HoldAt::Low => true,
            HoldAt::Medium => worst >= Severity::Medium,
            HoldAt::High => worst >= Severity::High,
            HoldAt::Never => false,
        }
    }

    /// Whether a tool with `findings` is held back.
    pub fn holds_any(self, findings: &[Finding]) -> bool {
        self.holds(findings.iter().map(|f| f.severity).max())
    }
}

/// A hold level that is not `low`, `medium`, `high` or `never`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a hold level; use low, medium, high or never")]
pub struct UnknownHoldLevel(pub String);

impl fmt::Display for HoldAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_levels_hold_what_reaches_them() {
        assert!(!HoldAt::High.holds(None));
        assert!(!HoldAt::High.holds(Some(Severity::Medium)));
        assert!(HoldAt::High.holds(Some(Severity::High)));
        assert!(HoldAt::Medium.holds(Some(Severity::Medium)));
        assert!(!HoldAt::Medium.holds(Some(Severity::Low)));
        assert!(HoldAt::Low.holds(Some(Severity::Low)));
        assert!(!HoldAt::Never.holds(Some(Severity::High)));
        assert!(
            HoldAt::parse("sometimes")
                .unwrap_err()
                .to_string()
                .contains("low, medium, high or never")
        );
    }
}
