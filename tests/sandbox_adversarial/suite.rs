//! Runs cases through real worker processes, by either path, and checks the
//! canaries from outside after each. It does not judge outcomes: that is
//! `expectation_check`'s one job.

use std::{path::PathBuf, sync::Arc};

use quiver_contract::{ExecuteError, Limits};
use quiver_executor::{
    pool::{Owner, PoolConfig, WorkerCommand, WorkerPool},
    sandbox::validate::{ValidationLimits, validate_without_rule},
    script::ScriptRunner,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{
    canaries::Canaries,
    case::{Case, GENEROUS_WALL_MS},
    expectation_check::{Observed, Verdict},
    recording_context::{RecordingContext, shortened},
};

/// Which validator the full path uses.
#[derive(Debug, Clone, Copy)]
pub enum Validator {
    /// The real one, through the runner as in production.
    Real,
    /// The real one with this rule broken (it never fires).
    Without(&'static str),
}

/// A worker pool, a runner over it and the planted canaries.
pub struct Suite {
    pool: Arc<WorkerPool>,
    runner: ScriptRunner,
    pub canaries: Canaries,
    /// Worker environments read from outside so far.
    pub environments_read: usize,
}

/// The runner's own limits: each case tightens them to its own.
fn loosest_limits() -> Limits {
    Limits {
        wall_ms: GENEROUS_WALL_MS,
        ..Limits::default()
    }
}

fn owner() -> Owner {
    Owner::new("tenant", "adversary")
}

impl Suite {
    /// Starts a pool of real worker processes. Plant the canaries first:
    /// the workers must not inherit them.
    pub async fn start(canaries: Canaries) -> Suite {
        let mut config = PoolConfig::new(WorkerCommand {
            program: PathBuf::from(env!("CARGO_BIN_EXE_quiver")),
            args: vec!["__worker".into()],
        });
        config.min_workers = 1;
        config.max_workers = 2;
        let pool = WorkerPool::start(config);
        pool.warm_up().await.expect("start a worker");
        Suite {
            runner: ScriptRunner::new(pool.clone(), loosest_limits()),
            pool,
            canaries,
            environments_read: 0,
        }
    }

    /// Static validation, then the hardened runtime.
    pub async fn full_path(&self, case: &Case, validator: Validator) -> Observed {
        let context = RecordingContext::new(&self.canaries);
        let result = match validator {
            Validator::Real => {
                self.runner
                    .execute_within(
                        &owner(),
                        &case.code,
                        Some(&case.limits()),
                        context.clone(),
                        CancellationToken::new(),
                    )
                    .await
            }
            Validator::Without(rule) => {
                let validation = ValidationLimits {
                    max_code_bytes: usize::try_from(case.limits().code_bytes).unwrap_or(usize::MAX),
                    ..ValidationLimits::default()
                };
                match validate_without_rule(&case.code, &validation, rule) {
                    Err(errors) => Err(ExecuteError::Rejected(errors)),
                    Ok(()) => self
                        .pool
                        .run_for(
                            &owner(),
                            &case.code,
                            case.limits(),
                            context.clone(),
                            CancellationToken::new(),
                        )
                        .await
                        .map_err(|e| ExecuteError::Failed {
                            reason: e.to_string(),
                        }),
                }
            }
        };
        let verdict = match result {
            Ok(outcome) => Verdict::Ran(outcome),
            Err(ExecuteError::Rejected(errors)) => {
                Verdict::Rejected(errors.rules().into_iter().map(String::from).collect())
            }
            Err(e) => Verdict::Broke(e.to_string()),
        };
        observed(verdict, &context)
    }

    /// The hardened runtime alone, without validation.
    pub async fn runtime_only(&self, case: &Case) -> Observed {
        let context = RecordingContext::new(&self.canaries);
        let verdict = match self
            .pool
            .run(&case.code, case.limits(), context.clone())
            .await
        {
            Ok(outcome) => Verdict::Ran(outcome),
            Err(e) => Verdict::Broke(e.to_string()),
        };
        observed(verdict, &context)
    }

    /// Runs a plain script that uses the API, the intrinsics and the
    /// prototypes an attack would have changed.
    pub async fn check_healthy(&self) -> Result<(), String> {
        let context = RecordingContext::new(&self.canaries);
        let outcome = self
            .pool
            .run(
                "const r = await tools.call('demo__echo', { ok: [1, 2, 3].map(x => x * 2) });\nreturn [typeof eval, ({}).polluted, r.echo.ok, typeof leaked, JSON.stringify({ a: 1 })];",
                loosest_limits(),
                context,
            )
            .await
            .map_err(|e| e.to_string())?;
        let healthy = json!(["undefined", null, [2, 4, 6], "undefined", "{\"a\":1}"]);
        if outcome.result != Some(healthy) {
            return Err(format!("state leaked: {outcome:?}"));
        }
        Ok(())
    }

    /// What the canaries say after a case: a secret in anything that came
    /// back out of the sandbox, a victim stash value changed, a worker
    /// environment that holds the planted variable (or cannot be read).
    pub fn canary_findings(&mut self, case: &Case, runs: [&Observed; 2]) -> Vec<String> {
        let mut findings = Vec::new();
        for run in runs {
            // Everything that came back: the result, errors, logs, and
            // every request the host received.
            let leaked = self
                .canaries
                .leaked_in(&format!("{:?} {:?}", run.verdict, run.host));
            if !leaked.is_empty() {
                findings.push(format!(
                    "`{}`: the {leaked:?} secret came out of the sandbox: {}",
                    case.name,
                    shortened(&format!("{:?}", run.verdict))
                ));
            }
            if run.victim_value != json!(self.canaries.stash_secret) {
                findings.push(format!(
                    "`{}`: the victim session's stash value changed to {}",
                    case.name, run.victim_value
                ));
            }
        }
        for pid in self.pool.idle_pids() {
            match self.canaries.worker_environment(pid) {
                Ok(None) => {}
                Ok(Some(environment)) => {
                    self.environments_read += 1;
                    if environment.holds_secret {
                        findings.push(format!(
                            "after `{}`: worker {pid} inherited the planted environment variable",
                            case.name
                        ));
                    }
                    if !environment.holds_expected {
                        findings.push(format!(
                            "after `{}`: /proc/{pid}/environ lacks the one variable workers get, so the check proves nothing",
                            case.name
                        ));
                    }
                }
                Err(e) => findings.push(format!("after `{}`: {e}", case.name)),
            }
        }
        findings
    }
}

fn observed(verdict: Verdict, context: &RecordingContext) -> Observed {
    Observed {
        verdict,
        host: context.calls(),
        victim_value: context.victim_value(),
    }
}
