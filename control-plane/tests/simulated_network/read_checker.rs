//! Reads against acknowledged writes. The workload only ever adds tenants
//! and keys, so the state seen as a set of items only grows, and a
//! linearizable read must contain every item whose write was acknowledged,
//! or that an earlier read returned, before the read began; and no item
//! that was never written.

use std::collections::{BTreeMap, BTreeSet};

use quiver_control_plane::state::ControlState;

/// The items a state holds: `<tenant>` for each tenant and
/// `<tenant>/<key id>` for each of its keys.
pub fn items_of(state: &ControlState) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for (id, tenant) in &state.tenants {
        items.insert(id.clone());
        for key in tenant.keys.keys() {
            items.insert(format!("{id}/{key}"));
        }
    }
    items
}

/// A read that broke linearizability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadViolation {
    /// It missed items known to be written before it began.
    Stale { missing: BTreeSet<String> },
    /// It returned items nobody wrote.
    Invented { items: BTreeSet<String> },
}

impl std::fmt::Display for ReadViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadViolation::Stale { missing } => write!(
                f,
                "linearizable read: it misses {missing:?}, acknowledged or read before it began"
            ),
            ReadViolation::Invented { items } => {
                write!(f, "linearizable read: it returns {items:?}, never written")
            }
        }
    }
}

/// What a read must at least contain: fixed when it begins.
pub struct ReadFloor(BTreeSet<String>);

/// The writes and reads of the clients.
#[derive(Default)]
pub struct ReadChecker {
    /// Every item a client tried to write.
    proposed: BTreeSet<String>,
    /// Items known to be in the state: acknowledged, or returned by a read.
    confirmed: BTreeSet<String>,
    /// Acknowledged items and the log index of their write.
    acknowledged: BTreeMap<String, u64>,
}

impl ReadChecker {
    /// A client is about to ask for `item` to be written.
    pub fn proposing(&mut self, item: &str) {
        self.proposed.insert(item.to_string());
    }

    /// The write of `item` was acknowledged, committed at `index`.
    pub fn acknowledged(&mut self, item: &str, index: u64) {
        self.acknowledged.insert(item.to_string(), index);
        self.confirmed.insert(item.to_string());
    }

    /// A read begins.
    pub fn read_begins(&self) -> ReadFloor {
        ReadFloor(self.confirmed.clone())
    }

    /// A read that began at `floor` returned `seen`.
    pub fn read_returned(
        &mut self,
        floor: ReadFloor,
        seen: &BTreeSet<String>,
    ) -> Result<(), ReadViolation> {
        let missing: BTreeSet<String> = floor.0.difference(seen).cloned().collect();
        if !missing.is_empty() {
            return Err(ReadViolation::Stale { missing });
        }
        let invented: BTreeSet<String> = seen.difference(&self.proposed).cloned().collect();
        if !invented.is_empty() {
            return Err(ReadViolation::Invented { items: invented });
        }
        self.confirmed.extend(seen.iter().cloned());
        Ok(())
    }

    /// Acknowledged items and their log indexes.
    pub fn acknowledged_items(&self) -> &BTreeMap<String, u64> {
        &self.acknowledged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_read_missing_an_acknowledged_write_is_stale() {
        let mut checker = ReadChecker::default();
        checker.proposing("t1");
        checker.acknowledged("t1", 3);
        let floor = checker.read_begins();
        assert_eq!(
            checker.read_returned(floor, &set(&[])),
            Err(ReadViolation::Stale {
                missing: set(&["t1"])
            })
        );
    }

    #[test]
    fn a_read_may_miss_what_was_acknowledged_after_it_began() {
        let mut checker = ReadChecker::default();
        checker.proposing("t1");
        let floor = checker.read_begins();
        checker.acknowledged("t1", 3);
        assert!(checker.read_returned(floor, &set(&[])).is_ok());
    }

    #[test]
    fn a_read_after_a_read_sees_at_least_as_much() {
        let mut checker = ReadChecker::default();
        checker.proposing("t1");
        let floor = checker.read_begins();
        checker.read_returned(floor, &set(&["t1"])).unwrap();
        let later = checker.read_begins();
        assert!(matches!(
            checker.read_returned(later, &set(&[])),
            Err(ReadViolation::Stale { .. })
        ));
    }

    #[test]
    fn a_read_of_something_never_written_is_caught() {
        let mut checker = ReadChecker::default();
        let floor = checker.read_begins();
        assert_eq!(
            checker.read_returned(floor, &set(&["ghost"])),
            Err(ReadViolation::Invented {
                items: set(&["ghost"])
            })
        );
    }
}
