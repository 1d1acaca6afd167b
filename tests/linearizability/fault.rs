//! The faults a run injects and the seeded order it injects them in: every
//! kind once, in a seeded order, then seeded picks until time runs out.

use std::fmt;

use super::seeded_rng::SeededRng;

/// One fault, applied and healed by `Scenario::inject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Cut the leader off from the other nodes (they elect a new one), read
    /// from it directly while it still believes it leads, then heal.
    PartitionLeader,
    /// SIGSTOP the leader; once the others have elected and taken writes,
    /// queue reads and a write on its own port, then SIGCONT it — still cut
    /// off from the others when `cut_off`, so it cannot learn it was deposed.
    PauseLeader {
        /// Keep it partitioned while it answers.
        cut_off: bool,
    },
    /// `kill -9` a node (the leader, or a follower) and restart it from disk.
    KillNode {
        /// The leader rather than a follower.
        leader: bool,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::PartitionLeader => f.write_str("partition the leader from the others"),
            Fault::PauseLeader { cut_off: false } => {
                f.write_str("pause the leader (SIGSTOP), send it requests, resume it")
            }
            Fault::PauseLeader { cut_off: true } => f.write_str(
                "pause the leader (SIGSTOP) and cut it off, send it requests, resume it still cut off",
            ),
            Fault::KillNode { leader: true } => f.write_str("kill -9 the leader, restart it"),
            Fault::KillNode { leader: false } => f.write_str("kill -9 a follower, restart it"),
        }
    }
}

/// An endless seeded sequence of faults.
pub struct FaultSchedule {
    rng: SeededRng,
    first: Vec<Fault>,
}

impl FaultSchedule {
    /// The schedule that `rng` determines.
    pub fn new(mut rng: SeededRng) -> FaultSchedule {
        let first = rng.shuffled(vec![
            Fault::PartitionLeader,
            Fault::PauseLeader { cut_off: true },
            Fault::KillNode { leader: true },
        ]);
        FaultSchedule {
            rng,
            first: first.into_iter().rev().collect(),
        }
    }

    /// The next fault.
    pub fn next_fault(&mut self) -> Fault {
        if let Some(fault) = self.first.pop() {
            return fault;
        }
        match self.rng.below(3) {
            0 => Fault::PartitionLeader,
            1 => Fault::PauseLeader {
                cut_off: self.rng.chance(0.5),
            },
            _ => Fault::KillNode {
                leader: self.rng.chance(0.5),
            },
        }
    }

    /// How long to hold a fault before healing it.
    pub fn hold(&mut self) -> std::time::Duration {
        self.rng.millis(300, 1500)
    }
}
