//! The adversarial suite: escape attempts run through real worker processes,
//! once through the full path (static validation, then the hardened runtime)
//! and once straight into the runtime, so each layer is shown to hold on its
//! own. Every case carries its expected outcome on each path and exactly what
//! may reach the host (`sandbox_adversarial/cases/`); canaries planted outside
//! the sandbox (an environment variable, a file, another session's stash, a
//! loopback listener) are checked from outside after every case.

#[path = "sandbox_adversarial/mod.rs"]
mod adversarial;

use adversarial::{
    canaries::Canaries,
    case::FullPath,
    cases,
    expectation_check::{Mismatch, Path, check},
    layer_summary::layer_summary,
    suite::{Suite, Validator},
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn report(mismatches: &[Mismatch], cases: usize) -> String {
    let listed: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
    format!(
        "{} of {cases} cases did not end as expected:\n{}",
        mismatches.len(),
        listed.join("\n")
    )
}

#[test]
fn every_case_ends_as_expected_on_each_layer_and_no_canary_is_reached() {
    // Before the pool starts: its workers must not inherit them.
    let canaries = Canaries::plant();
    runtime().block_on(async move {
        let cases = cases::all(&canaries);
        assert!(cases.len() >= 150, "the suite has {} cases", cases.len());
        tracing::info!("--- start the pool, canaries planted");
        let mut suite = Suite::start(canaries).await;

        tracing::info!("--- every case, through the full path and through the runtime alone");
        let mut mismatches = Vec::new();
        let mut canary_findings = Vec::new();
        for case in &cases {
            tracing::info!("--- {}", case.name);
            let full = suite.full_path(case, Validator::Real).await;
            mismatches.extend(check(case, Path::Full, &full).err());
            let runtime = suite.runtime_only(case).await;
            mismatches.extend(check(case, Path::RuntimeOnly, &runtime).err());
            canary_findings.extend(suite.canary_findings(case, [&full, &runtime]));
            if let Err(e) = suite.check_healthy().await {
                panic!("the executor is unhealthy after `{}`: {e}", case.name);
            }
        }

        tracing::info!("--- the canaries, from outside");
        let connections = suite.canaries.connections_through_control();
        eprintln!(
            "{}\nworker environments read from /proc: {}",
            layer_summary(&cases),
            suite.environments_read
        );
        assert!(
            mismatches.is_empty(),
            "{}",
            report(&mismatches, cases.len())
        );
        assert!(
            canary_findings.is_empty(),
            "canaries were reached:\n{}",
            canary_findings.join("\n")
        );
        assert!(
            connections.is_empty(),
            "the loopback canary was connected to from {connections:?}"
        );
        assert!(
            suite.environments_read > 0,
            "no worker's environment could be read, so the environment canary proves nothing"
        );
    });
}

/// The suite would notice a validator rule that stops firing: with one rule
/// broken, the same check reports exactly the cases that rule must stop.
#[test]
fn a_broken_validator_rule_fails_exactly_the_cases_it_must_stop() {
    const BROKEN: &str = "eval";
    let canaries = Canaries::plant();
    runtime().block_on(async move {
        let cases = cases::all(&canaries);
        let suite = Suite::start(canaries).await;

        tracing::info!("--- every case through the full path, with rule `{BROKEN}` broken");
        let mut caught = Vec::new();
        for case in &cases {
            let full = suite.full_path(case, Validator::Without(BROKEN)).await;
            caught.extend(check(case, Path::Full, &full).err());
        }

        let must_stop: Vec<&str> = cases
            .iter()
            .filter(|case| case.full_path == FullPath::Rejected(BROKEN))
            .map(|case| case.name.as_str())
            .collect();
        let reported: Vec<&str> = caught.iter().map(|m| m.case.as_str()).collect();
        eprintln!(
            "what the suite reports with rule `{BROKEN}` broken:\n{}",
            report(&caught, cases.len())
        );
        assert!(!must_stop.is_empty(), "no case expects rule `{BROKEN}`");
        assert_eq!(
            reported, must_stop,
            "with rule `{BROKEN}` broken, the check must report exactly the cases that expect it"
        );
    });
}
