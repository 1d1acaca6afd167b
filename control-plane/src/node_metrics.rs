//! What a control-plane node measures about itself: its Raft term,
//! leadership, apply lag and leader changes (read from openraft's metrics
//! watch), how long its writes take to commit, the manifest version it
//! serves, how far each node reporting to it is behind, and those nodes by
//! role and state. It only reads; nothing here changes Raft or the registry.

use std::{
    collections::BTreeMap,
    sync::{Arc, Weak},
    time::Instant,
};

use opentelemetry::KeyValue;
use quiver_telemetry::{instruments, instruments::names, metrics::meter};
use tokio_util::sync::CancellationToken;

use crate::{
    admin::{FleetMember, Verdict},
    fleet::FleetRegistry,
    manifest_store::ManifestStore,
    node_role::NodeRole,
    raft::{Raft, state_machine::SharedState},
};

/// Tools with findings by (worst severity, `held` or `served`); every
/// combination is present, so a gauge goes back to 0.
fn count_findings(
    state: &crate::state::ControlState,
) -> BTreeMap<(quiver_proto::finding::Severity, &'static str), u64> {
    use quiver_proto::finding::Severity;
    let mut counts: BTreeMap<(Severity, &'static str), u64> = Severity::ALL
        .into_iter()
        .flat_map(|s| [((s, "held"), 0), ((s, "served"), 0)])
        .collect();
    let worst = |f: &[quiver_proto::finding::Finding]| f.iter().map(|f| f.severity).max();
    for held in state.held.values().flat_map(|h| h.values()) {
        if let Some(s) = worst(&held.findings) {
            *counts.entry((s, "held")).or_default() += 1;
        }
    }
    for findings in state.catalogue.values().flat_map(|e| e.findings.values()) {
        if let Some(s) = worst(findings) {
            *counts.entry((s, "served")).or_default() += 1;
        }
    }
    counts
}

/// The `quiver.role` of a control-plane node.
const CONTROL_PLANE_ROLE: &str = "control-plane";

/// Awaits `write` (a Raft `client_write`) and records how long it took to
/// commit when it did.
pub(crate) async fn timed_commit<T, E>(write: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    let started = Instant::now();
    let result = write.await;
    if result.is_ok() {
        instruments()
            .raft_commit_duration
            .record(started.elapsed().as_secs_f64(), &[]);
    }
    result
}

/// Registers this node's gauges and counts leader changes until `shutdown`.
/// A node that stopped (or was dropped) reports nothing.
pub(crate) fn report_node(
    raft: &Raft,
    shared: &Arc<SharedState>,
    fleet: &Arc<FleetRegistry>,
    shutdown: &CancellationToken,
) {
    let live = Liveness {
        shared: Arc::downgrade(shared),
        shutdown: shutdown.clone(),
    };
    let raft_gauge = |name: &'static str, description: &'static str, read: fn(&RaftView) -> u64| {
        let metrics = raft.metrics();
        let live = live.clone();
        meter()
            .u64_observable_gauge(name)
            .with_description(description)
            .with_callback(move |observer| {
                if live.shared().is_some() {
                    let m = metrics.borrow();
                    let view = RaftView {
                        id: m.id,
                        term: m.current_term,
                        leader: m.current_leader,
                        last_log: m.last_log_index.unwrap_or(0),
                        applied: m.last_applied.map_or(0, |l| l.index),
                    };
                    observer.observe(read(&view), &[]);
                }
            })
            .build();
    };
    raft_gauge(
        names::RAFT_TERM,
        "The control-plane node's current Raft term",
        |r| r.term,
    );
    raft_gauge(
        names::RAFT_IS_LEADER,
        "1 on the control-plane node that is leader, 0 elsewhere",
        |r| u64::from(r.leader == Some(r.id)),
    );
    raft_gauge(
        names::RAFT_APPLY_LAG,
        "Raft log entries written on this node but not yet applied",
        |r| r.last_log.saturating_sub(r.applied),
    );
    let served = live.clone();
    meter()
        .u64_observable_gauge(names::MANIFEST_VERSION)
        .with_description("Manifest version this node serves")
        .with_callback(move |observer| {
            if let Some(shared) = served.shared() {
                observer.observe(
                    shared.manifest().version,
                    &[KeyValue::new("quiver.role", CONTROL_PLANE_ROLE)],
                );
            }
        })
        .build();
    let (lag_live, lag_fleet) = (live.clone(), Arc::downgrade(fleet));
    meter()
        .u64_observable_gauge(names::WATCH_LAG)
        .with_description(
            "Manifest versions a node reporting to this control-plane node is behind it",
        )
        .with_callback(move |observer| {
            let (Some(shared), Some(fleet)) = (lag_live.shared(), lag_fleet.upgrade()) else {
                return;
            };
            let version = shared.manifest().version;
            for member in fleet.members() {
                observer.observe(
                    version.saturating_sub(member.manifest_version),
                    &[KeyValue::new("quiver.node", member.node)],
                );
            }
        })
        .build();
    let findings_live = live.clone();
    meter()
        .u64_observable_gauge(names::TOOL_FINDINGS)
        .with_description(
            "Tools with screening findings, by worst severity and status (held back, or served)",
        )
        .with_callback(move |observer| {
            let Some(shared) = findings_live.shared() else {
                return;
            };
            for ((severity, status), n) in count_findings(&shared.lock()) {
                observer.observe(
                    n,
                    &[
                        KeyValue::new("severity", severity.as_str()),
                        KeyValue::new("status", status),
                    ],
                );
            }
        })
        .build();
    let (members_live, members_fleet) = (live, Arc::downgrade(fleet));
    meter()
        .u64_observable_gauge(names::FLEET_MEMBERS)
        .with_description(
            "Nodes reporting to this control-plane node, by role and state (ok, stale, fenced)",
        )
        .with_callback(move |observer| {
            let (Some(shared), Some(fleet)) = (members_live.shared(), members_fleet.upgrade())
            else {
                return;
            };
            let manifest = shared.manifest();
            let canonical_hash = manifest.stub_hash.to_hex();
            let members = fleet.members();
            let counts = {
                let state = shared.lock();
                count_members(&members, (manifest.version, &canonical_hash), |v| {
                    state
                        .history
                        .iter()
                        .find(|r| r.version == v)
                        .map(|r| r.stub_hash.clone())
                })
            };
            for ((role, state), n) in counts {
                observer.observe(
                    n,
                    &[
                        KeyValue::new("quiver.role", role),
                        KeyValue::new("state", state.as_str()),
                    ],
                );
            }
        })
        .build();
    tokio::spawn(count_leader_changes(raft.clone(), shutdown.clone()));
}

/// Registers the `quiver.manifest.version` gauge of an edge or executor:
/// the version in `store`, while the store lives and `shutdown` is not
/// cancelled.
pub(crate) fn report_served_version(
    store: &Arc<ManifestStore>,
    role: NodeRole,
    shutdown: &CancellationToken,
) {
    let (store, shutdown) = (Arc::downgrade(store), shutdown.clone());
    meter()
        .u64_observable_gauge(names::MANIFEST_VERSION)
        .with_description("Manifest version this node serves")
        .with_callback(move |observer| {
            if let Some(store) = store.upgrade().filter(|_| !shutdown.is_cancelled()) {
                observer.observe(
                    store.current().version,
                    &[KeyValue::new("quiver.role", role.as_str())],
                );
            }
        })
        .build();
}

/// What the gauges read from one Raft metrics snapshot.
struct RaftView {
    id: u64,
    term: u64,
    leader: Option<u64>,
    last_log: u64,
    applied: u64,
}

/// Whether the node still runs.
#[derive(Clone)]
struct Liveness {
    shared: Weak<SharedState>,
    shutdown: CancellationToken,
}

impl Liveness {
    fn shared(&self) -> Option<Arc<SharedState>> {
        if self.shutdown.is_cancelled() {
            return None;
        }
        self.shared.upgrade()
    }
}

/// A fleet member's state as the `quiver.fleet.members` gauge names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MemberState {
    /// It serves the canonical manifest.
    Ok,
    /// It serves an older version, with that version's hash: it will catch up.
    Stale,
    /// Its stub hash is not the one published for its version: it must not
    /// be trusted until it is fixed (what `cluster verify` calls a mismatch).
    Fenced,
}

impl MemberState {
    fn of(verdict: Verdict) -> MemberState {
        match verdict {
            Verdict::Ok => MemberState::Ok,
            Verdict::Behind => MemberState::Stale,
            Verdict::Mismatch => MemberState::Fenced,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            MemberState::Ok => "ok",
            MemberState::Stale => "stale",
            MemberState::Fenced => "fenced",
        }
    }
}

/// Members by role and state, judged as `cluster verify` judges them; every
/// role and state appears (0 when none), so a state that empties shows 0.
fn count_members(
    members: &[FleetMember],
    canonical: (u64, &str),
    published: impl Fn(u64) -> Option<String>,
) -> BTreeMap<(&'static str, MemberState), u64> {
    let mut counts = BTreeMap::new();
    for role in [NodeRole::Edge, NodeRole::Executor, NodeRole::Dev] {
        for state in [MemberState::Ok, MemberState::Stale, MemberState::Fenced] {
            counts.insert((role.as_str(), state), 0);
        }
    }
    for m in members {
        let hash = published(m.manifest_version);
        let verdict = Verdict::judge(m.manifest_version, &m.stub_hash, canonical, |_| {
            hash.as_deref()
        });
        *counts
            .entry((m.role.as_str(), MemberState::of(verdict)))
            .or_default() += 1;
    }
    counts
}

/// Counts every change to a known leader other than the last one seen.
async fn count_leader_changes(raft: Raft, shutdown: CancellationToken) {
    let mut metrics = raft.metrics();
    let mut last: Option<u64> = None;
    loop {
        let leader = metrics.borrow_and_update().current_leader;
        if leader.is_some() && leader != last {
            instruments().raft_leader_changes.add(1, &[]);
            last = leader;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { return },
            () = shutdown.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(node: &str, role: NodeRole, version: u64, hash: &str) -> FleetMember {
        FleetMember {
            node: node.into(),
            role,
            manifest_version: version,
            stub_hash: hash.into(),
            age_ms: 0,
            reported_to: 1,
            readiness: Default::default(),
        }
    }

    #[test]
    fn members_are_ok_stale_or_fenced_as_cluster_verify_judges_them() {
        let members = [
            member("e1", NodeRole::Edge, 3, "h3"),
            member("e2", NodeRole::Edge, 2, "h2"),
            member("x1", NodeRole::Executor, 3, "forged"),
            member("x2", NodeRole::Executor, 2, "forged"),
        ];
        let published = |v: u64| (v <= 3).then(|| format!("h{v}"));
        let counts = count_members(&members, (3, "h3"), published);
        let n = |role: NodeRole, state| counts[&(role.as_str(), state)];
        assert_eq!(n(NodeRole::Edge, MemberState::Ok), 1);
        assert_eq!(n(NodeRole::Edge, MemberState::Stale), 1);
        assert_eq!(n(NodeRole::Executor, MemberState::Fenced), 2);
        assert_eq!(n(NodeRole::Executor, MemberState::Ok), 0);
        assert_eq!(n(NodeRole::Dev, MemberState::Ok), 0);
        assert_eq!(counts.values().sum::<u64>(), 4);
    }
}
