//! The operator requests about the cluster itself: membership, status,
//! leader transfer and `cluster verify` (the rest is in `operator.rs`).

use super::*;

impl Operator {
    pub(super) fn ensure_member(&self, node_id: NodeId) -> Result<(), AdminError> {
        let membership = self.replica.membership();
        if membership.get_node(&node_id).is_none() {
            let known: Vec<String> = membership.nodes().map(|(id, _)| id.to_string()).collect();
            return Err(Refusal::not_found(format!(
                "node {node_id} is not a member (members: {}); add it first with `quiver ctl cluster add-learner --node-id {node_id} --addr HOST:PORT`",
                known.join(", ")
            ))
            .into());
        }
        Ok(())
    }

    pub(super) fn unknown_upstream(&self, id: &str) -> AdminError {
        AdminError::from(self.replica.shared().lock().unknown_upstream(id))
    }

    pub(super) async fn remove_member(&self, node_id: NodeId) -> Result<MemberRemoved, AdminError> {
        let r = &self.replica;
        self.ensure_member(node_id)?;
        let voters: BTreeSet<NodeId> = r.membership().voter_ids().collect();
        if voters.contains(&node_id) {
            r.raft()
                .change_membership(
                    ChangeMembers::RemoveVoters(BTreeSet::from([node_id])),
                    false,
                )
                .await
                .map_err(|e| r.write_error(e))?;
        }
        let change = r
            .raft()
            .change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([node_id])), false)
            .await
            .map_err(|e| r.write_error(e))?;
        Ok(MemberRemoved {
            removed: node_id,
            log_index: change.log_id.index,
        })
    }

    pub(super) async fn cluster_status(&self) -> Result<ClusterStatus, AdminError> {
        let r = &self.replica;
        let metrics = r.raft().metrics().borrow().clone();
        if metrics.current_leader != Some(r.id()) {
            return Err(r.not_leader());
        }
        // Edges and executors report to whichever node they follow, so after
        // a leader change most reports are elsewhere: ask every member, as
        // `verify` does; one that does not answer is down.
        let (reports, unreachable) = self.fleet_everywhere().await;
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let replication = metrics.replication.clone().unwrap_or_default();
        let members = membership
            .nodes()
            .map(|(id, node)| {
                let role = if *id == r.id() {
                    MemberRole::Leader
                } else if voters.contains(id) {
                    MemberRole::Follower
                } else {
                    MemberRole::Learner
                };
                let matched_index = if *id == r.id() {
                    metrics.last_log_index
                } else {
                    replication.get(id).and_then(|m| m.map(|l| l.index))
                };
                MemberStatus {
                    id: *id,
                    addr: node.addr.clone(),
                    role,
                    matched_index,
                    state: if unreachable.contains(id) {
                        MemberReach::Down
                    } else {
                        MemberReach::Up
                    },
                }
            })
            .collect();
        let manifest = r.shared().manifest();
        Ok(ClusterStatus {
            leader: r.id(),
            term: metrics.current_term,
            last_log_index: metrics.last_log_index,
            last_applied: metrics.last_applied.map(|l| l.index),
            snapshot: metrics.snapshot.map(|l| l.index),
            purged: metrics.purged.map(|l| l.index),
            members,
            manifest_version: manifest.version,
            stub_hash: manifest.stub_hash.to_hex(),
            fleet: self.judge(reports, manifest.version, &manifest.stub_hash.to_hex()),
        })
    }

    /// The fleet reports held by this node and every other member (asked at
    /// once, each within [`MEMBER_ANSWER_WITHIN`]), and the members that did
    /// not answer.
    pub(super) async fn fleet_everywhere(&self) -> (Vec<FleetMember>, BTreeSet<NodeId>) {
        let r = &self.replica;
        let mut members: Vec<FleetMember> = self.fleet.members();
        let asks = r
            .membership()
            .nodes()
            .filter(|(id, _)| **id != r.id())
            .map(|(id, node)| {
                let (id, addr, tls) = (*id, node.addr.clone(), self.tls.clone());
                async move {
                    let mut client = AdminClient::new(vec![addr], tls);
                    let answer = tokio::time::timeout(
                        MEMBER_ANSWER_WITHIN,
                        client.call_here(&AdminRequest::Fleet),
                    )
                    .await;
                    (id, answer)
                }
            })
            .collect::<Vec<_>>();
        let mut unreachable = BTreeSet::new();
        for (id, answer) in futures::future::join_all(asks).await {
            match answer {
                Ok(Ok(AdminAnswer::Fleet(more))) => members.extend(more),
                Ok(Ok(other)) => {
                    tracing::warn!(node = id, "fleet of node {id}: answered {other:?}");
                }
                Ok(Err(e)) => {
                    tracing::debug!(node = id, "fleet of node {id}: {e}");
                    unreachable.insert(id);
                }
                Err(_) => {
                    tracing::debug!(node = id, "fleet of node {id}: no answer in time");
                    unreachable.insert(id);
                }
            }
        }
        (members, unreachable)
    }

    /// openraft 0.9 has no leader transfer, so the leader arranges one: every
    /// other voter stops standing for election, the leader stops its
    /// heartbeats, and the target's own election timer makes it leader once
    /// the old leader's lease runs out. Everything is switched back on after.
    pub(super) async fn transfer_leader(
        &self,
        node_id: NodeId,
    ) -> Result<LeaderTransfer, AdminError> {
        let r = &self.replica;
        let this = r.id();
        if r.raft().metrics().borrow().current_leader != Some(this) {
            return Err(r.not_leader());
        }
        let membership = r.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        if !voters.contains(&node_id) {
            return Err(AdminError::Invalid(format!(
                "node {node_id} is not a voter; promote it first"
            )));
        }
        if node_id == this {
            return Ok(LeaderTransfer {
                leader: this,
                changed: false,
            });
        }
        let others: Vec<String> = membership
            .nodes()
            .filter(|(id, _)| **id != node_id && **id != this && voters.contains(id))
            .map(|(_, n)| n.addr.clone())
            .collect();
        let set_election = async |enabled: bool| {
            for addr in &others {
                let mut client = AdminClient::new(vec![addr.clone()], self.tls.clone());
                let _ = client
                    .call_here(&AdminRequest::SetElection { enabled })
                    .await;
            }
        };
        set_election(false).await;
        let config = r.raft().runtime_config();
        config.elect(false);
        config.heartbeat(false);
        let mut watch = r.raft().metrics();
        let moved = tokio::time::timeout(
            Duration::from_millis(r.raft().config().election_timeout_max * 10),
            watch.wait_for(|m| m.current_leader == Some(node_id)),
        )
        .await
        .is_ok_and(|waited| waited.is_ok());
        config.heartbeat(true);
        config.elect(true);
        set_election(true).await;
        if moved {
            Ok(LeaderTransfer {
                leader: node_id,
                changed: true,
            })
        } else {
            Err(AdminError::Unavailable(format!(
                "node {node_id} did not take over in time; node {this} stays leader (is node {node_id} up and caught up?)"
            )))
        }
    }

    pub(super) async fn verify(&self) -> Result<FleetVerification, AdminError> {
        let r = &self.replica;
        let (canonical_version, canonical_hash) = r
            .read(|s| {
                let m = s.manifest();
                (m.version, m.stub_hash.to_hex())
            })
            .await?;
        // Reports may have gone to any control-plane node: ask the others too.
        let (members, _) = self.fleet_everywhere().await;
        let nodes = self.judge(members, canonical_version, &canonical_hash);
        let disagree: Vec<String> = nodes
            .iter()
            .filter(|n| n.verdict != Verdict::Ok)
            .map(|n| n.node.clone())
            .collect();
        Ok(FleetVerification {
            manifest_version: canonical_version,
            stub_hash: canonical_hash,
            ok: disagree.is_empty(),
            disagree,
            nodes,
        })
    }

    /// One verdict per reporting node (the freshest of its reports) against
    /// the canonical manifest `(version, hash)`.
    pub(super) fn judge(
        &self,
        members: Vec<FleetMember>,
        canonical_version: u64,
        canonical_hash: &str,
    ) -> Vec<NodeVerdict> {
        // One line per reporting node: the freshest report wins.
        let mut latest: BTreeMap<String, FleetMember> = BTreeMap::new();
        for m in members {
            match latest.get(&m.node) {
                Some(seen) if seen.age_ms <= m.age_ms => {}
                _ => {
                    latest.insert(m.node.clone(), m);
                }
            }
        }
        let history: BTreeMap<u64, String> = self
            .replica
            .shared()
            .lock()
            .history
            .iter()
            .map(|record| (record.version, record.stub_hash.clone()))
            .collect();
        latest
            .into_values()
            .map(|m| {
                let verdict = Verdict::judge(
                    m.manifest_version,
                    &m.stub_hash,
                    (canonical_version, canonical_hash),
                    |v| history.get(&v).map(String::as_str),
                );
                NodeVerdict {
                    node: m.node,
                    role: m.role,
                    manifest_version: m.manifest_version,
                    stub_hash: m.stub_hash,
                    verdict,
                    age_ms: m.age_ms,
                    reported_to: m.reported_to,
                    readiness: m.readiness,
                }
            })
            .collect()
    }
}
