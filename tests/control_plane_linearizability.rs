//! Linearizability of the control plane under faults, over real processes:
//! three `quiver control-plane` nodes whose Raft traffic passes loopback
//! proxies the test can cut, four concurrent clients adding tenants and
//! listing them, and a seeded schedule of faults — the leader partitioned from
//! the others, the leader paused (SIGSTOP) while the others elect and then
//! resumed (SIGCONT) with requests waiting for it, and `kill -9` with a
//! restart from disk. Reads are also sent straight to each deposed leader.
//! Afterwards every node's own state is compared, and the whole history goes
//! to a Porcupine-style checker (`linearizability/checker.rs`, with its own
//! tests feeding it known non-linearizable histories).
//!
//! The second test turns on a test-only switch that skips the
//! linearizable-read barrier (`QUIVER_TEST_UNSAFE_STALE_READS`, see
//! `control-plane/src/replica.rs`) and shows the suite catches it.
//!
//! Linux only (SIGSTOP, and the proxies ask the kernel which node opened a
//! connection). Each run prints its seed. To run longer, or to replay a
//! schedule (the processes' timing still varies):
//!
//! ```text
//! QUIVER_LINEARIZABILITY_SECS=600 QUIVER_LINEARIZABILITY_SEED=12345 \
//!   cargo nextest run --test integration -E "test(/^control_plane_linearizability::/)" --no-capture
//! ```
//!
//! `QUIVER_LINEARIZABILITY_SECS` is how long faults are injected (default 20;
//! formation, healing and the checks add ~15 s); `QUIVER_LINEARIZABILITY_SEED`
//! fixes the fault schedule and the clients' choices (default: from the clock).
#![cfg(target_os = "linux")]

#[path = "linearizability/mod.rs"]
mod linearizability;

use std::time::{Duration, Instant};

use linearizability::{
    checker::Verdict,
    fault::{Fault, FaultSchedule},
    scenario::{DeposedReads, Scenario},
    seeded_rng::SeededRng,
};
use quiver_control_plane::replica::UNSAFE_STALE_READS_ENV;

/// Search steps the checker may take before it gives up (it then fails the
/// test as undecided, never passes it).
const CHECK_BUDGET: u64 = 50_000_000;

/// Concurrent clients.
const CLIENTS: usize = 4;

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|e| panic!("{name}={value}: not a whole number ({e})")),
    )
}

/// The run's seed: `QUIVER_LINEARIZABILITY_SEED`, or from the clock; printed.
fn seed() -> SeededRng {
    let seed = env_u64("QUIVER_LINEARIZABILITY_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    eprintln!("seed {seed} (replay the schedule with QUIVER_LINEARIZABILITY_SEED={seed})");
    SeededRng::new(seed)
}

#[tokio::test(flavor = "multi_thread")]
async fn partitions_pauses_and_kills_leave_a_linearizable_history_and_equal_nodes() {
    let rng = seed();
    let secs = env_u64("QUIVER_LINEARIZABILITY_SECS").unwrap_or(20);

    eprintln!(
        "--- form a three-node cluster behind partitionable proxies; {CLIENTS} clients start"
    );
    let mut scenario = Scenario::start(rng.fork(0), CLIENTS, &[]).await;

    eprintln!("--- inject faults for {secs} s");
    let mut schedule = FaultSchedule::new(rng.fork(100));
    let until = Instant::now() + Duration::from_secs(secs);
    let mut round = 0;
    while Instant::now() < until || round < 3 {
        round += 1;
        let fault = schedule.next_fault();
        let hold = schedule.hold();
        eprintln!("--- fault {round}: {fault} (held {hold:?})");
        scenario.inject(fault, hold).await;
    }

    eprintln!("--- stop the clients, heal everything, let every node catch up");
    scenario.quiesce().await;

    eprintln!("--- every node leads in turn and reads its own state");
    let states = scenario.node_states().await;
    for (id, state) in &states {
        eprintln!(
            "node {id}: {} tenants, manifest version {} ({})",
            state.tenants.len(),
            state.manifest.0,
            state.manifest.1
        );
    }
    let (first, reference) = &states[0];
    for (id, state) in &states[1..] {
        let history = &scenario.history;
        let only_first = history.names(&reference.tenants.difference(&state.tenants));
        let only_here = history.names(&state.tenants.difference(&reference.tenants));
        assert!(
            only_first.is_empty() && only_here.is_empty(),
            "node {id} holds different tenants from node {first}: only on {first}: {only_first:?}; only on {id}: {only_here:?}"
        );
        assert_eq!(
            state.manifest, reference.manifest,
            "node {id}'s manifest differs from node {first}'s"
        );
    }

    eprintln!("--- check the history");
    let DeposedReads { sent, answered } = scenario.deposed_reads;
    eprintln!(
        "{}; {sent} reads sent straight to a deposed leader, {answered} answered",
        scenario.history.summary()
    );
    let started = Instant::now();
    let verdict = scenario.history.check(CHECK_BUDGET);
    eprintln!("checker ({:?}): {verdict}", started.elapsed());
    assert!(matches!(verdict, Verdict::Linearizable { .. }), "{verdict}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_that_skip_the_leadership_check_are_caught() {
    let rng = seed();

    eprintln!(
        "--- form a three-node cluster with {UNSAFE_STALE_READS_ENV}=1 on every node; {CLIENTS} clients start"
    );
    let mut scenario =
        Scenario::start(rng.fork(0), CLIENTS, &[(UNSAFE_STALE_READS_ENV, "1")]).await;

    // Cut off while paused, the old leader cannot hear of the new term when it
    // resumes: it still believes it leads and, with the switch on, answers
    // reads from its own state, which lacks what the others acknowledged.
    let fault = Fault::PauseLeader { cut_off: true };
    eprintln!("--- {fault}");
    scenario.inject(fault, Duration::from_millis(500)).await;
    let DeposedReads { sent, answered } = scenario.deposed_reads;
    assert!(
        answered > 0,
        "the deposed leader answered none of the {sent} reads sent to it, so this run shows nothing; with the switch on it should answer them from its own state"
    );

    eprintln!("--- stop the clients, heal everything, read once more");
    scenario.quiesce().await;
    let states = scenario.node_states().await;
    assert!(states.windows(2).all(|w| w[0].1 == w[1].1), "{states:?}");

    eprintln!("--- check the history: the checker must reject it");
    eprintln!(
        "{}; {sent} reads sent straight to the deposed leader, {answered} answered",
        scenario.history.summary()
    );
    let verdict = scenario.history.check(CHECK_BUDGET);
    eprintln!("checker: {verdict}");
    assert!(
        matches!(verdict, Verdict::NotLinearizable(_)),
        "reads served by a deposed leader without the leadership check went unnoticed: {verdict}"
    );
}
