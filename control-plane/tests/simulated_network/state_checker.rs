//! State machine safety across nodes: the applied state (Quiver's own
//! `ControlState`, as JSON) of every node that has applied up to log index
//! `i` is the same, byte for byte, and so is the log id it applied there;
//! after the cluster settles, every node's whole state is identical.

use std::collections::BTreeMap;

use openraft::LogId;
use quiver_control_plane::{raft::NodeId, state::ControlState};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A node's applied state at one point: the last log id it applied, and
/// the SHA-256 of its state's JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedState {
    pub node: NodeId,
    pub log_id: LogId<NodeId>,
    pub digest: String,
}

impl AppliedState {
    /// `node`'s `state` after applying up to `log_id`.
    pub fn of(node: NodeId, log_id: LogId<NodeId>, state: &ControlState) -> AppliedState {
        let json = serde_json::to_vec(state).expect("the control state serialises");
        AppliedState {
            node,
            log_id,
            digest: hex::encode(Sha256::digest(&json)),
        }
    }
}

/// Two nodes disagree about what they applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateViolation {
    /// At one log index, two nodes applied different entries or reached
    /// different states.
    Diverged {
        first: AppliedState,
        second: AppliedState,
    },
    /// After settling, two nodes' states differ.
    Differ {
        first: NodeId,
        second: NodeId,
        /// The top-level fields of the state that differ.
        fields: Vec<String>,
    },
}

impl std::fmt::Display for StateViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateViolation::Diverged { first, second } => write!(
                f,
                "state machine safety: at index {} node {} applied {} and reached state {}, node {} applied {} and reached state {}",
                first.log_id.index,
                first.node,
                first.log_id,
                &first.digest[..12],
                second.node,
                second.log_id,
                &second.digest[..12]
            ),
            StateViolation::Differ {
                first,
                second,
                fields,
            } => write!(
                f,
                "replicated state: nodes {first} and {second} settled on different states (fields {fields:?} differ)"
            ),
        }
    }
}

/// The first state seen at each log index.
#[derive(Default)]
pub struct StateChecker {
    at: BTreeMap<u64, AppliedState>,
}

impl StateChecker {
    /// Checks `seen` against what other nodes applied at its index.
    pub fn observe(&mut self, seen: AppliedState) -> Result<(), StateViolation> {
        match self.at.get(&seen.log_id.index) {
            Some(first) if first.log_id != seen.log_id || first.digest != seen.digest => {
                Err(StateViolation::Diverged {
                    first: first.clone(),
                    second: seen,
                })
            }
            Some(_) => Ok(()),
            None => {
                self.at.insert(seen.log_id.index, seen);
                Ok(())
            }
        }
    }

    /// Log indexes at which some node's state was seen.
    pub fn checkpoints(&self) -> usize {
        self.at.len()
    }
}

/// Every node's whole state, as JSON, is the same.
pub fn identical(states: &BTreeMap<NodeId, Value>) -> Result<(), StateViolation> {
    let mut nodes = states.iter();
    let Some((first, reference)) = nodes.next() else {
        return Ok(());
    };
    for (node, state) in nodes {
        if state != reference {
            return Err(StateViolation::Differ {
                first: *first,
                second: *node,
                fields: differing_fields(reference, state),
            });
        }
    }
    Ok(())
}

fn differing_fields(a: &Value, b: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return vec!["(the whole state)".to_string()];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use openraft::CommittedLeaderId;
    use quiver_control_plane::{
        command::{Command, Envelope},
        tenant::TenantPatch,
    };

    use super::*;

    fn with_tenant(id: &str) -> ControlState {
        let mut state = ControlState::default();
        let create = Envelope {
            format: quiver_control_plane::command::COMMAND_FORMAT,
            at_ms: 1,
            actor: "test".into(),
            command: Command::CreateTenant {
                id: id.into(),
                patch: TenantPatch::default(),
            },
        };
        state.apply(&create);
        state
    }

    fn log_id(term: u64, node: NodeId, index: u64) -> LogId<NodeId> {
        LogId::new(CommittedLeaderId::new(term, node), index)
    }

    #[test]
    fn the_same_state_at_the_same_index_passes() {
        let mut checker = StateChecker::default();
        let state = with_tenant("a");
        checker
            .observe(AppliedState::of(1, log_id(1, 1, 5), &state))
            .unwrap();
        checker
            .observe(AppliedState::of(2, log_id(1, 1, 5), &state.clone()))
            .unwrap();
        assert_eq!(checker.checkpoints(), 1);
    }

    #[test]
    fn different_states_at_one_index_are_caught() {
        let mut checker = StateChecker::default();
        checker
            .observe(AppliedState::of(1, log_id(1, 1, 5), &with_tenant("a")))
            .unwrap();
        let caught = checker.observe(AppliedState::of(2, log_id(1, 1, 5), &with_tenant("b")));
        assert!(
            matches!(caught, Err(StateViolation::Diverged { .. })),
            "{caught:?}"
        );
    }

    #[test]
    fn different_entries_at_one_index_are_caught() {
        let mut checker = StateChecker::default();
        let state = with_tenant("a");
        checker
            .observe(AppliedState::of(1, log_id(1, 1, 5), &state))
            .unwrap();
        let caught = checker.observe(AppliedState::of(2, log_id(2, 3, 5), &state));
        assert!(
            matches!(caught, Err(StateViolation::Diverged { .. })),
            "{caught:?}"
        );
    }

    #[test]
    fn settled_states_that_differ_are_caught_with_the_field() {
        let json = |s: &ControlState| serde_json::to_value(s).unwrap();
        let same = BTreeMap::from([(1, json(&with_tenant("a"))), (2, json(&with_tenant("a")))]);
        assert!(identical(&same).is_ok());
        let differ = BTreeMap::from([(1, json(&with_tenant("a"))), (2, json(&with_tenant("b")))]);
        match identical(&differ) {
            Err(StateViolation::Differ {
                first: 1,
                second: 2,
                fields,
            }) => assert!(fields.contains(&"tenants".to_string()), "{fields:?}"),
            other => panic!("not caught: {other:?}"),
        }
    }
}
