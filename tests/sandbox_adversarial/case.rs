//! One adversarial case as data: its code, and what each layer must make of
//! it. The tables in `cases/` are lists of these; `expectation_check` holds the
//! one comparison both tests of the suite apply to them.

use std::fmt;

use quiver_contract::{Limits, ScriptErrorKind};
use serde_json::Value;

use super::recording_context::HostCall;

/// The value a script returns if an attack worked.
pub const MARK: &str = "ESCAPED";

/// Wall time of a case expected to time out.
pub const TIMEOUT_WALL_MS: u64 = 1_000;
/// Wall time of every other case: generous, so that a loaded machine cannot
/// turn a case that ends by itself (or at the memory limit) into a timeout.
pub const GENEROUS_WALL_MS: u64 = 10_000;

/// An escape attempt and its expected outcomes.
#[derive(Debug, Clone)]
pub struct Case {
    /// Unique, printed with every failure.
    pub name: String,
    /// The script (the body of an async function).
    pub code: String,
    /// What the full path (static validation, then the runtime) must do.
    pub full_path: FullPath,
    /// What the runtime alone (no validation) must do.
    pub runtime: Expected,
    /// Every request that must reach the host, in order, when the script runs.
    pub host: Vec<HostCall>,
    /// The exact console output, where the case is about what it shows.
    pub logs: Option<Vec<String>>,
}

impl Case {
    /// A case whose script sends nothing to the host.
    pub fn new(name: &str, code: &str, full_path: FullPath, runtime: Expected) -> Case {
        Case {
            name: name.to_string(),
            code: code.to_string(),
            full_path,
            runtime,
            host: Vec::new(),
            logs: None,
        }
    }

    /// The same case, sending exactly `calls` to the host.
    pub fn reaching_host(mut self, calls: Vec<HostCall>) -> Case {
        self.host = calls;
        self
    }

    /// The same case, logging exactly `lines`.
    pub fn logging(mut self, lines: &[&str]) -> Case {
        self.logs = Some(lines.iter().map(ToString::to_string).collect());
        self
    }

    /// The limits it runs under: the defaults, with a wall time of
    /// [`TIMEOUT_WALL_MS`] if it is expected to time out, else
    /// [`GENEROUS_WALL_MS`].
    pub fn limits(&self) -> Limits {
        let wall_ms = match self.runtime {
            Expected::Fails(ScriptErrorKind::Timeout, _) => TIMEOUT_WALL_MS,
            _ => GENEROUS_WALL_MS,
        };
        Limits {
            wall_ms,
            ..Limits::default()
        }
    }
}

/// The full path's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FullPath {
    /// Static validation refuses it, reporting (among others) this rule id;
    /// nothing runs and nothing reaches the host.
    Rejected(&'static str),
    /// Static validation lets it through; the runtime must then do what the
    /// case's runtime expectation says.
    Runs,
}

/// What the runtime makes of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// It finishes with exactly this value (no error).
    Returns(Value),
    /// It fails with this kind, the message containing the fragment.
    Fails(ScriptErrorKind, String),
}

/// Shorthand for [`FullPath::Rejected`].
pub fn rejected(rule: &'static str) -> FullPath {
    FullPath::Rejected(rule)
}

/// Shorthand for [`Expected::Returns`].
pub fn returns(value: Value) -> Expected {
    Expected::Returns(value)
}

/// An uncaught exception whose text contains `fragment`.
pub fn throws(fragment: impl Into<String>) -> Expected {
    Expected::Fails(ScriptErrorKind::Runtime, fragment.into())
}

/// A failure of `kind` whose message contains `fragment`.
pub fn fails(kind: ScriptErrorKind, fragment: impl Into<String>) -> Expected {
    Expected::Fails(kind, fragment.into())
}

impl fmt::Display for FullPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FullPath::Rejected(rule) => write!(f, "rejected by rule `{rule}`"),
            FullPath::Runs => write!(f, "passes validation"),
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Returns(value) => write!(f, "returns {}", shorten(&value.to_string())),
            Expected::Fails(kind, fragment) => write!(f, "fails ({kind}) with {fragment:?}"),
        }
    }
}

fn shorten(text: &str) -> String {
    super::recording_context::shortened(text)
}
