//! Shorthands for the unit tests of the validator's parts: run the whole
//! pipeline on a snippet and look at the rule ids it reports. The pipeline's own
//! tests in `mod.rs` call `validate` directly, so the two never import each other.

pub(super) use super::{ValidationErrors, ValidationLimits, validate};

pub(super) fn check(code: &str) -> Result<(), ValidationErrors> {
    validate(code, &ValidationLimits::default())
}

pub(super) fn rules(code: &str) -> Vec<String> {
    match check(code) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.rules().into_iter().map(String::from).collect(),
    }
}

#[track_caller]
pub(super) fn assert_rule(code: &str, rule: &str) {
    let found = rules(code);
    assert!(
        found.iter().any(|r| r == rule),
        "expected `{rule}` for {code:?}, got {found:?}"
    );
}

#[track_caller]
pub(super) fn assert_ok(code: &str) {
    if let Err(errors) = check(code) {
        panic!("expected {code:?} to pass, got:\n{errors}");
    }
}
