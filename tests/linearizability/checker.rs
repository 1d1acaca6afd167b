//! Decides whether a recorded history of a grow-only set (`add(id)`, and
//! `read()` returning the whole set) is linearizable: Wing & Gong's search with
//! Lowe's memoisation of visited configurations, as Porcupine and Knossos do.
//! It knows nothing of processes or clocks: times are the recorder's sequence
//! numbers, unique and in real-time order.
//!
//! A read returns the whole set, so it touches every element at once and the
//! history cannot be split per element (two concurrent reads seeing `{a}` and
//! `{b}` pass per element but not as a set); the search runs over the whole
//! history, kept small by the reductions in [`check`] and bounded by a step
//! budget.

use std::{collections::HashSet, fmt};

use super::id_set::{IdNames, IdSet};

/// How an operation ended, as far as its client knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Answered at this time: it took effect at one instant between its call
    /// and this.
    Returned(u64),
    /// Failed or timed out: it may have taken effect at any instant after its
    /// call, or never.
    Unknown,
}

/// One operation of the history; ids are numbers from the history's [`IdNames`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Adds `id`; adding an id already present changes nothing.
    Add {
        /// Who issued it (for reports).
        client: String,
        /// The id.
        id: u32,
        /// When it was called.
        call: u64,
        /// How it ended.
        completion: Completion,
    },
    /// Read the whole set. Only reads that returned are recorded: a failed read
    /// says nothing about the set.
    Read {
        /// Who issued it (for reports).
        client: String,
        /// When it was called.
        call: u64,
        /// When it returned.
        returned: u64,
        /// What it returned.
        seen: IdSet,
    },
}

impl Operation {
    fn client(&self) -> &str {
        match self {
            Operation::Add { client, .. } | Operation::Read { client, .. } => client,
        }
    }
}

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations, each placed within its interval, explains
    /// every read.
    Linearizable {
        /// Operations the search placed (failed adds nobody saw are left out:
        /// "never happened" explains them).
        placed: usize,
        /// Search steps taken.
        steps: u64,
    },
    /// No such order exists.
    NotLinearizable(Violation),
    /// The step budget ran out before the search decided.
    Undecided {
        /// Search steps taken.
        steps: u64,
    },
}

/// Why a history is not linearizable, for the test's failure message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Linearizable { placed, steps } => write!(
                f,
                "linearizable ({placed} operations placed in {steps} search steps)"
            ),
            Verdict::NotLinearizable(violation) => write!(f, "NOT linearizable: {violation}"),
            Verdict::Undecided { steps } => write!(
                f,
                "undecided: the search gave up after {steps} steps (raise the budget or shorten the run)"
            ),
        }
    }
}

/// An operation as the search sees it: its interval closed.
struct Placeable<'h> {
    op: &'h Operation,
    call: u64,
    returned: u64,
}

/// Decides whether `history` (ids named by `names`) is linearizable, giving
/// up after `budget` search steps.
///
/// Before searching, the history is reduced without changing the answer:
/// - a read that saw an id nobody asked to add, or saw it before anyone asked,
///   is a violation at once;
/// - a failed add whose id no read saw is left out (placing it after every
///   read, or never, explains it);
/// - a failed add whose id some read saw, and which is the only add of that id,
///   took effect before the first read that saw it returned, so that is where
///   its interval ends;
/// - other failed adds keep an open interval (they return "at infinity").
pub fn check(history: &[Operation], names: &IdNames, budget: u64) -> Verdict {
    // Per id: how many adds, the earliest call of one, and the earliest
    // return of a read that saw it.
    let mut adders: Vec<(usize, u64)> = Vec::new();
    let mut first_seen: Vec<Option<u64>> = Vec::new();
    for op in history {
        if let Operation::Add { id, call, .. } = op {
            let i = *id as usize;
            if adders.len() <= i {
                adders.resize(i + 1, (0, u64::MAX));
            }
            adders[i] = (adders[i].0 + 1, adders[i].1.min(*call));
        }
    }
    let mut reads: Vec<(&Operation, u64, &IdSet)> = history
        .iter()
        .filter_map(|op| match op {
            Operation::Read { returned, seen, .. } => Some((op, *returned, seen)),
            Operation::Add { .. } => None,
        })
        .collect();
    reads.sort_by_key(|(_, returned, _)| *returned);
    let mut covered = IdSet::new();
    for (read, returned, seen) in reads {
        for id in seen.difference(&covered).iter() {
            let i = id as usize;
            if first_seen.len() <= i {
                first_seen.resize(i + 1, None);
            }
            first_seen[i] = Some(returned);
            let (count, earliest_call) = adders.get(i).copied().unwrap_or((0, u64::MAX));
            if count == 0 {
                return Verdict::NotLinearizable(Violation(format!(
                    "{} saw `{}`, which no client ever asked to add",
                    describe(read, names, None),
                    names.name(id)
                )));
            }
            if earliest_call > returned {
                return Verdict::NotLinearizable(Violation(format!(
                    "{} saw `{}` before any client asked to add it (first asked at #{earliest_call})",
                    describe(read, names, None),
                    names.name(id)
                )));
            }
            covered.insert(id);
        }
    }

    let mut kept: Vec<Placeable> = Vec::new();
    for op in history {
        let (call, returned) = match op {
            Operation::Add {
                id,
                call,
                completion,
                ..
            } => match completion {
                Completion::Returned(at) => (*call, *at),
                Completion::Unknown => match first_seen.get(*id as usize).copied().flatten() {
                    None => continue,
                    Some(seen_by) if adders[*id as usize].0 == 1 => (*call, seen_by),
                    Some(_) => (*call, u64::MAX),
                },
            },
            Operation::Read { call, returned, .. } => (*call, *returned),
        };
        kept.push(Placeable { op, call, returned });
    }
    // By call time: then the earliest unplaced operation is the lowest index,
    // which keeps the memo's keys short.
    kept.sort_by_key(|p| p.call);
    search(&kept, names, budget)
}

/// The doubly linked list of call and return events Porcupine searches: node 0
/// is the head; events of placed operations are unlinked.
struct Events {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// For each event (1-based): the operation, and whether it is its call.
    event: Vec<(usize, bool)>,
    /// For each operation: its call event and its return event.
    of_op: Vec<(usize, usize)>,
}

const END: usize = usize::MAX;

impl Events {
    fn new(ops: &[Placeable]) -> Events {
        let mut order: Vec<(u64, bool, usize)> = Vec::new();
        for (i, p) in ops.iter().enumerate() {
            // At equal times (only "infinity") a call sorts before a return.
            order.push((p.call, false, i));
            order.push((p.returned, true, i));
        }
        order.sort();
        let n = order.len();
        let mut events = Events {
            next: (1..=n).chain([END]).collect(),
            prev: std::iter::once(END).chain(0..n).collect(),
            event: vec![(0, false); n + 1],
            of_op: vec![(0, 0); ops.len()],
        };
        for (i, (_, is_return, op)) in order.into_iter().enumerate() {
            events.event[i + 1] = (op, !is_return);
            if is_return {
                events.of_op[op].1 = i + 1;
            } else {
                events.of_op[op].0 = i + 1;
            }
        }
        events
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        if n != END {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        if n != END {
            self.prev[n] = e;
        }
    }

    /// Takes an operation's call and return out of the list.
    fn lift(&mut self, op: usize) {
        let (call, ret) = self.of_op[op];
        self.unlink(call);
        self.unlink(ret);
    }

    /// Puts them back (in reverse order, so the links are restored exactly).
    fn unlift(&mut self, op: usize) {
        let (call, ret) = self.of_op[op];
        self.relink(ret);
        self.relink(call);
    }

    /// The unplaced operation called first.
    fn first_unplaced(&self) -> Option<usize> {
        let e = self.next[0];
        (e != END).then(|| self.event[e].0)
    }
}

fn search(ops: &[Placeable], names: &IdNames, budget: u64) -> Verdict {
    let mut events = Events::new(ops);
    let mut state = IdSet::new();
    let mut placed = IdSet::new();
    let mut memo: HashSet<(u32, Vec<u64>)> = HashSet::new();
    // Placed operations, in order, each with whether it added a fresh id.
    let mut stack: Vec<(usize, bool)> = Vec::new();
    // The deepest configuration reached, and the operation no order could
    // place there: what the report shows.
    let mut deepest: Option<(usize, usize, IdSet)> = None;
    let mut steps = 0u64;
    let mut e = events.next[0];
    while let Some(lowest) = events.first_unplaced() {
        steps += 1;
        if steps > budget {
            return Verdict::Undecided { steps };
        }
        let (op, is_call) = events.event[e];
        if is_call {
            let fits = match ops[op].op {
                Operation::Add { .. } => true,
                Operation::Read { seen, .. } => *seen == state,
            };
            if fits {
                placed.insert(op as u32);
                let lowest = if op == lowest {
                    placed.first_absent_from(op as u32)
                } else {
                    lowest as u32
                };
                if memo.insert(placed.key_above(lowest)) {
                    let fresh = match ops[op].op {
                        Operation::Add { id, .. } => state.insert(*id),
                        Operation::Read { .. } => false,
                    };
                    stack.push((op, fresh));
                    events.lift(op);
                    e = events.next[0];
                    continue;
                }
                placed.remove(op as u32);
            }
            e = events.next[e];
        } else {
            // This operation must be placed before anything later, and no
            // candidate fits: undo the last placement and try the next one.
            if deepest
                .as_ref()
                .is_none_or(|(depth, ..)| stack.len() > *depth)
            {
                deepest = Some((stack.len(), op, state.clone()));
            }
            let Some((last, fresh)) = stack.pop() else {
                let (depth, blocked, state) = deepest.unwrap_or((0, op, state));
                return Verdict::NotLinearizable(Violation(format!(
                    "{depth} of {} operations fit an order, then none fits {} (the set then held {} ids)",
                    ops.len(),
                    describe(ops[blocked].op, names, Some((&state, ops))),
                    state.len()
                )));
            };
            if fresh && let Operation::Add { id, .. } = ops[last].op {
                state.remove(*id);
            }
            placed.remove(last as u32);
            events.unlift(last);
            e = events.next[events.of_op[last].0];
        }
    }
    Verdict::Linearizable {
        placed: ops.len(),
        steps,
    }
}

/// Describes an operation; for a read and a state to compare it with, what it
/// missed (noting adds acknowledged before the read was called) and what it
/// had in excess.
fn describe(op: &Operation, names: &IdNames, against: Option<(&IdSet, &[Placeable])>) -> String {
    match op {
        Operation::Add {
            id,
            call,
            completion,
            ..
        } => {
            let ended = match completion {
                Completion::Returned(at) => format!("acknowledged at #{at}"),
                Completion::Unknown => "failed".to_string(),
            };
            format!(
                "add `{}` by {} (called at #{call}, {ended})",
                names.name(*id),
                op.client()
            )
        }
        Operation::Read {
            call,
            returned,
            seen,
            ..
        } => {
            let mut text = format!(
                "the read by {} (called at #{call}, returned at #{returned}) that saw {} ids",
                op.client(),
                seen.len()
            );
            if let Some((state, ops)) = against {
                let missing: Vec<String> = state
                    .difference(seen)
                    .iter()
                    .map(|id| {
                        let acked_before = ops.iter().find_map(|p| match p.op {
                            Operation::Add {
                                id: added,
                                completion: Completion::Returned(at),
                                client,
                                ..
                            } if *added == id && at < call => Some(format!(
                                " (acknowledged to {client} at #{at}, before the read was called)"
                            )),
                            _ => None,
                        });
                        format!("`{}`{}", names.name(id), acked_before.unwrap_or_default())
                    })
                    .collect();
                let extra: Vec<String> = seen
                    .difference(state)
                    .iter()
                    .map(|id| format!("`{}`", names.name(id)))
                    .collect();
                if !missing.is_empty() {
                    text += &format!(": it misses {}", abbreviate(&missing));
                }
                if !extra.is_empty() {
                    text += &format!(
                        "{} it has {} not yet placed",
                        if missing.is_empty() { ":" } else { ";" },
                        abbreviate(&extra)
                    );
                }
            }
            text
        }
    }
}

fn abbreviate(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text += &format!(" and {} more", items.len() - SHOWN);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control_plane_linearizability::linearizability::seeded_rng::SeededRng;

    const BUDGET: u64 = 1_000_000;

    /// An operation written with names, interned when the history is checked.
    enum Named {
        Add(&'static str, &'static str, u64, Completion),
        Read(&'static str, u64, u64, &'static [&'static str]),
    }

    fn add(client: &'static str, id: &'static str, call: u64, returned: u64) -> Named {
        Named::Add(client, id, call, Completion::Returned(returned))
    }

    fn failed_add(client: &'static str, id: &'static str, call: u64) -> Named {
        Named::Add(client, id, call, Completion::Unknown)
    }

    fn read(
        client: &'static str,
        call: u64,
        returned: u64,
        seen: &'static [&'static str],
    ) -> Named {
        Named::Read(client, call, returned, seen)
    }

    fn checked(history: &[Named], budget: u64) -> Verdict {
        let mut names = IdNames::new();
        let ops: Vec<Operation> = history
            .iter()
            .map(|op| match op {
                Named::Add(client, id, call, completion) => Operation::Add {
                    client: client.to_string(),
                    id: names.intern(id),
                    call: *call,
                    completion: *completion,
                },
                Named::Read(client, call, returned, seen) => Operation::Read {
                    client: client.to_string(),
                    call: *call,
                    returned: *returned,
                    seen: names.set_of(seen.iter().copied()),
                },
            })
            .collect();
        check(&ops, &names, budget)
    }

    fn violation(history: &[Named]) -> String {
        match checked(history, BUDGET) {
            Verdict::NotLinearizable(v) => v.to_string(),
            other => panic!("expected a violation, got {other}"),
        }
    }

    fn assert_linearizable(history: &[Named]) {
        let verdict = checked(history, BUDGET);
        assert!(matches!(verdict, Verdict::Linearizable { .. }), "{verdict}");
    }

    #[test]
    fn an_empty_history_and_a_sequential_one_are_linearizable() {
        assert_linearizable(&[]);
        assert_linearizable(&[
            read("c1", 1, 2, &[]),
            add("c1", "a", 3, 4),
            read("c2", 5, 6, &["a"]),
            add("c2", "b", 7, 8),
            read("c1", 9, 10, &["a", "b"]),
        ]);
    }

    #[test]
    fn a_read_concurrent_with_an_add_may_see_it_or_not() {
        assert_linearizable(&[add("c1", "a", 1, 4), read("c2", 2, 3, &[])]);
        assert_linearizable(&[add("c1", "a", 1, 4), read("c2", 2, 3, &["a"])]);
        // Two overlapping reads on either side of the add's instant.
        assert_linearizable(&[
            add("c1", "a", 1, 10),
            read("c2", 2, 5, &["a"]),
            read("c3", 3, 9, &[]),
        ]);
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_add_is_caught() {
        let message = violation(&[
            add("c1", "a", 1, 2),
            add("c1", "b", 3, 4),
            read("c2", 5, 6, &["a"]),
        ]);
        assert!(message.contains("misses `b`"), "{message}");
        assert!(
            message.contains("acknowledged to c1 at #4, before the read was called"),
            "{message}"
        );
    }

    #[test]
    fn a_read_that_sees_an_add_nobody_asked_for_is_caught() {
        let message = violation(&[add("c1", "a", 1, 2), read("c2", 3, 4, &["a", "ghost"])]);
        assert!(
            message.contains("saw `ghost`, which no client ever asked to add"),
            "{message}"
        );
        let message = violation(&[read("c2", 1, 2, &["a"]), add("c1", "a", 3, 4)]);
        assert!(
            message.contains("before any client asked to add it"),
            "{message}"
        );
    }

    #[test]
    fn a_read_that_sees_an_add_and_a_later_read_that_does_not_are_caught() {
        // With the add acknowledged, and with it failed (so it is open-ended).
        for a in [add("c1", "a", 1, 20), failed_add("c1", "a", 1)] {
            let message = violation(&[a, read("c2", 2, 3, &["a"]), read("c3", 4, 5, &[])]);
            assert!(message.contains("saw 0 ids: it misses `a`"), "{message}");
        }
    }

    #[test]
    fn two_concurrent_reads_that_each_see_a_different_add_are_caught() {
        // Per element this passes; as a set, one add precedes the other.
        let message = violation(&[
            add("c1", "a", 1, 10),
            add("c2", "b", 2, 11),
            read("c3", 3, 8, &["a"]),
            read("c4", 4, 9, &["b"]),
        ]);
        assert!(message.contains("none fits"), "{message}");
    }

    #[test]
    fn a_failed_add_may_take_effect_late_or_never() {
        // Never seen: it never happened.
        assert_linearizable(&[
            failed_add("c1", "a", 1),
            read("c2", 5, 6, &[]),
            read("c2", 7, 8, &[]),
        ]);
        // Took effect long after its client gave up.
        assert_linearizable(&[
            failed_add("c1", "a", 1),
            read("c2", 5, 6, &[]),
            add("c1", "b", 7, 8),
            read("c2", 9, 10, &["a", "b"]),
        ]);
        // But once seen, it stays.
        violation(&[
            failed_add("c1", "a", 1),
            read("c2", 5, 6, &["a"]),
            read("c2", 7, 8, &[]),
        ]);
        // And it cannot have taken effect before it was asked for.
        violation(&[read("c2", 1, 2, &["a"]), failed_add("c1", "a", 3)]);
    }

    #[test]
    fn an_id_added_twice_keeps_a_failed_add_open() {
        // The acknowledged add is after the first read that sees `a`, so the
        // failed add must be the one that took effect; it is open-ended.
        assert_linearizable(&[
            failed_add("c1", "a", 1),
            read("c2", 2, 3, &[]),
            read("c2", 4, 5, &["a"]),
            add("c3", "a", 6, 7),
            read("c2", 8, 9, &["a"]),
        ]);
        violation(&[
            failed_add("c1", "a", 1),
            read("c2", 2, 3, &["a"]),
            add("c3", "a", 4, 5),
            read("c2", 6, 7, &[]),
        ]);
    }

    /// A linearizable history of `clients` clients doing `per_client`
    /// operations each with overlapping intervals and some failed adds: each
    /// operation takes effect at a random instant of its interval.
    fn simulated_history(
        seed: u64,
        clients: usize,
        per_client: usize,
    ) -> (Vec<Operation>, IdNames) {
        let mut names = IdNames::new();
        let mut rng = SeededRng::new(seed);
        // (effect instant, client, op index) for every operation, then the
        // operations are applied in effect order to compute reads.
        let mut planned = Vec::new();
        let mut clock = vec![0u64; clients];
        for _ in 0..per_client {
            for (c, at) in clock.iter_mut().enumerate() {
                let call = *at + 1 + rng.below(5);
                let effect = call + 1 + rng.below(20);
                let returned = effect + 1 + rng.below(20);
                *at = returned;
                let is_add = rng.chance(0.5);
                let failed = is_add && rng.chance(0.1);
                planned.push((effect, c, call, returned, is_add, failed));
            }
        }
        planned.sort();
        let mut set = IdSet::new();
        let mut history = Vec::new();
        let mut n = 0;
        for (_, c, call, returned, is_add, failed) in planned {
            // Distinct times: scale, then spread by client.
            let (call, returned) = (call * 16 + c as u64, returned * 16 + c as u64 + 8);
            let client = format!("c{c}");
            if is_add {
                let id = names.intern(&format!("{client}-{n}"));
                n += 1;
                // A failed add takes effect or not, at random.
                if !failed || rng.chance(0.5) {
                    set.insert(id);
                }
                history.push(Operation::Add {
                    client,
                    id,
                    call,
                    completion: if failed {
                        Completion::Unknown
                    } else {
                        Completion::Returned(returned)
                    },
                });
            } else {
                history.push(Operation::Read {
                    client,
                    call,
                    returned,
                    seen: set.clone(),
                });
            }
        }
        (history, names)
    }

    #[test]
    fn long_concurrent_histories_are_decided_within_the_budget() {
        for seed in 0..5 {
            let (history, names) = simulated_history(seed, 5, 400);
            let verdict = check(&history, &names, 2_000_000);
            assert!(
                matches!(verdict, Verdict::Linearizable { .. }),
                "seed {seed}: {verdict}"
            );

            // Drop, from one late read, an id acknowledged well before it.
            let mut broken = history.clone();
            let acked: Vec<(u32, u64)> = broken
                .iter()
                .filter_map(|op| match op {
                    Operation::Add {
                        id,
                        completion: Completion::Returned(at),
                        ..
                    } => Some((*id, *at)),
                    _ => None,
                })
                .collect();
            let (id, at) = acked[acked.len() / 2];
            let stale = broken
                .iter_mut()
                .find_map(|op| match op {
                    Operation::Read { call, seen, .. } if *call > at + 1000 => Some(seen),
                    _ => None,
                })
                .expect("a read well after the add");
            assert!(stale.contains(id));
            stale.remove(id);
            let verdict = check(&broken, &names, 2_000_000);
            assert!(
                matches!(verdict, Verdict::NotLinearizable(_)),
                "seed {seed}: {verdict}"
            );
        }
    }

    #[test]
    fn a_search_over_budget_is_undecided_not_a_pass() {
        let (history, names) = simulated_history(7, 5, 100);
        assert!(matches!(
            check(&history, &names, 10),
            Verdict::Undecided { .. }
        ));
    }
}
