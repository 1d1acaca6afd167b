//! The operator API a node serves (`ControlPlane.Admin`): membership,
//! upstreams, tenants and keys, manifests and `cluster verify`. Writes go
//! through Raft; reads are linearizable; every answer is a typed
//! [`AdminAnswer`]. Nothing here speaks gRPC except the relays to peers
//! (leader transfer, fleet reports).

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    sync::Arc,
    time::Duration,
};

use openraft::ChangeMembers;
use quiver_upstream::{UpstreamConfig, UpstreamState};
use rand::RngExt as _;

use crate::{
    admin::{
        AdminAnswer, AdminError, AdminRequest, ClusterInitialized, ClusterStatus, Committed,
        ElectionSwitch, FleetMember, FleetVerification, IssuedKey, LeaderTransfer, LearnerAdded,
        ManifestDiff, ManifestHash, ManifestShown, ManifestSummary, MemberReach, MemberRemoved,
        MemberRole, MemberStatus, NodeVerdict, PublicTenant, RefreshStarted, Rescreened,
        SecretList, SecretSummary, ToolSummary, UpstreamDetail, UpstreamSummary, UsageReport,
        Verdict, VoterPromoted,
    },
    client::AdminClient,
    cluster_key::{CLUSTER_KEY_ENV, CLUSTER_KEY_FILE_ENV, ClusterKey, MAX_SECRET_BYTES},
    command::Command,
    discovery::Discovery,
    error_chain::with_causes,
    fleet::FleetRegistry,
    outcome::{CommandResult, Refusal, RefusalCode},
    raft::{Node, NodeId, network::TlsMaterial},
    replica::Replica,
    state::ControlState,
    tenant::hash_key,
};

mod cluster;

/// How long `cluster status` and `cluster verify` wait for another member's
/// fleet reports before counting it down.
const MEMBER_ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// Serves operator requests on one node.
pub struct Operator {
    replica: Replica,
    fleet: Arc<FleetRegistry>,
    discovery: Arc<Discovery>,
    tls: Option<TlsMaterial>,
    /// Seals tenant secrets (none: `secret set` is refused with the fix).
    cluster_key: Option<Arc<ClusterKey>>,
    /// Tenants' OAuth grants of upstreams.
    grants: crate::grants::GrantDesk,
    /// The most keys a tenant may hold (stamped into each key's entry).
    max_keys_per_tenant: u32,
}

impl Operator {
    /// An operator over this node's replica, fleet registry and discovery;
    /// `tls` is used to reach the other nodes, `cluster_key` to seal tenant
    /// secrets; a tenant holds at most `max_keys_per_tenant` keys.
    pub fn new(
        replica: Replica,
        fleet: Arc<FleetRegistry>,
        discovery: Arc<Discovery>,
        tls: Option<TlsMaterial>,
        cluster_key: Option<Arc<ClusterKey>>,
        max_keys_per_tenant: u32,
    ) -> Operator {
        Operator {
            max_keys_per_tenant,
            grants: crate::grants::GrantDesk::new(replica.clone(), cluster_key.clone()),
            replica,
            fleet,
            discovery,
            tls,
            cluster_key,
        }
    }

    /// Renews the OAuth access tokens about to expire (when leading).
    pub(crate) async fn renew_due_grants(&self) {
        self.grants.renew_due().await;
    }

    /// A backup of the replicated state as this node (the leader, after a
    /// linearizable read) holds it: the bytes of a backup file.
    pub async fn backup(&self) -> Result<Vec<u8>, AdminError> {
        let replica = &self.replica;
        // `read` holds the state lock, under which `apply` also moves the
        // last applied id: the two agree.
        let (state, applied) = replica
            .read(|state| (state.clone(), replica.shared().last_applied()))
            .await?;
        let (index, term) = applied.map_or((0, 0), |id| (id.index, id.leader_id.term));
        let leader = replica.id();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        tokio::task::spawn_blocking(move || crate::backup::encode(&state, index, term, leader, now))
            .await
            .map_err(|e| AdminError::Unavailable(format!("the backup task failed: {e}")))?
            .map_err(|e| AdminError::Unavailable(e.to_string()))
    }

    /// Serves one operator request.
    pub async fn serve(&self, request: AdminRequest) -> Result<AdminAnswer, AdminError> {
        let r = &self.replica;
        Ok(match request {
            AdminRequest::ClusterInit => match r.bootstrap().await {
                Ok(true) => AdminAnswer::ClusterInit(ClusterInitialized {
                    initialized: true,
                    node: r.id(),
                }),
                Ok(false) => {
                    return Err(AdminError::Refused {
                        code: RefusalCode::AlreadyExists,
                        message: format!("node {} already belongs to a cluster", r.id()),
                    });
                }
                Err(e) => return Err(AdminError::Unavailable(with_causes(&e))),
            },
            AdminRequest::ClusterStatus => AdminAnswer::ClusterStatus(self.cluster_status().await?),
            AdminRequest::AddLearner { node_id, addr } => {
                if addr.parse::<SocketAddr>().is_err() && !addr.contains(':') {
                    return Err(AdminError::Invalid(format!(
                        "`{addr}` is not a host:port address"
                    )));
                }
                let change = r
                    .raft()
                    .add_learner(node_id, Node::new(addr), true)
                    .await
                    .map_err(|e| r.write_error(e))?;
                AdminAnswer::AddLearner(LearnerAdded {
                    added: node_id,
                    log_index: change.log_id.index,
                })
            }
            AdminRequest::Promote { node_id } => {
                self.ensure_member(node_id)?;
                let change = r
                    .raft()
                    .change_membership(
                        ChangeMembers::AddVoterIds(BTreeSet::from([node_id])),
                        false,
                    )
                    .await
                    .map_err(|e| r.write_error(e))?;
                AdminAnswer::Promote(VoterPromoted {
                    promoted: node_id,
                    log_index: change.log_id.index,
                })
            }
            AdminRequest::Remove { node_id } => {
                AdminAnswer::Remove(self.remove_member(node_id).await?)
            }
            AdminRequest::TransferLeader { node_id } => {
                AdminAnswer::TransferLeader(self.transfer_leader(node_id).await?)
            }
            AdminRequest::SetElection { enabled } => {
                r.raft().runtime_config().elect(enabled);
                AdminAnswer::SetElection(ElectionSwitch {
                    node: r.id(),
                    elect: enabled,
                })
            }
            AdminRequest::Fleet => AdminAnswer::Fleet(self.fleet.members()),
            AdminRequest::Verify => AdminAnswer::Verify(self.verify().await?),
            AdminRequest::UpstreamAdd {
                upstream,
                quarantine,
                replace,
            } => AdminAnswer::UpstreamAdd(
                r.write(
                    "ctl",
                    Command::PutUpstream {
                        upstream,
                        quarantine,
                        replace,
                    },
                )
                .await?,
            ),
            AdminRequest::UpstreamList => {
                let statuses = self.discovery.statuses();
                AdminAnswer::UpstreamList(
                    r.read(|s| {
                        s.upstreams
                            .values()
                            .map(|u| upstream_summary(s, &u.config, u.quarantine, &statuses))
                            .collect()
                    })
                    .await?,
                )
            }
            AdminRequest::UpstreamShow { id } => {
                let statuses = self.discovery.statuses();
                let detail = r
                    .read(|s| upstream_detail(s, &id, &statuses))
                    .await?
                    .ok_or_else(|| self.unknown_upstream(&id))?;
                AdminAnswer::UpstreamShow(Box::new(detail))
            }
            AdminRequest::UpstreamRemove { id } => {
                AdminAnswer::UpstreamRemove(r.write("ctl", Command::RemoveUpstream { id }).await?)
            }
            AdminRequest::UpstreamRefresh { id } => {
                // Discovery runs on the leader: check leadership first.
                r.read(|_| ()).await?;
                if let Some(id) = &id
                    && !r.shared().lock().upstreams.contains_key(id)
                {
                    return Err(self.unknown_upstream(id));
                }
                self.discovery
                    .refresh(id.as_deref())
                    .map_err(|e| AdminError::Invalid(e.to_string()))?;
                AdminAnswer::UpstreamRefresh(RefreshStarted {
                    refreshing: id.unwrap_or_else(|| "all".into()),
                })
            }
            AdminRequest::UpstreamRescreen { id } => {
                // What the state holds, read on the leader; screened off the
                // state's lock.
                let (entries, catalogue) = r
                    .read(|s| crate::rescreen::reported(s, id.as_deref()))
                    .await?;
                if let Some(id) = &id
                    && entries.is_empty()
                    && !r.shared().lock().upstreams.contains_key(id)
                {
                    return Err(self.unknown_upstream(id));
                }
                let upstreams = u32::try_from(entries.len()).unwrap_or(u32::MAX);
                let changed = tokio::task::spawn_blocking(move || {
                    crate::rescreen::rescreened(entries, &catalogue)
                })
                .await
                .map_err(|e| AdminError::Invalid(format!("rescreening failed: {e}")))?;
                let names = changed.iter().map(|e| e.id.clone()).collect();
                if !changed.is_empty() {
                    r.write("rescreen", Command::RecordDiscovery { entries: changed })
                        .await?;
                }
                AdminAnswer::UpstreamRescreen(Rescreened {
                    upstreams,
                    changed: names,
                })
            }
            AdminRequest::UpstreamDrift { id } => {
                AdminAnswer::UpstreamDrift(r.read(|s| crate::admin::drift_report(s, id.as_deref())).await?)
            }
            AdminRequest::UpstreamFindings { id } => AdminAnswer::UpstreamFindings(
                r.read(|s| crate::admin::findings_report(s, id.as_deref())).await?,
            ),
            AdminRequest::UpstreamApprove { id, tool } => {
                // A named tool that screening holds back is approved as it is;
                // anything else is a quarantined schema change.
                let held = tool.as_ref().is_some_and(|t| {
                    r.shared()
                        .lock()
                        .held
                        .get(&id)
                        .is_some_and(|h| h.contains_key(t))
                });
                let command = match tool {
                    Some(tool) if held => Command::ApproveFindings { upstream: id, tool },
                    tool => Command::ApproveDrift { upstream: id, tool },
                };
                AdminAnswer::UpstreamApprove(r.write("ctl", command).await?)
            }
            AdminRequest::TenantCreate { id, patch } => AdminAnswer::TenantCreate(
                r.write("ctl", Command::CreateTenant { id, patch }).await?,
            ),
            AdminRequest::TenantList => AdminAnswer::TenantList(
                r.read(|s| s.tenants.values().map(PublicTenant::from).collect())
                    .await?,
            ),
            AdminRequest::TenantShow { id } => AdminAnswer::TenantShow(
                r.read(|s| s.tenants.get(&id).map(PublicTenant::from))
                    .await?
                    .ok_or_else(|| AdminError::from(r.shared().lock().unknown_tenant(&id)))?,
            ),
            AdminRequest::TenantUpdate { id, patch } => AdminAnswer::TenantUpdate(
                r.write("ctl", Command::UpdateTenant { id, patch }).await?,
            ),
            AdminRequest::TenantDelete { id } => {
                AdminAnswer::TenantDelete(r.write("ctl", Command::DeleteTenant { id }).await?)
            }
            AdminRequest::KeyIssue { tenant, requester } => {
                let (key_id, key) = new_api_key();
                let sha256 = hash_key(&key);
                r.write(
                    &requester.actor(&tenant),
                    Command::IssueKey {
                        tenant: tenant.clone(),
                        key_id: key_id.clone(),
                        sha256,
                        limit: Some(self.max_keys_per_tenant),
                    },
                )
                .await?;
                AdminAnswer::KeyIssue(IssuedKey {
                    tenant,
                    key_id,
                    key,
                })
            }
            AdminRequest::KeyRevoke {
                tenant,
                key_id,
                requester,
            } => AdminAnswer::KeyRevoke(
                r.write(&requester.actor(&tenant), Command::RevokeKey { tenant, key_id })
                    .await?,
            ),
            AdminRequest::TenantUsage { id } => AdminAnswer::TenantUsage(
                r.read(|s| {
                    let tenant = s.tenants.get(&id)?;
                    let usage = s.usage.get(&id).cloned().unwrap_or_default();
                    let stash = usage.stash_totals(crate::command::now_ms());
                    // Without its own quota, the tenant's is the executors'
                    // default, known here only once one of them reported.
                    let reported = stash.executors > 0;
                    Some(UsageReport {
                        tenant: id.clone(),
                        budget: tenant.budget,
                        remaining: usage.remaining(tenant.budget),
                        leased: usage.leased,
                        spent: usage.spent,
                        calls: usage.calls,
                        updated_ms: usage.updated_ms,
                        stash_bytes: stash.bytes,
                        stash_keys: stash.keys,
                        stash_quota_bytes: tenant.stash_bytes.or(reported.then_some(stash.quota_bytes)),
                        stash_quota_keys: tenant.stash_keys.or(reported.then_some(stash.quota_keys)),
                        stash_executors: stash.executors,
                    })
                })
                .await?
                .ok_or_else(|| AdminError::from(r.shared().lock().unknown_tenant(&id)))?,
            ),
            AdminRequest::AuditAppend { records } => AdminAnswer::AuditAppend(
                r.write("executor", Command::AppendAudit { records }).await?,
            ),
            AdminRequest::Audit { query } => {
                AdminAnswer::Audit(r.read(|s| s.audit.query(&query)).await?)
            }
            AdminRequest::AuditRetention { set: Some(retention) } => {
                r.write("ctl", Command::SetAuditRetention { retention })
                    .await?;
                AdminAnswer::AuditRetention(retention)
            }
            AdminRequest::AuditRetention { set: None } => {
                AdminAnswer::AuditRetention(r.read(|s| s.audit.retention).await?)
            }
            AdminRequest::BudgetLease { lease } => {
                let actor = format!("executor {}", lease.node);
                let committed = r.write(&actor, Command::LeaseBudget { lease }).await?;
                match committed.result {
                    CommandResult::LeaseBudget(granted) => AdminAnswer::BudgetLease(granted),
                    other => {
                        return Err(AdminError::from(Refusal::invalid(format!(
                            "unexpected result of a budget lease: {other:?}"
                        ))));
                    }
                }
            }
            AdminRequest::SecretSet {
                tenant,
                name,
                value,
            } => AdminAnswer::SecretSet(self.set_secret(tenant, name, value).await?),
            AdminRequest::SecretList { tenant } => AdminAnswer::SecretList(
                r.read(|s| {
                    s.tenants.contains_key(&tenant).then(|| SecretList {
                        tenant: tenant.clone(),
                        secrets: s
                            .secrets
                            .get(&tenant)
                            .into_iter()
                            .flatten()
                            .map(|(name, secret)| SecretSummary {
                                name: name.clone(),
                                updated_ms: secret.updated_ms,
                            })
                            .collect(),
                    })
                })
                .await?
                .ok_or_else(|| AdminError::from(r.shared().lock().unknown_tenant(&tenant)))?,
            ),
            AdminRequest::UpstreamAuthorize {
                upstream,
                tenant,
                scopes,
            } => AdminAnswer::UpstreamAuthorize(
                self.grants.authorize(upstream, tenant, scopes).await?,
            ),
            AdminRequest::UpstreamAuthorized { url } => {
                AdminAnswer::UpstreamAuthorized(self.grants.authorized(url).await?)
            }
            AdminRequest::UpstreamDeauthorize { upstream, tenant } => {
                AdminAnswer::UpstreamDeauthorize(
                    r.write(
                        "ctl",
                        Command::DropOAuthGrant {
                            tenant,
                            upstream,
                            if_updated_ms: None,
                        },
                    )
                    .await?,
                )
            }
            AdminRequest::GrantRenew { upstream, tenant } => {
                AdminAnswer::GrantRenew(self.grants.renew(&upstream, &tenant, "executor").await?)
            }
            AdminRequest::GrantList { tenant } => AdminAnswer::GrantList(
                r.read(|s| crate::grants::grant_list(s, tenant.as_deref()))
                    .await?,
            ),
            AdminRequest::SecretDelete { tenant, name } => AdminAnswer::SecretDelete(
                r.write("ctl", Command::DeleteSecret { tenant, name })
                    .await?,
            ),
            AdminRequest::ManifestShow { version } => AdminAnswer::ManifestShow(
                r.read(|s| manifest_version(s, version))
                    .await?
                    .ok_or_else(|| {
                        AdminError::from(Refusal::not_found(
                            "that manifest version is not kept; `quiver ctl manifest show` gives the current one",
                        ))
                    })?,
            ),
            AdminRequest::ManifestDiff { from, to } => {
                AdminAnswer::ManifestDiff(r.read(|s| manifest_diff(s, from, to)).await??)
            }
            AdminRequest::ManifestHash => AdminAnswer::ManifestHash(
                r.read(|s| {
                    let m = s.manifest();
                    ManifestHash {
                        version: m.version,
                        stub_hash: m.stub_hash.to_hex(),
                        tools: m.tools.len(),
                    }
                })
                .await?,
            ),
        })
    }

    /// Seals `value` with the cluster key and proposes only the sealed form.
    /// Only the leader seals (a follower answers "not the leader", so `quiver
    /// ctl` goes there); no error here ever holds the value.
    async fn set_secret(
        &self,
        tenant: String,
        name: String,
        value: quiver_upstream::SecretValue,
    ) -> Result<Committed, AdminError> {
        let r = &self.replica;
        if r.raft().metrics().borrow().current_leader != Some(r.id()) {
            return Err(r.not_leader());
        }
        let Some(key) = &self.cluster_key else {
            return Err(AdminError::Refused {
                code: RefusalCode::Unsupported,
                message: format!(
                    "node {} holds no cluster key, so it cannot seal tenant secrets; start every control-plane node and executor with the same key in {CLUSTER_KEY_ENV} or a file named by --cluster-key-file / {CLUSTER_KEY_FILE_ENV} (32 random bytes, base64: `head -c 32 /dev/urandom | base64`)",
                    r.id()
                ),
            });
        };
        if !quiver_upstream::valid_secret_name(&name) {
            return Err(AdminError::Invalid(format!(
                "secret name `{name}` must be 1-64 characters of a-z, A-Z, 0-9, _ and -"
            )));
        }
        if value.is_empty() || value.len() > MAX_SECRET_BYTES {
            return Err(AdminError::Invalid(format!(
                "a secret's value must be 1 to {MAX_SECRET_BYTES} bytes; this one has {}",
                value.len()
            )));
        }
        let sealed = key
            .seal(&tenant, &name, &value)
            .map_err(|e| AdminError::Invalid(format!("cannot seal secret `{name}`: {e}")))?;
        drop(value);
        r.write(
            "ctl",
            Command::SetSecret {
                tenant,
                name,
                sealed,
            },
        )
        .await
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

fn transport_of(config: &UpstreamConfig) -> String {
    match &config.transport {
        quiver_upstream::Transport::Stdio { command, .. } => format!("stdio: {command}"),
        quiver_upstream::Transport::Http { url, .. } => format!("http: {url}"),
    }
}

fn connection_state(statuses: &BTreeMap<String, UpstreamState>, id: &str) -> Option<UpstreamState> {
    statuses.get(id).copied()
}

fn upstream_summary(
    s: &ControlState,
    config: &UpstreamConfig,
    quarantine: bool,
    statuses: &BTreeMap<String, UpstreamState>,
) -> UpstreamSummary {
    UpstreamSummary {
        id: config.id.clone(),
        transport: transport_of(config),
        tools: s.catalogue.get(&config.id).map_or(0, |e| e.tools.len()),
        pending: s.pending.get(&config.id).map_or(0, BTreeMap::len),
        quarantine,
        tags: config.tags.clone(),
        group: config.group.clone(),
        state: connection_state(statuses, &config.id),
    }
}

fn upstream_detail(
    s: &ControlState,
    id: &str,
    statuses: &BTreeMap<String, UpstreamState>,
) -> Option<UpstreamDetail> {
    let record = s.upstreams.get(id)?;
    let config = &record.config;
    Some(UpstreamDetail {
        id: config.id.clone(),
        transport: transport_of(config),
        tools: s
            .catalogue
            .get(id)
            .map(|e| {
                e.tools
                    .iter()
                    .map(|t| ToolSummary {
                        name: t.name.clone(),
                        description: t.description.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        pending: s.pending.get(id).cloned(),
        quarantine: record.quarantine,
        tags: config.tags.clone(),
        group: config.group.clone(),
        state: connection_state(statuses, id),
        config: config.clone(),
    })
}

/// The current manifest (`version` absent or current), or a kept version's record.
fn manifest_version(s: &mut ControlState, version: Option<u64>) -> Option<ManifestShown> {
    let current = s.manifest();
    match version {
        None => Some(ManifestShown::Current(ManifestSummary::of(&current))),
        Some(v) if v == current.version => {
            Some(ManifestShown::Current(ManifestSummary::of(&current)))
        }
        Some(v) => s
            .history
            .iter()
            .find(|r| r.version == v)
            .cloned()
            .map(ManifestShown::Kept),
    }
}

fn manifest_diff(s: &ControlState, from: u64, to: u64) -> Result<ManifestDiff, AdminError> {
    let find = |v: u64| s.history.iter().find(|r| r.version == v);
    let oldest = s.history.front().map_or(0, |r| r.version);
    let (Some(a), Some(b)) = (find(from), find(to)) else {
        return Err(Refusal::not_found(format!(
            "versions {from} and {to} must both be kept; kept versions are {oldest}..={}",
            s.manifest_version()
        ))
        .into());
    };
    Ok(ManifestDiff::between(a, b))
}
