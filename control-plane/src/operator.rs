//! The operator API a node serves (`ControlPlane.Admin`): membership,
//! upstreams, tenants and keys, manifests and `cluster verify`. Writes go
//! through Raft; reads are linearizable; answers are JSON for `quiver ctl`.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    time::Duration,
};

use openraft::ChangeMembers;
use quiver_proto::Manifest;
use quiver_upstream::UpstreamConfig;
use rand::RngExt as _;
use serde_json::{Value, json};

use crate::{
    admin::{AdminRequest, FleetMember},
    command::Command,
    node::{AdminError, ControlPlaneNode},
    raft::{Node, NodeId},
    state::ControlState,
    tenant::hash_key,
};

impl ControlPlaneNode {
    /// Serves one operator request.
    pub async fn admin(&self, request: AdminRequest) -> Result<Value, AdminError> {
        match request {
            AdminRequest::ClusterInit => match self.bootstrap().await {
                Ok(true) => Ok(json!({"initialized": true, "node": self.id})),
                Ok(false) => Err(AdminError::Refused {
                    code: "already_exists".into(),
                    message: format!("node {} already belongs to a cluster", self.id),
                }),
                Err(e) => Err(AdminError::Unavailable(e.to_string())),
            },
            AdminRequest::ClusterStatus => self.cluster_status().await,
            AdminRequest::AddLearner { node_id, addr } => {
                if addr.parse::<SocketAddr>().is_err() && !addr.contains(':') {
                    return Err(AdminError::Invalid(format!(
                        "`{addr}` is not a host:port address"
                    )));
                }
                let r = self
                    .raft
                    .add_learner(node_id, Node::new(addr), true)
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"added": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::Promote { node_id } => {
                self.ensure_member(node_id)?;
                let r = self
                    .raft
                    .change_membership(
                        ChangeMembers::AddVoterIds(BTreeSet::from([node_id])),
                        false,
                    )
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"promoted": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::Remove { node_id } => {
                self.ensure_member(node_id)?;
                let voters: BTreeSet<NodeId> = self.membership().voter_ids().collect();
                if voters.contains(&node_id) {
                    self.raft
                        .change_membership(
                            ChangeMembers::RemoveVoters(BTreeSet::from([node_id])),
                            false,
                        )
                        .await
                        .map_err(|e| self.write_error(e))?;
                }
                let r = self
                    .raft
                    .change_membership(
                        ChangeMembers::RemoveNodes(BTreeSet::from([node_id])),
                        false,
                    )
                    .await
                    .map_err(|e| self.write_error(e))?;
                Ok(json!({"removed": node_id, "log_index": r.log_id.index}))
            }
            AdminRequest::TransferLeader { node_id } => self.transfer_leader(node_id).await,
            AdminRequest::SetElection { enabled } => {
                self.raft.runtime_config().elect(enabled);
                Ok(json!({"node": self.id, "elect": enabled}))
            }
            AdminRequest::Fleet => Ok(serde_json::to_value(self.fleet.members()).unwrap_or_default()),
            AdminRequest::Verify => self.verify().await,
            AdminRequest::UpstreamAdd {
                upstream,
                quarantine,
                replace,
            } => {
                self.write(
                    "ctl",
                    Command::PutUpstream {
                        upstream,
                        quarantine,
                        replace,
                    },
                )
                .await
            }
            AdminRequest::UpstreamList => {
                let statuses = self.discovery.statuses();
                self.read(|s| {
                    let list: Vec<Value> = s
                        .upstreams
                        .values()
                        .map(|u| upstream_summary(s, &u.config, u.quarantine, &statuses))
                        .collect();
                    Value::Array(list)
                })
                .await
            }
            AdminRequest::UpstreamShow { id } => {
                let statuses = self.discovery.statuses();
                self.read(|s| {
                    let record = s.upstreams.get(&id)?;
                    let mut value = upstream_summary(s, &record.config, record.quarantine, &statuses);
                    value["config"] = serde_json::to_value(&record.config).unwrap_or_default();
                    value["tools"] = s
                        .catalogue
                        .get(&id)
                        .map(|e| e.tools.iter().map(|t| json!({"name": t.name, "description": t.description})).collect())
                        .unwrap_or(Value::Array(vec![]));
                    value["pending"] = serde_json::to_value(s.pending.get(&id)).unwrap_or_default();
                    Some(value)
                })
                .await?
                .ok_or_else(|| self.unknown_upstream(&id))
            }
            AdminRequest::UpstreamRemove { id } => {
                self.write("ctl", Command::RemoveUpstream { id }).await
            }
            AdminRequest::UpstreamRefresh { id } => {
                // Discovery runs on the leader: check leadership first.
                self.read(|_| ()).await?;
                if let Some(id) = &id
                    && !self.shared.lock().upstreams.contains_key(id)
                {
                    return Err(self.unknown_upstream(id));
                }
                self.discovery
                    .refresh(id.as_deref())
                    .map_err(|e| AdminError::Invalid(e.to_string()))?;
                Ok(json!({"refreshing": id.map_or(Value::String("all".into()), Value::String)}))
            }
            AdminRequest::UpstreamDrift { id } => {
                self.read(|s| {
                    let events: Vec<&crate::state::Event> = s
                        .events
                        .iter()
                        .filter(|e| e.kind == "drift")
                        .filter(|e| id.is_none() || e.upstream == id)
                        .collect();
                    let pending: BTreeMap<&String, Vec<&String>> = s
                        .pending
                        .iter()
                        .filter(|(u, _)| id.as_ref().is_none_or(|i| i == *u))
                        .map(|(u, p)| (u, p.keys().collect()))
                        .collect();
                    json!({"events": events, "pending": pending})
                })
                .await
            }
            AdminRequest::UpstreamApprove { id, tool } => {
                self.write(
                    "ctl",
                    Command::ApproveDrift {
                        upstream: id,
                        tool,
                    },
                )
                .await
            }
            AdminRequest::TenantCreate { id, patch } => {
                self.write("ctl", Command::CreateTenant { id, patch }).await
            }
            AdminRequest::TenantList => {
                self.read(|s| {
                    Value::Array(s.tenants.values().map(tenant_public).collect())
                })
                .await
            }
            AdminRequest::TenantShow { id } => self
                .read(|s| s.tenants.get(&id).map(tenant_public))
                .await?
                .ok_or_else(|| AdminError::from(self.shared.lock().unknown_tenant(&id))),
            AdminRequest::TenantUpdate { id, patch } => {
                self.write("ctl", Command::UpdateTenant { id, patch }).await
            }
            AdminRequest::TenantDelete { id } => {
                self.write("ctl", Command::DeleteTenant { id }).await
            }
            AdminRequest::KeyIssue { tenant } => {
                let (key_id, key) = new_api_key();
                let sha256 = hash_key(&key);
                self.write(
                    "ctl",
                    Command::IssueKey {
                        tenant: tenant.clone(),
                        key_id: key_id.clone(),
                        sha256,
                    },
                )
                .await?;
                Ok(json!({"tenant": tenant, "key_id": key_id, "key": key}))
            }
            AdminRequest::KeyRevoke { tenant, key_id } => {
                self.write("ctl", Command::RevokeKey { tenant, key_id }).await
            }
            AdminRequest::ManifestShow { version } => {
                self.read(|s| {
                    let current = s.manifest();
                    match version {
                        None => Some(manifest_summary(&current)),
                        Some(v) if v == current.version => Some(manifest_summary(&current)),
                        Some(v) => s
                            .history
                            .iter()
                            .find(|r| r.version == v)
                            .map(|r| serde_json::to_value(r).unwrap_or_default()),
                    }
                })
                .await?
                .ok_or_else(|| AdminError::Refused {
                    code: "not_found".into(),
                    message: "that manifest version is not kept; `quiver ctl manifest show` gives the current one".into(),
                })
            }
            AdminRequest::ManifestDiff { from, to } => {
                self.read(|s| {
                    let find = |v: u64| s.history.iter().find(|r| r.version == v).cloned();
                    let oldest = s.history.front().map_or(0, |r| r.version);
                    let (Some(a), Some(b)) = (find(from), find(to)) else {
                        return Err(AdminError::Refused {
                            code: "not_found".into(),
                            message: format!(
                                "versions {from} and {to} must both be kept; kept versions are {oldest}..={}",
                                s.manifest_version()
                            ),
                        });
                    };
                    Ok(manifest_diff(&a, &b))
                })
                .await?
            }
            AdminRequest::ManifestHash => {
                self.read(|s| {
                    let m = s.manifest();
                    json!({"version": m.version, "stub_hash": m.stub_hash.to_hex(), "tools": m.tools.len()})
                })
                .await
            }
        }
    }

    fn membership(&self) -> openraft::Membership<NodeId, Node> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    fn ensure_member(&self, node_id: NodeId) -> Result<(), AdminError> {
        if self.membership().get_node(&node_id).is_none() {
            let known: Vec<String> = self
                .membership()
                .nodes()
                .map(|(id, _)| id.to_string())
                .collect();
            return Err(AdminError::Refused {
                code: "not_found".into(),
                message: format!(
                    "node {node_id} is not a member (members: {}); add it first with `quiver ctl cluster add-learner --node-id {node_id} --addr HOST:PORT`",
                    known.join(", ")
                ),
            });
        }
        Ok(())
    }

    fn unknown_upstream(&self, id: &str) -> AdminError {
        AdminError::from(self.shared.lock().unknown_upstream(id))
    }

    async fn cluster_status(&self) -> Result<Value, AdminError> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.current_leader != Some(self.id) {
            return Err(self.not_leader());
        }
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let replication = metrics.replication.clone().unwrap_or_default();
        let members: Vec<Value> = membership
            .nodes()
            .map(|(id, node)| {
                let role = if *id == self.id {
                    "leader"
                } else if voters.contains(id) {
                    "follower"
                } else {
                    "learner"
                };
                let matched = if *id == self.id {
                    metrics.last_log_index
                } else {
                    replication.get(id).and_then(|m| m.map(|l| l.index))
                };
                json!({"id": id, "addr": node.addr, "role": role, "matched_index": matched})
            })
            .collect();
        let (version, hash) = {
            let m = self.shared.manifest();
            (m.version, m.stub_hash.to_hex())
        };
        Ok(json!({
            "leader": self.id,
            "term": metrics.current_term,
            "last_log_index": metrics.last_log_index,
            "last_applied": metrics.last_applied.map(|l| l.index),
            "snapshot": metrics.snapshot.map(|l| l.index),
            "purged": metrics.purged.map(|l| l.index),
            "members": members,
            "manifest_version": version,
            "stub_hash": hash,
        }))
    }

    /// openraft 0.9 has no leader transfer, so the leader arranges one: every
    /// other voter stops standing for election, the leader stops its
    /// heartbeats, and the target's own election timer makes it leader once
    /// the old leader's lease runs out. Everything is switched back on after.
    async fn transfer_leader(&self, node_id: NodeId) -> Result<Value, AdminError> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.current_leader != Some(self.id) {
            return Err(self.not_leader());
        }
        let membership = self.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        if !voters.contains(&node_id) {
            return Err(AdminError::Invalid(format!(
                "node {node_id} is not a voter; promote it first"
            )));
        }
        if node_id == self.id {
            return Ok(json!({"leader": self.id, "changed": false}));
        }
        let others: Vec<String> = membership
            .nodes()
            .filter(|(id, _)| **id != node_id && **id != self.id && voters.contains(id))
            .map(|(_, n)| n.addr.clone())
            .collect();
        let set_election = async |enabled: bool| {
            for addr in &others {
                if let Ok(mut client) =
                    crate::client::AdminClient::connect_one(addr, self.tls.as_ref())
                {
                    let _ = client
                        .call_here(&AdminRequest::SetElection { enabled })
                        .await;
                }
            }
        };
        set_election(false).await;
        let config = self.raft.runtime_config();
        config.elect(false);
        config.heartbeat(false);
        let mut watch = self.raft.metrics();
        let moved = tokio::time::timeout(
            Duration::from_millis(self.raft.config().election_timeout_max * 10),
            watch.wait_for(|m| m.current_leader == Some(node_id)),
        )
        .await
        .is_ok_and(|r| r.is_ok());
        config.heartbeat(true);
        config.elect(true);
        set_election(true).await;
        if moved {
            Ok(json!({"leader": node_id, "changed": true}))
        } else {
            Err(AdminError::Unavailable(format!(
                "node {node_id} did not take over in time; node {} stays leader (is node {node_id} up and caught up?)",
                self.id
            )))
        }
    }

    async fn verify(&self) -> Result<Value, AdminError> {
        let (canonical_version, canonical_hash) = self
            .read(|s| {
                let m = s.manifest();
                (m.version, m.stub_hash.to_hex())
            })
            .await?;
        let mut members: Vec<FleetMember> = self.fleet.members();
        // Reports may have gone to any control-plane node: ask the others too.
        for (id, node) in self.membership().nodes() {
            if *id == self.id {
                continue;
            }
            match crate::client::AdminClient::connect_one(&node.addr, self.tls.as_ref()) {
                Ok(mut client) => match client.call_here(&AdminRequest::Fleet).await {
                    Ok(value) => {
                        if let Ok(more) = serde_json::from_value::<Vec<FleetMember>>(value) {
                            members.extend(more);
                        }
                    }
                    Err(e) => tracing::warn!(node = id, "fleet of node {id}: {e}"),
                },
                Err(e) => tracing::warn!(node = id, "fleet of node {id}: {e}"),
            }
        }
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
            .shared
            .lock()
            .history
            .iter()
            .map(|r| (r.version, r.stub_hash.clone()))
            .collect();
        let mut disagree = Vec::new();
        let nodes: Vec<Value> = latest
            .values()
            .map(|m| {
                let expected = history.get(&m.manifest_version);
                let verdict =
                    if m.manifest_version == canonical_version && m.stub_hash == canonical_hash {
                        "ok"
                    } else if expected.is_some_and(|h| *h == m.stub_hash) {
                        "behind"
                    } else {
                        "mismatch"
                    };
                if verdict != "ok" {
                    disagree.push(m.node.clone());
                }
                json!({
                    "node": m.node, "role": m.role, "manifest_version": m.manifest_version,
                    "stub_hash": m.stub_hash, "verdict": verdict, "age_ms": m.age_ms,
                    "reported_to": m.reported_to,
                })
            })
            .collect();
        Ok(json!({
            "manifest_version": canonical_version,
            "stub_hash": canonical_hash,
            "ok": disagree.is_empty(),
            "disagree": disagree,
            "nodes": nodes,
        }))
    }
}

/// A new API key and its id: `qk_<id>_<secret>`; the id is public, the secret is
/// 32 random bytes.
fn new_api_key() -> (String, String) {
    let mut rng = rand::rng();
    let id: String = (0..8)
        .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.random_range(0..36)]))
        .collect();
    let secret: [u8; 32] = rng.random();
    (id.clone(), format!("qk_{id}_{}", hex::encode(secret)))
}

fn tenant_public(t: &crate::tenant::Tenant) -> Value {
    let mut value = serde_json::to_value(t).unwrap_or_default();
    // Key ids and dates only: hashes stay inside the cluster.
    value["keys"] = t
        .keys
        .iter()
        .map(|(id, k)| json!({"key_id": id, "created_ms": k.created_ms}))
        .collect();
    value
}

fn upstream_summary(
    s: &ControlState,
    config: &UpstreamConfig,
    quarantine: bool,
    statuses: &BTreeMap<String, String>,
) -> Value {
    let transport = match &config.transport {
        quiver_upstream::Transport::Stdio { command, .. } => format!("stdio: {command}"),
        quiver_upstream::Transport::Http { url, .. } => format!("http: {url}"),
    };
    json!({
        "id": config.id,
        "transport": transport,
        "tools": s.catalogue.get(&config.id).map_or(0, |e| e.tools.len()),
        "pending": s.pending.get(&config.id).map_or(0, BTreeMap::len),
        "quarantine": quarantine,
        "tags": config.tags,
        "group": config.group,
        "state": statuses.get(&config.id).cloned().unwrap_or_else(|| "unknown".into()),
    })
}

fn manifest_summary(m: &Manifest) -> Value {
    json!({
        "version": m.version,
        "stub_hash": m.stub_hash.to_hex(),
        "servers": m.servers.iter().map(|s| json!({
            "id": s.id,
            "tools": m.tools.iter().filter(|t| t.id.server == s.id).count(),
            "stub_hash": s.stub_hash.to_hex(),
        })).collect::<Vec<_>>(),
        "tools": m.tools.len(),
    })
}

fn manifest_diff(a: &crate::state::ManifestRecord, b: &crate::state::ManifestRecord) -> Value {
    let mut added = Vec::new();
    let mut removed = Vec::new();
    let mut changed = Vec::new();
    let servers: BTreeSet<&String> = a.tools.keys().chain(b.tools.keys()).collect();
    let empty = BTreeMap::new();
    for server in servers {
        let old = a.tools.get(server).unwrap_or(&empty);
        let new = b.tools.get(server).unwrap_or(&empty);
        for (tool, hash) in new {
            match old.get(tool) {
                None => added.push(format!("{server}/{tool}")),
                Some(h) if h != hash => changed.push(format!("{server}/{tool}")),
                Some(_) => {}
            }
        }
        for tool in old.keys().filter(|t| !new.contains_key(*t)) {
            removed.push(format!("{server}/{tool}"));
        }
    }
    json!({
        "from": a.version, "to": b.version,
        "from_hash": a.stub_hash, "to_hash": b.stub_hash,
        "added": added, "removed": removed, "changed": changed,
    })
}
