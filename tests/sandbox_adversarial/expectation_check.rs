//! The one comparison of what a layer did with what a case expects. Both the
//! suite and its proof that a broken validator rule is noticed call
//! [`check`], so the proof exercises exactly the check the suite relies on.

use std::fmt;

use quiver_contract::ScriptOutcome;
use serde_json::{Value, json};

use super::{
    case::{Case, Expected, FullPath, MARK},
    recording_context::{HostCall, shortened},
};

/// Which way a case was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Static validation, then the hardened runtime.
    Full,
    /// The hardened runtime alone.
    RuntimeOnly,
}

/// How one run of a case ended.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Static validation refused it with these rule ids.
    Rejected(Vec<String>),
    /// It ran to an outcome.
    Ran(ScriptOutcome),
    /// The executor failed instead of containing it.
    Broke(String),
}

/// What a layer did with a case, and what reached the host meanwhile.
#[derive(Debug, Clone)]
pub struct Observed {
    pub verdict: Verdict,
    pub host: Vec<HostCall>,
    /// The victim session's stash value afterwards (a canary, not judged here).
    pub victim_value: Value,
}

/// A case that did not end as expected.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub case: String,
    pub path: Path,
    pub expected: String,
    pub actual: String,
}

/// Compares what `path` did with `case` against the case's expectation.
pub fn check(case: &Case, path: Path, observed: &Observed) -> Result<(), Mismatch> {
    let (expected_verdict, expected_host): (Option<&'static str>, &[HostCall]) =
        match (path, &case.full_path) {
            (Path::Full, FullPath::Rejected(rule)) => (Some(*rule), &[]),
            _ => (None, &case.host),
        };
    let escaped =
        matches!(&observed.verdict, Verdict::Ran(outcome) if outcome.result == Some(json!(MARK)));
    let verdict_ok = match (expected_verdict, &observed.verdict) {
        (Some(rule), Verdict::Rejected(rules)) => rules.iter().any(|r| r == rule),
        (None, Verdict::Ran(outcome)) => {
            meets(&case.runtime, outcome) && case.logs.as_ref().is_none_or(|l| *l == outcome.logs)
        }
        _ => false,
    };
    if !escaped && verdict_ok && observed.host == expected_host {
        return Ok(());
    }
    let expected = match expected_verdict {
        Some(rule) => format!("rejected by rule `{rule}`; nothing reaches the host"),
        None => {
            let validated = match path {
                Path::Full => "passes validation, then ",
                Path::RuntimeOnly => "",
            };
            let logs = match &case.logs {
                Some(lines) => format!(", logging {lines:?}"),
                None => String::new(),
            };
            format!(
                "{validated}{}{logs}; host sees {}",
                case.runtime,
                calls(expected_host)
            )
        }
    };
    let actual = match &observed.verdict {
        Verdict::Rejected(rules) => format!("rejected by rules {rules:?}"),
        Verdict::Ran(outcome) => format!(
            "{}{}",
            if escaped { "ESCAPED: " } else { "" },
            describe(outcome)
        ),
        Verdict::Broke(error) => format!("the executor failed: {error}"),
    };
    Err(Mismatch {
        case: case.name.clone(),
        path,
        expected,
        actual: format!("{actual}; host saw {}", calls(&observed.host)),
    })
}

fn meets(expected: &Expected, outcome: &ScriptOutcome) -> bool {
    match (expected, &outcome.error) {
        (Expected::Returns(value), None) => outcome.result.as_ref() == Some(value),
        (Expected::Fails(kind, fragment), Some(error)) => {
            error.kind == *kind && error.message.contains(fragment.as_str())
        }
        _ => false,
    }
}

/// An outcome in the terms of [`Expected`].
fn describe(outcome: &ScriptOutcome) -> String {
    let mut text = match (&outcome.error, &outcome.result) {
        (Some(error), _) => format!(
            "fails ({}) with {:?}",
            error.kind,
            shortened(&error.message)
        ),
        (None, Some(value)) => format!("returns {}", shortened(&value.to_string())),
        (None, None) => "returns nothing".to_string(),
    };
    match outcome.logs.len() {
        0 => {}
        1..=4 => text.push_str(&format!(", logging {:?}", outcome.logs)),
        n => text.push_str(&format!(", logging {n} lines")),
    }
    text
}

fn calls(calls: &[HostCall]) -> String {
    if calls.is_empty() {
        return "nothing".to_string();
    }
    const SHOWN: usize = 4;
    let mut text: Vec<String> = calls.iter().take(SHOWN).map(ToString::to_string).collect();
    if calls.len() > SHOWN {
        text.push(format!("… {} calls in all", calls.len()));
    }
    format!("[{}]", text.join(", "))
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Path::Full => "full path",
            Path::RuntimeOnly => "runtime only",
        })
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` ({}):\n    expected: {}\n    actual:   {}",
            self.case, self.path, self.expected, self.actual
        )
    }
}
