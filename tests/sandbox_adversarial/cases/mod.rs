//! The table of adversarial cases, by the kind of attack. Every case names
//! its code, what the full path must do, what the runtime alone must do, and
//! what must reach the host.

mod ambient_authority;
mod api_surface;
mod canary_reach;
mod engine_hooks;
mod host_arguments;
mod prototype_pollution;
mod resource_exhaustion;
mod stash_keys;
mod string_to_code;
mod syntax_tricks;

use std::collections::BTreeSet;

use super::{canaries::Canaries, case::Case};

/// Every case, in a fixed order.
pub fn all(canaries: &Canaries) -> Vec<Case> {
    let cases: Vec<Case> = [
        string_to_code::cases(),
        ambient_authority::cases(),
        engine_hooks::cases(),
        prototype_pollution::cases(),
        host_arguments::cases(),
        resource_exhaustion::cases(),
        stash_keys::cases(),
        api_surface::cases(),
        syntax_tricks::cases(),
        canary_reach::cases(canaries),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut names = BTreeSet::new();
    for case in &cases {
        assert!(
            names.insert(case.name.as_str()),
            "two cases are named `{}`",
            case.name
        );
    }
    cases
}
