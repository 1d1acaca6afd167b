//! What the simulation observed, in the order it happened, and the checkers
//! each observation passes through as it is recorded. The trace is what two
//! runs of one seed must share; the first violation is kept, with the end of
//! the trace, and wakes the driver at once.

use std::{
    cell::RefCell,
    collections::BTreeSet,
    sync::{Arc, Mutex, MutexGuard, Once},
};

use openraft::Vote;
use quiver_control_plane::raft::NodeId;
use tokio::{sync::watch, time::Instant};

use super::{
    election_checker::{ElectionChecker, LeaderIds},
    read_checker::{ReadChecker, ReadFloor},
    state_checker::{AppliedState, StateChecker},
};

/// Trace lines shown with a violation (all of them with `QUIVER_SIM_TRACE`).
const TRACE_TAIL: usize = 40;

struct Recorded {
    elections: ElectionChecker,
    states: StateChecker,
    reads: ReadChecker,
    reads_checked: usize,
    trace: Vec<String>,
}

thread_local! {
    /// The history whose thread this is, while [`History::watch_panics`] holds.
    static WATCHED: RefCell<Option<Arc<History>>> = const { RefCell::new(None) };
}

/// Stops recording this thread's panics when dropped.
pub struct PanicWatch;

impl Drop for PanicWatch {
    fn drop(&mut self) {
        WATCHED.with(|watched| watched.borrow_mut().take());
    }
}

/// The record of one run.
pub struct History {
    seed: u64,
    start: Instant,
    recorded: Mutex<Recorded>,
    failure: watch::Sender<Option<String>>,
}

/// Counts for the end-of-run summary.
#[derive(Debug, Clone)]
pub struct Tally {
    pub elections: usize,
    pub terms_with_several_leaders: usize,
    pub acknowledged: usize,
    pub reads: usize,
    pub state_checkpoints: usize,
}

impl History {
    /// An empty record for a run of `seed` over `voters` voters; time counts
    /// from now.
    pub fn new(seed: u64, voters: usize, mode: LeaderIds) -> History {
        History {
            seed,
            start: Instant::now(),
            recorded: Mutex::new(Recorded {
                elections: ElectionChecker::new(mode, voters),
                states: StateChecker::default(),
                reads: ReadChecker::default(),
                reads_checked: 0,
                trace: Vec::new(),
            }),
            failure: watch::channel(None).0,
        }
    }

    fn recorded(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn note(&self, recorded: &mut Recorded, line: String) {
        let ms = self.start.elapsed().as_millis();
        recorded.trace.push(format!("{ms:>7} ms  {line}"));
    }

    fn fail(&self, recorded: &mut Recorded, violation: String) {
        self.note(recorded, format!("VIOLATION {violation}"));
        let shown = if std::env::var_os("QUIVER_SIM_TRACE").is_some() {
            recorded.trace.len()
        } else {
            TRACE_TAIL
        };
        let tail = &recorded.trace[recorded.trace.len().saturating_sub(shown)..];
        let message = format!(
            "{violation}\n(seed {seed}, at {ms} ms of simulated time; replay with QUIVER_SIM_SEED={seed})\nthe trace before it:\n{}",
            tail.join("\n"),
            seed = self.seed,
            ms = self.start.elapsed().as_millis(),
        );
        self.failure.send_if_modified(|failure| {
            if failure.is_none() {
                *failure = Some(message);
                true
            } else {
                false
            }
        });
    }

    /// Something the driver did (a crash, a partition), for the trace.
    pub fn event(&self, line: impl Into<String>) {
        let mut recorded = self.recorded();
        self.note(&mut recorded, line.into());
    }

    /// A violation the driver found itself.
    pub fn violation(&self, what: impl Into<String>) {
        let mut recorded = self.recorded();
        self.fail(&mut recorded, what.into());
    }

    /// Records `what` (unless something failed first) and panics with the
    /// first failure, its seed and the trace before it.
    pub fn fail_now(&self, what: impl Into<String>) -> ! {
        self.violation(what);
        panic!("{}", self.failure().unwrap_or_default());
    }

    /// Records panics on this thread, where the simulation and every
    /// openraft task of it run, as violations, until the guard is dropped:
    /// a panic in a spawned task would otherwise only show as its effects.
    pub fn watch_panics(self: &Arc<Self>) -> PanicWatch {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                WATCHED.with(|watched| {
                    if let Ok(watched) = watched.try_borrow()
                        && let Some(history) = watched.as_ref()
                    {
                        history.panicked(&info.to_string());
                    }
                });
                previous(info);
            }));
        });
        WATCHED.with(|watched| *watched.borrow_mut() = Some(self.clone()));
        PanicWatch
    }

    fn panicked(&self, what: &str) {
        if self.failure().is_some() {
            return;
        }
        // A panic while the record is locked cannot be recorded; it still fails the run.
        if let Ok(mut recorded) = self.recorded.try_lock() {
            self.fail(&mut recorded, format!("a task panicked: {what}"));
        }
    }

    /// `node`'s store has durably saved `vote`.
    pub fn vote_saved(&self, node: NodeId, vote: Vote<NodeId>) {
        let mut recorded = self.recorded();
        self.note(&mut recorded, format!("node {node} saved vote {vote}"));
        match recorded.elections.vote_saved(node, vote) {
            Ok(Some(leader)) => self.note(
                &mut recorded,
                format!("node {} leads term {}", leader.node, leader.term),
            ),
            Ok(None) => {}
            Err(violation) => self.fail(&mut recorded, violation.to_string()),
        }
    }

    /// `node` reopened its disk and found `on_disk` as its vote.
    pub fn reopened(&self, node: NodeId, on_disk: Option<Vote<NodeId>>) {
        let mut recorded = self.recorded();
        let found = on_disk.map_or("no vote".to_string(), |v| v.to_string());
        self.note(
            &mut recorded,
            format!("node {node} boots; its disk holds {found}"),
        );
        if let Err(violation) = recorded.elections.reopened(node, on_disk) {
            self.fail(&mut recorded, violation.to_string());
        }
    }

    /// A node's applied state, as seen after it applied a batch of entries.
    pub fn applied(&self, seen: AppliedState) {
        let mut recorded = self.recorded();
        self.note(
            &mut recorded,
            format!("node {} applied up to {}", seen.node, seen.log_id),
        );
        if let Err(violation) = recorded.states.observe(seen) {
            self.fail(&mut recorded, violation.to_string());
        }
    }

    /// A client asks `node` to write `item`.
    pub fn proposing(&self, node: NodeId, item: &str) {
        let mut recorded = self.recorded();
        self.note(&mut recorded, format!("write {item} via node {node}"));
        recorded.reads.proposing(item);
    }

    /// The write of `item` was acknowledged at log index `index`.
    pub fn acknowledged(&self, item: &str, index: u64) {
        let mut recorded = self.recorded();
        self.note(&mut recorded, format!("write {item} committed at {index}"));
        recorded.reads.acknowledged(item, index);
    }

    /// The write of `item` got no acknowledgement.
    pub fn unacknowledged(&self, item: &str, why: &str) {
        let mut recorded = self.recorded();
        self.note(
            &mut recorded,
            format!("write {item} not acknowledged: {why}"),
        );
    }

    /// A client begins a read on `node`.
    pub fn read_begins(&self, node: NodeId) -> ReadFloor {
        let mut recorded = self.recorded();
        self.note(&mut recorded, format!("read via node {node}"));
        recorded.reads.read_begins()
    }

    /// The read that began at `floor` on `node` returned `seen`.
    pub fn read_returned(&self, node: NodeId, floor: ReadFloor, seen: &BTreeSet<String>) {
        let mut recorded = self.recorded();
        self.note(
            &mut recorded,
            format!("read via node {node} returned {} items", seen.len()),
        );
        recorded.reads_checked += 1;
        if let Err(violation) = recorded.reads.read_returned(floor, seen) {
            self.fail(&mut recorded, format!("{violation} (node {node})"));
        }
    }

    /// The read on `node` got no answer.
    pub fn read_failed(&self, node: NodeId, why: &str) {
        let mut recorded = self.recorded();
        self.note(&mut recorded, format!("read via node {node} failed: {why}"));
    }

    /// Acknowledged items and their log indexes.
    pub fn acknowledged_items(&self) -> Vec<(String, u64)> {
        let recorded = self.recorded();
        recorded
            .reads
            .acknowledged_items()
            .iter()
            .map(|(item, index)| (item.clone(), *index))
            .collect()
    }

    /// The first violation, if any.
    pub fn failure(&self) -> Option<String> {
        self.failure.borrow().clone()
    }

    /// Resolves with the first violation, as soon as there is one.
    pub async fn failed(&self) -> String {
        let mut failure = self.failure.subscribe();
        match failure.wait_for(Option::is_some).await {
            Ok(failure) => failure.clone().unwrap_or_default(),
            // The sender lives in `self`: never dropped while we wait.
            Err(_) => std::future::pending().await,
        }
    }

    /// Everything recorded, in order.
    pub fn trace(&self) -> Vec<String> {
        self.recorded().trace.clone()
    }

    /// Counts for the summary.
    pub fn tally(&self) -> Tally {
        let recorded = self.recorded();
        Tally {
            elections: recorded.elections.elections(),
            terms_with_several_leaders: recorded.elections.terms_with_several_leaders(),
            acknowledged: recorded.reads.acknowledged_items().len(),
            reads: recorded.reads_checked,
            state_checkpoints: recorded.states.checkpoints(),
        }
    }
}
