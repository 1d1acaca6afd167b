//! Election safety, checked as it happens, not sampled: every vote a node
//! persists passes through [`ElectionChecker::vote_saved`] the moment its
//! store has it, before the node acts on it, and a leader is established only
//! by persisting its own committed vote; so every election is seen, however
//! short the leadership. It holds no clock and no node, only what was saved.

use std::{
    cmp::Ordering,
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use openraft::{CommittedLeaderId, Vote};
use quiver_control_plane::raft::NodeId;

/// How the openraft build tells leaders apart, which decides whether one
/// term may see two leaders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderIds {
    /// Standard Raft (openraft's `single-term-leader` feature): a leader is
    /// its term, so a term has at most one leader.
    OnePerTerm,
    /// openraft's default: a leader is `(term, node)`. A candidate with a
    /// higher node id may still win a term another node already won (its
    /// vote is greater), so a term may see several leaders, one after
    /// another, each elected once; log entries carry the node, so their ids
    /// still never collide.
    OnePerTermAndNode,
}

impl LeaderIds {
    /// The mode of the openraft this test is built with: in standard mode a
    /// committed leader id keeps only the term.
    pub fn of_this_build() -> LeaderIds {
        if CommittedLeaderId::<NodeId>::new(1, 1) == CommittedLeaderId::new(1, 2) {
            LeaderIds::OnePerTerm
        } else {
            LeaderIds::OnePerTermAndNode
        }
    }
}

/// A broken election rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionViolation {
    /// Two nodes led one term where a term has one leader.
    TwoLeaders {
        term: u64,
        first: NodeId,
        second: NodeId,
    },
    /// A node was elected twice for the same leader id.
    ElectedTwice { term: u64, node: NodeId },
    /// A node took the lead without a majority having voted for it.
    NoQuorum {
        term: u64,
        node: NodeId,
        granted: BTreeSet<NodeId>,
    },
    /// A node persisted a vote lower than one it had persisted before.
    VoteWentBack {
        node: NodeId,
        before: Vote<NodeId>,
        after: Vote<NodeId>,
    },
    /// After a crash, a node's disk no longer holds a vote it had saved.
    VoteLost {
        node: NodeId,
        saved: Vote<NodeId>,
        on_disk: Option<Vote<NodeId>>,
    },
}

impl fmt::Display for ElectionViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElectionViolation::TwoLeaders {
                term,
                first,
                second,
            } => write!(
                f,
                "election safety: nodes {first} and {second} both led term {term}"
            ),
            ElectionViolation::ElectedTwice { term, node } => write!(
                f,
                "election safety: node {node} was elected twice in term {term}"
            ),
            ElectionViolation::NoQuorum {
                term,
                node,
                granted,
            } => write!(
                f,
                "election safety: node {node} leads term {term} with the votes of {granted:?} only, not a majority"
            ),
            ElectionViolation::VoteWentBack {
                node,
                before,
                after,
            } => write!(
                f,
                "vote monotonicity: node {node} saved vote {after} after vote {before}"
            ),
            ElectionViolation::VoteLost {
                node,
                saved,
                on_disk,
            } => write!(
                f,
                "vote durability: node {node} saved vote {saved}, but after its crash its disk holds {}",
                on_disk.map_or("no vote".to_string(), |v| v.to_string())
            ),
        }
    }
}

/// A leader, when its election is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leadership {
    pub term: u64,
    pub node: NodeId,
}

/// Every vote persisted and every leader elected, across the crashes of
/// the nodes.
pub struct ElectionChecker {
    mode: LeaderIds,
    voters: usize,
    /// The last vote each node persisted.
    votes: BTreeMap<NodeId, Vote<NodeId>>,
    /// `(term, candidate)` → the nodes that persisted a vote for it.
    granted: BTreeMap<(u64, Option<NodeId>), BTreeSet<NodeId>>,
    /// term → its leaders, in the order they were elected.
    leaders: BTreeMap<u64, Vec<NodeId>>,
}

impl ElectionChecker {
    /// A checker for a cluster of `voters` voters.
    pub fn new(mode: LeaderIds, voters: usize) -> ElectionChecker {
        ElectionChecker {
            mode,
            voters,
            votes: BTreeMap::new(),
            granted: BTreeMap::new(),
            leaders: BTreeMap::new(),
        }
    }

    /// `node`'s store has durably saved `vote`; returns the leader this
    /// establishes, if it is `node`'s own committed vote.
    pub fn vote_saved(
        &mut self,
        node: NodeId,
        vote: Vote<NodeId>,
    ) -> Result<Option<Leadership>, ElectionViolation> {
        // Votes are partially ordered: incomparable counts as going back.
        if let Some(before) = self.votes.get(&node)
            && !matches!(
                vote.partial_cmp(before),
                Some(Ordering::Greater | Ordering::Equal)
            )
        {
            return Err(ElectionViolation::VoteWentBack {
                node,
                before: *before,
                after: vote,
            });
        }
        self.votes.insert(node, vote);
        let term = vote.leader_id().get_term();
        let candidate = vote.leader_id().voted_for();
        let granted = self.granted.entry((term, candidate)).or_default();
        granted.insert(node);
        if !(vote.is_committed() && candidate == Some(node)) {
            return Ok(None);
        }
        if granted.len() <= self.voters / 2 {
            return Err(ElectionViolation::NoQuorum {
                term,
                node,
                granted: granted.clone(),
            });
        }
        let leaders = self.leaders.entry(term).or_default();
        if leaders.contains(&node) {
            return Err(ElectionViolation::ElectedTwice { term, node });
        }
        if let (LeaderIds::OnePerTerm, Some(first)) = (self.mode, leaders.first()) {
            return Err(ElectionViolation::TwoLeaders {
                term,
                first: *first,
                second: node,
            });
        }
        leaders.push(node);
        Ok(Some(Leadership { term, node }))
    }

    /// `node` reopened its disk after a crash and found `on_disk`: the last
    /// vote it saved, or a later one whose save the crash interrupted.
    pub fn reopened(
        &mut self,
        node: NodeId,
        on_disk: Option<Vote<NodeId>>,
    ) -> Result<(), ElectionViolation> {
        let Some(saved) = self.votes.get(&node).copied() else {
            return Ok(());
        };
        match on_disk {
            Some(found) if found >= saved => {
                self.votes.insert(node, found);
                Ok(())
            }
            _ => Err(ElectionViolation::VoteLost {
                node,
                saved,
                on_disk,
            }),
        }
    }

    /// Leaders elected so far.
    pub fn elections(&self) -> usize {
        self.leaders.values().map(Vec::len).sum()
    }

    /// Terms that saw more than one leader (only in
    /// [`LeaderIds::OnePerTermAndNode`] mode).
    pub fn terms_with_several_leaders(&self) -> usize {
        self.leaders.values().filter(|l| l.len() > 1).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(term: u64, node: NodeId) -> Vote<NodeId> {
        Vote::new(term, node)
    }

    fn committed(term: u64, node: NodeId) -> Vote<NodeId> {
        Vote::new_committed(term, node)
    }

    /// Node `leader` is elected in `term` by itself and the two next nodes.
    fn elect(
        checker: &mut ElectionChecker,
        term: u64,
        leader: NodeId,
    ) -> Result<Option<Leadership>, ElectionViolation> {
        for voter in [leader, leader % 5 + 1, (leader + 1) % 5 + 1] {
            checker.vote_saved(voter, vote(term, leader))?;
        }
        checker.vote_saved(leader, committed(term, leader))
    }

    #[test]
    fn a_majority_elects_one_leader_per_term() {
        let mut checker = ElectionChecker::new(LeaderIds::OnePerTerm, 5);
        assert_eq!(
            elect(&mut checker, 1, 1),
            Ok(Some(Leadership { term: 1, node: 1 }))
        );
        assert_eq!(
            elect(&mut checker, 2, 3),
            Ok(Some(Leadership { term: 2, node: 3 }))
        );
        assert_eq!(checker.elections(), 2);
    }

    #[test]
    fn two_leaders_for_one_term_are_caught_when_a_term_has_one_leader() {
        let mut checker = ElectionChecker::new(LeaderIds::OnePerTerm, 5);
        elect(&mut checker, 4, 2).unwrap();
        // Three other nodes vote for node 3 in the same term: only a bug lets
        // a standard-mode voter do that, and the checker says so at once.
        for voter in [3, 4, 5] {
            checker.vote_saved(voter, vote(4, 3)).unwrap();
        }
        assert_eq!(
            checker.vote_saved(3, committed(4, 3)),
            Err(ElectionViolation::TwoLeaders {
                term: 4,
                first: 2,
                second: 3
            })
        );
    }

    #[test]
    fn openraft_default_leader_ids_let_a_higher_node_win_a_won_term_once() {
        let mut checker = ElectionChecker::new(LeaderIds::OnePerTermAndNode, 5);
        elect(&mut checker, 4, 2).unwrap();
        for voter in [3, 4, 5] {
            checker.vote_saved(voter, vote(4, 3)).unwrap();
        }
        assert!(checker.vote_saved(3, committed(4, 3)).unwrap().is_some());
        assert_eq!(checker.terms_with_several_leaders(), 1);
    }

    #[test]
    fn a_leader_without_a_majority_is_caught() {
        let mut checker = ElectionChecker::new(LeaderIds::OnePerTermAndNode, 5);
        checker.vote_saved(1, vote(1, 1)).unwrap();
        checker.vote_saved(2, vote(1, 1)).unwrap();
        assert!(matches!(
            checker.vote_saved(1, committed(1, 1)),
            Err(ElectionViolation::NoQuorum {
                term: 1,
                node: 1,
                ..
            })
        ));
    }

    #[test]
    fn a_vote_that_goes_back_or_is_lost_in_a_crash_is_caught() {
        let mut checker = ElectionChecker::new(LeaderIds::OnePerTermAndNode, 5);
        checker.vote_saved(1, vote(3, 2)).unwrap();
        assert!(matches!(
            checker.vote_saved(1, vote(2, 5)),
            Err(ElectionViolation::VoteWentBack { node: 1, .. })
        ));
        assert!(checker.reopened(1, Some(vote(3, 2))).is_ok());
        assert!(matches!(
            checker.reopened(1, Some(vote(1, 1))),
            Err(ElectionViolation::VoteLost { node: 1, .. })
        ));
        assert!(matches!(
            checker.reopened(1, None),
            Err(ElectionViolation::VoteLost { node: 1, .. })
        ));
    }
}
