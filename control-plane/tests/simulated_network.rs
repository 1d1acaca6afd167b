#![allow(clippy::result_large_err)] // openraft's error types are large and fixed
//! Five control-plane nodes in one process, each Quiver's own stack (redb
//! log store and state machine on a simulated disk, `Replica` for writes and
//! linearizable reads), joined by a simulated network that delays, loses and
//! partitions messages; nodes crash by losing power (what their disk had not
//! synced may be lost, and they are dropped without `shutdown()`) and come
//! back from what their disk kept. Every choice comes from one seed, on
//! tokio's paused clock in one thread, so a seed replays the same run.
//!
//! Checked as it happens (`simulated_network/`):
//! - election safety, on every vote a node persists: a leader was voted for
//!   by a majority, is elected once, and alone in its term where openraft's
//!   leader ids say a term has one leader; votes never go back, and survive
//!   crashes;
//! - state machine safety, on every batch a node applies: nodes that applied
//!   up to the same index applied the same entry and hold the same state;
//! - reads: a linearizable read holds every write acknowledged, and every
//!   item read, before it began, and nothing never written;
//! - replication: the entries a live node sends follow their `prev_log_id`
//!   without a hole (a follower whose log holds that id would otherwise get
//!   a hole in its own);
//! - no task of the run panics (openraft's debug assertions included).
//!
//! After healing and restarting everything, every node's state must be
//! identical and hold every acknowledged write.
//!
//! Quiver builds openraft without `single-term-leader`, so a leader is
//! `(term, node)` and a term may legitimately see two leaders in turn (a
//! higher node id can still win a term another node won); the election
//! checker then holds each `(term, node)` to one election, and counts those
//! terms.
//!
//! Determinism: one thread and a paused clock (time moves only when every
//! task waits), so tasks interleave the same way each run; the driver, the
//! network and each disk draw from generators seeded from the seed; and each
//! node life gets a fixed election timeout (openraft draws it from
//! `min..max` with a thread-local generator, so `max = min + 1`). Left out
//! of reach: the fairness of `tokio::select!` in openraft's replication
//! backoff, seeded per runtime by tokio (fixable only under
//! `tokio_unstable`), which the replay test would reveal; and the wall clock
//! in command timestamps, which the state holds but the trace does not.
//!
//! `QUIVER_SIM_SEED=<n>` replays a run (the seed is printed), and
//! `QUIVER_SIM_TRACE=1` prints what it recorded;
//! `QUIVER_SIM_STEPS=<n>` runs longer (default 300 steps, a few seconds),
//! e.g. `QUIVER_SIM_STEPS=5000 cargo test -p quiver-control-plane --release
//! --test integration simulated_network::`.

#[path = "simulated_network/driver.rs"]
mod driver;
#[path = "simulated_network/election_checker.rs"]
mod election_checker;
#[path = "simulated_network/history.rs"]
mod history;
#[path = "simulated_network/read_checker.rs"]
mod read_checker;
#[path = "simulated_network/sim_cluster.rs"]
mod sim_cluster;
#[path = "simulated_network/sim_disk.rs"]
mod sim_disk;
#[path = "simulated_network/sim_network.rs"]
mod sim_network;
#[path = "simulated_network/state_checker.rs"]
mod state_checker;
#[path = "simulated_network/vote_tap.rs"]
mod vote_tap;

use driver::{run, run_on};
use quiver_control_plane::replica::UNSAFE_STALE_READS_ENV;
use sim_disk::Syncs;

/// Steps of a run unless `QUIVER_SIM_STEPS` says otherwise.
const DEFAULT_STEPS: usize = 300;
/// Steps of each of the two runs that must match.
const REPLAY_STEPS: usize = 60;

fn seed_from_env() -> u64 {
    std::env::var("QUIVER_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

fn steps_from_env() -> usize {
    std::env::var("QUIVER_SIM_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_STEPS)
}

#[test]
fn elections_reads_and_replicated_state_stay_safe_through_partitions_losses_and_power_cuts() {
    let seed = seed_from_env();
    let steps = steps_from_env();
    eprintln!(
        "simulated network seed: {seed}, {steps} steps (replay with QUIVER_SIM_SEED={seed}; QUIVER_SIM_STEPS sets the steps)"
    );
    let report = run(seed, steps);
    if std::env::var_os("QUIVER_SIM_TRACE").is_some() {
        eprintln!("{}", report.trace.join("\n"));
    }
    let tally = &report.tally;
    eprintln!(
        "seed {seed}: {} elections ({} terms with more than one leader), {} writes acknowledged, {} reads checked, states compared at {} log indexes, {} crashes losing {} unsynced disk writes, settled at index {}; trace {} (equal for every run of this seed and step count)",
        tally.elections,
        tally.terms_with_several_leaders,
        tally.acknowledged,
        tally.reads,
        tally.state_checkpoints,
        report.crashes,
        report.lost_writes,
        report.settled_at,
        report.fingerprint(),
    );
    // A run that exercised nothing proves nothing.
    assert!(
        tally.acknowledged > 1 && tally.reads > 0 && report.crashes > 0 && tally.elections > 0,
        "seed {seed} exercised too little: {tally:?}, {} crashes",
        report.crashes
    );
}

/// Seeds that found storage bugs (an interrupted purge that left the log
/// below its purge point, a purge for an installed snapshot before the
/// snapshot was saved, replication batches with a hole where entries had been
/// purged). Each replays its run on every test run.
const SEEDS_THAT_FOUND_BUGS: [u64; 5] = [171, 206, 252, 300, 454];

#[test]
fn the_seeds_that_found_storage_bugs_stay_safe() {
    for seed in SEEDS_THAT_FOUND_BUGS {
        let report = run(seed, DEFAULT_STEPS);
        assert!(
            report.crashes > 0 && report.tally.acknowledged > 1,
            "seed {seed} exercised too little: {:?}",
            report.tally
        );
    }
}

#[test]
fn one_seed_replays_the_same_run() {
    let seed = seed_from_env();
    let steps = REPLAY_STEPS.min(steps_from_env());
    eprintln!("replay seed: {seed}, {steps} steps, twice");
    let first = run(seed, steps);
    let second = run(seed, steps);
    if first.trace != second.trace {
        let at = first
            .trace
            .iter()
            .zip(&second.trace)
            .position(|(a, b)| a != b)
            .unwrap_or(first.trace.len().min(second.trace.len()));
        let line = |trace: &[String]| trace.get(at).cloned().unwrap_or("(end)".into());
        panic!(
            "seed {seed} ran differently the second time, from trace line {at}:\n  first:  {}\n  second: {}",
            line(&first.trace),
            line(&second.trace)
        );
    }
    assert!(
        first.tally.elections > 0 && first.tally.acknowledged > 0,
        "seed {seed}: the replayed run elected or committed nothing: {:?}",
        first.tally
    );
    eprintln!(
        "seed {seed}: both runs recorded the same {} events ({} elections, {} acknowledged writes)",
        first.trace.len(),
        first.tally.elections,
        first.tally.acknowledged
    );
}

/// Seeds tried by the tests that inject a fault; each must find it in one.
const FAULT_SEEDS: std::ops::RangeInclusive<u64> = 1..=10;

/// The message a run panicked with.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_disk_that_loses_acknowledged_writes_is_caught() {
    // Quiver's store acknowledges nothing before redb's commit has synced,
    // so honest runs lose only unacknowledged writes. On disks whose sync
    // returns before the data is durable, a durability check must fail.
    let mut seen = Vec::new();
    for seed in FAULT_SEEDS {
        let outcome = std::panic::catch_unwind(|| run_on(seed, REPLAY_STEPS, Syncs::OneBehind));
        let message = outcome.err().map(|panic| panic_message(&*panic));
        let first_line = message
            .as_deref()
            .map_or("passed", |m| m.lines().next().unwrap_or(""));
        if message.as_deref().is_some_and(|m| m.contains("durability")) {
            eprintln!("caught with seed {seed}: {first_line}");
            return;
        }
        seen.push(format!("seed {seed}: {first_line}"));
    }
    panic!(
        "no run on disks that lose acknowledged writes failed a durability check:\n{}",
        seen.join("\n")
    );
}

#[test]
fn reads_that_skip_the_leadership_check_are_caught() {
    // Quiver's test-only switch is read from the environment when a node
    // starts, so each run goes to a child process of this test binary.
    let mut seen = Vec::new();
    for seed in FAULT_SEEDS {
        let child = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args([
                "--exact",
                "simulated_network::simulation_in_a_child_process",
                "--ignored",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env(UNSAFE_STALE_READS_ENV, "1")
            .env("QUIVER_SIM_SEED", seed.to_string())
            .env("QUIVER_SIM_STEPS", DEFAULT_STEPS.to_string())
            .output()
            .expect("run this test binary again");
        let output = String::from_utf8_lossy(&child.stderr).into_owned()
            + &String::from_utf8_lossy(&child.stdout);
        if let Some(line) = output
            .lines()
            .find(|l| l.contains("linearizable read: it misses"))
        {
            eprintln!("caught with seed {seed}: {line}");
            return;
        }
        let what = if child.status.success() {
            "passed".to_string()
        } else {
            output
                .lines()
                .skip_while(|l| !l.contains("panicked at"))
                .nth(1)
                .unwrap_or("failed")
                .to_string()
        };
        seen.push(format!("seed {seed}: {what}"));
    }
    panic!(
        "no run that skips the read barrier was caught reading stale state:\n{}",
        seen.join("\n")
    );
}

#[test]
#[ignore = "run by reads_that_skip_the_leadership_check_are_caught, in a child process"]
fn simulation_in_a_child_process() {
    run(seed_from_env(), steps_from_env());
}
