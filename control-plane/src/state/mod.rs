//! The replicated application state and the pure function that applies a
//! command to it. Nothing here reads a clock, a disk or the network: every node
//! that applies the same log reaches byte-identical state, manifest and hashes.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
};

use quiver_proto::upstream_config::UpstreamConfig;
use quiver_proto::{
    Manifest, canonical::to_canonical_json, hash::StubHash, manifest::ServerEntry, tool::ToolDef,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    audit_log::AuditLog,
    command::{COMMAND_FORMAT, Command, Envelope},
    manifest_store::same_content,
    outcome::{
        CommandResult, DiscoveryRecord, DriftApproved, KeyChanged, Outcome, Refusal, RefusalCode,
        TenantDeleted, UpstreamPut, UpstreamRemoved,
    },
    tenant::{ApiKey, Tenant, TenantPatch, valid_id},
    usage::{LeaseGranted, LeaseRequest, TenantUsage},
};

mod records;
mod screening;
mod tenant_secrets;

pub use crate::command::OAuthGrantRecord;
pub use records::{
    Event, EventKind, HeldTool, ManifestRecord, PendingDrift, SealedSecret, UpstreamRecord,
};

/// Events of each kind (drift, screening, admin) kept in the event log;
/// older ones of that kind are dropped (entries of format 1 kept 1,000
/// events of all kinds together).
pub const EVENT_LOG_LIMIT: usize = 1000;
/// A restored cluster's manifest version is the next multiple of this
/// (see [`ControlState::begin_after_restore`]).
pub const RESTORE_VERSION_STEP: u64 = 1_000_000_000;
/// Manifest versions kept for `manifest show V` and `manifest diff`.
pub const MANIFEST_HISTORY_LIMIT: usize = 64;

/// Everything the control plane replicates (the snapshot payload).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ControlState {
    /// Registered upstreams by id.
    pub upstreams: BTreeMap<String, UpstreamRecord>,
    /// Last discovered tools per upstream (with quarantined changes held back).
    pub catalogue: BTreeMap<String, ServerEntry>,
    /// Quarantined changes: upstream → tool → proposed definition.
    pub pending: BTreeMap<String, BTreeMap<String, PendingDrift>>,
    /// Tools screening held back: upstream → tool → definition and findings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<String, BTreeMap<String, HeldTool>>,
    /// Definitions an operator let through despite their findings:
    /// upstream → tool → hex hash of the approved definition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approved: BTreeMap<String, BTreeMap<String, String>>,
    /// Tenants by id.
    pub tenants: BTreeMap<String, Tenant>,
    /// Budget usage by tenant (see [`crate::usage`]).
    #[serde(default)]
    pub usage: BTreeMap<String, TenantUsage>,
    /// The audit log (see [`crate::audit_log`]).
    #[serde(default)]
    pub audit: AuditLog,
    /// Tenants' upstream credentials, sealed: tenant → name → secret.
    #[serde(default)]
    pub secrets: BTreeMap<String, BTreeMap<String, SealedSecret>>,
    /// Tenants' OAuth grants for upstreams, sealed: tenant → upstream →
    /// grant. Never sent to other nodes than control-plane ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub oauth_grants: BTreeMap<String, BTreeMap<String, OAuthGrantRecord>>,
    /// The drift and administrative event log, oldest first.
    pub events: VecDeque<Event>,
    /// Id of the next event.
    pub next_event_id: u64,
    /// Recent manifest versions, oldest first; the last is the current one.
    pub history: VecDeque<ManifestRecord>,
    /// The built current manifest (derived from `catalogue`, not serialised).
    #[serde(skip)]
    manifest: Option<Arc<Manifest>>,
    /// The format of the entry being applied (not serialised): what an
    /// entry means depends on it.
    #[serde(skip)]
    applying_format: u32,
}

impl ControlState {
    /// The current manifest (version 0 and empty before any discovery).
    pub fn manifest(&mut self) -> Arc<Manifest> {
        if self.manifest.is_none() {
            self.manifest = Some(Arc::new(self.rebuild(self.manifest_version())));
        }
        self.manifest
            .clone()
            .unwrap_or_else(|| Arc::new(Manifest::empty()))
    }

    /// The current manifest version.
    pub fn manifest_version(&self) -> u64 {
        self.history.back().map_or(0, |r| r.version)
    }

    fn rebuild(&self, version: u64) -> Manifest {
        Manifest::build(version, self.catalogue.values().cloned().collect())
    }

    /// Applies one log entry. Refusals leave the state untouched.
    pub fn apply(&mut self, entry: &Envelope) -> Outcome {
        if entry.format > COMMAND_FORMAT {
            return Refusal::new(
                RefusalCode::Unsupported,
                format!(
                    "log entry format {} is newer than this build understands ({COMMAND_FORMAT}); upgrade this node",
                    entry.format
                ),
            )
            .into();
        }
        self.applying_format = entry.format;
        match self.apply_command(&entry.command, entry.at_ms, &entry.actor) {
            Ok((result, manifest_changed)) => {
                // Only the registry and the catalogue shape the manifest; a
                // tenant write or an unchanged re-listing rebuilds nothing.
                if manifest_changed {
                    self.publish_manifest(entry.at_ms);
                }
                Outcome::Applied {
                    result,
                    manifest_version: self.manifest_version(),
                }
            }
            Err(refusal) => refusal.into(),
        }
    }

    /// Applies `command`; says whether the manifest may have changed.
    fn apply_command(
        &mut self,
        command: &Command,
        at: u64,
        actor: &str,
    ) -> Result<(CommandResult, bool), Refusal> {
        Ok(match command {
            Command::PutUpstream {
                upstream,
                quarantine,
                replace,
            } => {
                let put = self.put_upstream(upstream, *quarantine, *replace, at, actor)?;
                (CommandResult::PutUpstream(put), true)
            }
            Command::RemoveUpstream { id } => {
                let removed = self.remove_upstream(id, at, actor)?;
                (CommandResult::RemoveUpstream(removed), true)
            }
            Command::RecordDiscovery { entries } => {
                let mut changed = false;
                let records = entries
                    .iter()
                    .map(|entry| match self.record_discovery(entry, at, actor) {
                        Ok(entry_changed) => {
                            changed |= entry_changed;
                            DiscoveryRecord::Recorded {
                                upstream: entry.id.clone(),
                                changed: entry_changed,
                            }
                        }
                        Err(refusal) => DiscoveryRecord::Skipped {
                            upstream: entry.id.clone(),
                            reason: refusal.message,
                        },
                    })
                    .collect();
                (CommandResult::RecordDiscovery(records), changed)
            }
            Command::ApproveFindings { upstream, tool } => (
                CommandResult::ApproveDrift(self.approve_findings(upstream, tool, at, actor)?),
                true,
            ),
            Command::ApproveDrift { upstream, tool } => {
                let approved = self.approve_drift(upstream, tool.as_deref(), at, actor)?;
                (CommandResult::ApproveDrift(approved), true)
            }
            Command::CreateTenant { id, patch } => {
                let tenant = self.create_tenant(id, patch, at, actor)?;
                (CommandResult::CreateTenant(Box::new(tenant)), false)
            }
            Command::UpdateTenant { id, patch } => {
                let tenant = self.update_tenant(id, patch, at, actor)?;
                (CommandResult::UpdateTenant(Box::new(tenant)), false)
            }
            Command::DeleteTenant { id } => {
                let deleted = self.delete_tenant(id, at, actor)?;
                (CommandResult::DeleteTenant(deleted), false)
            }
            Command::IssueKey {
                tenant,
                key_id,
                sha256,
                limit,
            } => {
                let issued = self.issue_key(tenant, key_id, sha256, *limit, at, actor)?;
                (CommandResult::IssueKey(issued), false)
            }
            Command::RevokeKey { tenant, key_id } => {
                let revoked = self.revoke_key(tenant, key_id, at, actor)?;
                (CommandResult::RevokeKey(revoked), false)
            }
            Command::AppendAudit { records } => (
                CommandResult::AppendAudit(self.audit.append(records.clone(), at)),
                false,
            ),
            Command::SetAuditRetention { retention } => {
                if retention.max_records == 0 || retention.max_age_days == 0 {
                    return Err(Refusal::invalid(
                        "audit retention needs at least one day and one record",
                    ));
                }
                self.audit.set_retention(*retention, at);
                (CommandResult::SetAuditRetention(*retention), false)
            }
            Command::LeaseBudget { lease } => (
                CommandResult::LeaseBudget(self.lease_budget(lease, at)?),
                false,
            ),
            Command::SetSecret {
                tenant,
                name,
                sealed,
            } => (
                CommandResult::SetSecret(self.set_secret(tenant, name, sealed, at, actor)?),
                false,
            ),
            Command::DeleteSecret { tenant, name } => (
                CommandResult::DeleteSecret(self.delete_secret(tenant, name, at, actor)?),
                false,
            ),
            Command::PutOAuthGrant { grant } => (
                CommandResult::PutOAuthGrant(self.put_oauth_grant(grant, at, actor)?),
                false,
            ),
            Command::DropOAuthGrant {
                tenant,
                upstream,
                if_updated_ms,
            } => (
                CommandResult::DropOAuthGrant(self.drop_oauth_grant(
                    (tenant, upstream),
                    *if_updated_ms,
                    at,
                    actor,
                )?),
                false,
            ),
        })
    }

    fn put_upstream(
        &mut self,
        config: &UpstreamConfig,
        quarantine: bool,
        replace: bool,
        at: u64,
        actor: &str,
    ) -> Result<UpstreamPut, Refusal> {
        if let Err(e) = config.validate() {
            return Err(Refusal::invalid(e.to_string()));
        }
        let id = config.id.clone();
        let existed = self.upstreams.contains_key(&id);
        // Tokens were granted for that URL by that server to that client:
        // another URL or other OAuth settings void them.
        let reauthorize = self.upstreams.get(&id).is_some_and(|before| {
            before.config.transport != config.transport || before.config.oauth != config.oauth
        });
        if existed && !replace {
            return Err(Refusal::already_exists(format!(
                "upstream `{id}` already exists; remove it first or pass --replace"
            )));
        }
        self.upstreams.insert(
            id.clone(),
            UpstreamRecord {
                config: config.clone(),
                quarantine,
                updated_ms: at,
            },
        );
        // Settings that shape the manifest take effect before the next discovery.
        if let Some(entry) = self.catalogue.get_mut(&id) {
            entry.namespace = config.namespace().to_string();
            entry.tags = config.tags.clone();
            entry.group = config.group.clone();
            entry.validation = config.validation;
            if let Some(d) = &config.description {
                entry.description = d.clone();
            }
        }
        if config.oauth_grant_secret().is_none() || reauthorize {
            // Settings that no longer take a person's grant: the grants go.
            self.drop_grants_of(&id);
        }
        let verb = if existed { "replaced" } else { "added" };
        self.log_admin(at, actor, Some(&id), format!("upstream {verb}"));
        Ok(UpstreamPut {
            id,
            replaced: existed,
        })
    }

    fn remove_upstream(
        &mut self,
        id: &str,
        at: u64,
        actor: &str,
    ) -> Result<UpstreamRemoved, Refusal> {
        if self.upstreams.remove(id).is_none() {
            return Err(self.unknown_upstream(id));
        }
        self.catalogue.remove(id);
        self.pending.remove(id);
        self.held.remove(id);
        self.approved.remove(id);
        self.drop_grants_of(id);
        self.log_admin(at, actor, Some(id), "upstream removed".into());
        Ok(UpstreamRemoved { id: id.to_string() })
    }

    /// Records one upstream's discovery; says whether its catalogue entry changed.
    fn record_discovery(
        &mut self,
        entry: &ServerEntry,
        at: u64,
        actor: &str,
    ) -> Result<bool, Refusal> {
        let Some(record) = self.upstreams.get(&entry.id) else {
            // Removed while discovery was in flight: nothing to record.
            return Err(self.unknown_upstream(&entry.id));
        };
        let quarantine = record.quarantine;
        let hold = record.config.hold_findings;
        let mut incoming = entry.clone();
        let newly_held = self.hold_back(&mut incoming, hold, at);
        let Some(record) = self.upstreams.get(&entry.id) else {
            return Err(self.unknown_upstream(&entry.id));
        };
        let previous = self.catalogue.get(&entry.id);
        let old: BTreeMap<&str, &ToolDef> = previous
            .map(|p| p.tools.iter().map(|t| (t.name.as_str(), t)).collect())
            .unwrap_or_default();
        let mut events = Vec::new();
        let mut pending = self.pending.remove(&entry.id).unwrap_or_default();
        let mut held = BTreeMap::new();
        if previous.is_some() {
            for tool in &mut incoming.tools {
                let Some(before) = old.get(tool.name.as_str()) else {
                    events.push((tool.name.clone(), "tool appeared".to_string()));
                    continue;
                };
                if definition_hash(before) == definition_hash(tool) {
                    continue;
                }
                if quarantine {
                    let unchanged_pending = pending
                        .get(&tool.name)
                        .is_some_and(|p| definition_hash(&p.proposed) == definition_hash(tool));
                    let seen_ms = pending.get(&tool.name).map_or(at, |p| p.seen_ms);
                    if !unchanged_pending {
                        events.push((
                            tool.name.clone(),
                            "schema changed; quarantined until approved".to_string(),
                        ));
                    }
                    held.insert(
                        tool.name.clone(),
                        PendingDrift {
                            proposed: tool.clone(),
                            seen_ms,
                        },
                    );
                    *tool = (*before).clone();
                } else {
                    events.push((tool.name.clone(), "schema changed".to_string()));
                }
            }
            let now: std::collections::BTreeSet<&str> =
                entry.tools.iter().map(|t| t.name.as_str()).collect();
            for name in old.keys().filter(|n| !now.contains(*n)) {
                events.push(((*name).to_string(), "tool disappeared".to_string()));
            }
        }
        pending.clear();
        pending.extend(held);
        if !pending.is_empty() {
            self.pending.insert(entry.id.clone(), pending);
        }
        // The registry's settings win over what the node reported.
        let config = &record.config;
        incoming.namespace = config.namespace().to_string();
        incoming.tags = config.tags.clone();
        incoming.group = config.group.clone();
        incoming.validation = config.validation;
        if let Some(d) = &config.description {
            incoming.description = d.clone();
        }
        let changed = previous != Some(&incoming);
        self.catalogue.insert(entry.id.clone(), incoming);
        for (tool, message) in events {
            self.log_event(
                at,
                EventKind::Drift,
                actor,
                Some(&entry.id),
                Some(&tool),
                message,
            );
        }
        for (tool, worst) in newly_held {
            self.log_event(
                at,
                EventKind::Screening,
                actor,
                Some(&entry.id),
                Some(&tool),
                format!(
                    "held back: {} ({}) in {}: {}",
                    worst.rule, worst.severity, worst.field, worst.excerpt
                ),
            );
        }
        Ok(changed)
    }

    fn approve_drift(
        &mut self,
        upstream: &str,
        tool: Option<&str>,
        at: u64,
        actor: &str,
    ) -> Result<DriftApproved, Refusal> {
        if !self.upstreams.contains_key(upstream) {
            return Err(self.unknown_upstream(upstream));
        }
        let Some(pending) = self.pending.get_mut(upstream) else {
            return Err(Refusal::not_found(format!(
                "upstream `{upstream}` has no quarantined changes"
            )));
        };
        let approved: Vec<PendingDrift> = match tool {
            Some(name) => match pending.remove(name) {
                Some(p) => vec![p],
                None => {
                    let known: Vec<&str> = pending.keys().map(String::as_str).collect();
                    return Err(Refusal::not_found(format!(
                        "tool `{name}` of `{upstream}` has no quarantined change; pending: {}",
                        known.join(", ")
                    )));
                }
            },
            None => std::mem::take(pending).into_values().collect(),
        };
        if pending.is_empty() {
            self.pending.remove(upstream);
        }
        let mut names = Vec::new();
        if let Some(entry) = self.catalogue.get_mut(upstream) {
            for change in approved {
                if let Some(slot) = entry
                    .tools
                    .iter_mut()
                    .find(|t| t.name == change.proposed.name)
                {
                    names.push(change.proposed.name.clone());
                    *slot = change.proposed;
                }
            }
        }
        for name in &names {
            self.log_event(
                at,
                EventKind::Admin,
                actor,
                Some(upstream),
                Some(name),
                "schema change approved".into(),
            );
        }
        Ok(DriftApproved {
            upstream: upstream.to_string(),
            approved: names,
            findings: BTreeMap::new(),
        })
    }

    fn create_tenant(
        &mut self,
        id: &str,
        patch: &TenantPatch,
        at: u64,
        actor: &str,
    ) -> Result<Tenant, Refusal> {
        if !valid_id(id) {
            return Err(Refusal::invalid(format!(
                "tenant id `{id}` must be 1-64 characters of a-z, A-Z, 0-9, _ and -"
            )));
        }
        patch
            .validate()
            .map_err(|e| Refusal::invalid(e.to_string()))?;
        if self.tenants.contains_key(id) {
            return Err(Refusal::already_exists(format!(
                "tenant `{id}` already exists; use `tenant update`"
            )));
        }
        let tenant = patch.create(id, at);
        self.tenants.insert(id.to_string(), tenant.clone());
        self.log_admin(at, actor, None, format!("tenant `{id}` created"));
        Ok(tenant)
    }

    fn update_tenant(
        &mut self,
        id: &str,
        patch: &TenantPatch,
        at: u64,
        actor: &str,
    ) -> Result<Tenant, Refusal> {
        patch
            .validate()
            .map_err(|e| Refusal::invalid(e.to_string()))?;
        let Some(tenant) = self.tenants.get_mut(id) else {
            return Err(self.unknown_tenant(id));
        };
        patch.apply_to(tenant, at);
        let result = tenant.clone();
        self.log_admin(at, actor, None, format!("tenant `{id}` updated"));
        Ok(result)
    }

    fn delete_tenant(&mut self, id: &str, at: u64, actor: &str) -> Result<TenantDeleted, Refusal> {
        if self.tenants.remove(id).is_none() {
            return Err(self.unknown_tenant(id));
        }
        self.usage.remove(id);
        // Its credentials go with it: a tenant created later under the same
        // id must not inherit them.
        self.secrets.remove(id);
        self.oauth_grants.remove(id);
        self.log_admin(at, actor, None, format!("tenant `{id}` deleted"));
        Ok(TenantDeleted { id: id.to_string() })
    }

    fn lease_budget(&mut self, lease: &LeaseRequest, at: u64) -> Result<LeaseGranted, Refusal> {
        if !lease.is_valid() {
            return Err(Refusal::invalid(
                "lease amounts must be finite and not negative",
            ));
        }
        let Some(tenant) = self.tenants.get(&lease.tenant) else {
            return Err(self.unknown_tenant(&lease.tenant));
        };
        let budget = tenant.budget;
        let usage = self.usage.entry(lease.tenant.clone()).or_default();
        let granted = usage.lease(lease, budget, at);
        Ok(LeaseGranted {
            tenant: lease.tenant.clone(),
            granted,
            budget,
            usage: usage.clone(),
        })
    }

    fn issue_key(
        &mut self,
        tenant: &str,
        key_id: &str,
        sha256: &str,
        limit: Option<u32>,
        at: u64,
        actor: &str,
    ) -> Result<KeyChanged, Refusal> {
        let valid_hash = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid_hash || !valid_id(key_id) {
            return Err(Refusal::invalid(
                "a key needs an id of a-z, A-Z, 0-9, _ and - and a hex SHA-256",
            ));
        }
        let Some(record) = self.tenants.get_mut(tenant) else {
            return Err(self.unknown_tenant(tenant));
        };
        if record.keys.contains_key(key_id) {
            return Err(Refusal::already_exists(format!(
                "tenant `{tenant}` already has a key `{key_id}`"
            )));
        }
        if let Some(limit) = limit
            && record.keys.len() >= limit as usize
        {
            return Err(Refusal {
                code: RefusalCode::LimitReached,
                message: format!(
                    "tenant `{tenant}` holds {} keys, its limit; revoke one first (`quiver ctl key list {tenant}`, `quiver ctl key revoke {tenant} KEY_ID`), or raise `[control_plane] max_keys_per_tenant`",
                    record.keys.len()
                ),
            });
        }
        record.keys.insert(
            key_id.to_string(),
            ApiKey {
                sha256: sha256.to_ascii_lowercase(),
                created_ms: at,
            },
        );
        record.updated_ms = at;
        self.log_admin(
            at,
            actor,
            None,
            format!("key `{key_id}` issued to tenant `{tenant}`"),
        );
        Ok(KeyChanged {
            tenant: tenant.to_string(),
            key_id: key_id.to_string(),
        })
    }

    fn revoke_key(
        &mut self,
        tenant: &str,
        key_id: &str,
        at: u64,
        actor: &str,
    ) -> Result<KeyChanged, Refusal> {
        let Some(record) = self.tenants.get_mut(tenant) else {
            return Err(self.unknown_tenant(tenant));
        };
        if record.keys.remove(key_id).is_none() {
            return Err(Refusal::not_found(format!(
                "tenant `{tenant}` has no key `{key_id}`; its keys: {}",
                listed(record.keys.keys())
            )));
        }
        record.updated_ms = at;
        self.log_admin(
            at,
            actor,
            None,
            format!("key `{key_id}` of tenant `{tenant}` revoked"),
        );
        Ok(KeyChanged {
            tenant: tenant.to_string(),
            key_id: key_id.to_string(),
        })
    }

    /// Rebuilds the manifest from the catalogue and records a new version when
    /// anything a client can see changed.
    /// Makes this state, read from a backup, the start of a new cluster:
    /// the manifest version moves to the next multiple of
    /// [`RESTORE_VERSION_STEP`], so no edge or executor that held a version
    /// the lost cluster issued after the backup mistakes the restored
    /// manifest for an older one (they take it as new, whole); an admin
    /// event records the restore.
    pub fn begin_after_restore(&mut self, at_ms: u64, actor: &str, message: String) {
        let current = self.manifest();
        let version = (current.version / RESTORE_VERSION_STEP + 1) * RESTORE_VERSION_STEP;
        let next = self.rebuild(version);
        self.history.push_back(Self::record_of(&next, at_ms));
        while self.history.len() > MANIFEST_HISTORY_LIMIT {
            self.history.pop_front();
        }
        self.manifest = Some(Arc::new(next));
        self.applying_format = COMMAND_FORMAT;
        self.log_event(at_ms, EventKind::Admin, actor, None, None, message);
    }

    fn publish_manifest(&mut self, at: u64) {
        let current = self.manifest();
        let next = self.rebuild(current.version + 1);
        if current.version > 0 && same_content(&current, &next) {
            return;
        }
        if current.version == 0 && next.tools.is_empty() && next.servers.is_empty() {
            return;
        }
        self.history.push_back(Self::record_of(&next, at));
        while self.history.len() > MANIFEST_HISTORY_LIMIT {
            self.history.pop_front();
        }
        self.manifest = Some(Arc::new(next));
    }

    /// How history remembers manifest `next`, committed `at`.
    fn record_of(next: &Manifest, at: u64) -> ManifestRecord {
        ManifestRecord {
            version: next.version,
            stub_hash: next.stub_hash.to_hex(),
            at_ms: at,
            tools: next
                .servers
                .iter()
                .map(|s| {
                    let tools = next
                        .tools
                        .iter()
                        .filter(|t| t.id.server == s.id)
                        .map(|t| {
                            (
                                t.id.tool.clone(),
                                StubHash::of(t.canonical_json.as_bytes()).to_hex(),
                            )
                        })
                        .collect();
                    (s.id.clone(), tools)
                })
                .collect(),
        }
    }

    fn log_event(
        &mut self,
        at: u64,
        kind: EventKind,
        actor: &str,
        upstream: Option<&str>,
        tool: Option<&str>,
        message: String,
    ) {
        self.events.push_back(Event {
            id: self.next_event_id,
            at_ms: at,
            kind,
            actor: actor.to_string(),
            upstream: upstream.map(str::to_string),
            tool: tool.map(str::to_string),
            message,
        });
        self.next_event_id += 1;
        if self.applying_format < 2 {
            while self.events.len() > EVENT_LOG_LIMIT {
                self.events.pop_front();
            }
            return;
        }
        // Each kind to its own limit: admin activity never pushes drift out.
        let of_kind = self.events.iter().filter(|e| e.kind == kind).count();
        if of_kind > EVENT_LOG_LIMIT
            && let Some(oldest) = self.events.iter().position(|e| e.kind == kind)
        {
            self.events.remove(oldest);
        }
    }

    /// An administrative event (no tool concerned).
    fn log_admin(&mut self, at: u64, actor: &str, upstream: Option<&str>, message: String) {
        self.log_event(at, EventKind::Admin, actor, upstream, None, message);
    }

    /// The refusal for an upstream id that is not registered, listing those that are.
    pub(crate) fn unknown_upstream(&self, id: &str) -> Refusal {
        Refusal::not_found(format!(
            "unknown upstream `{id}`; registered: {}",
            listed(self.upstreams.keys())
        ))
    }

    /// The refusal for a tenant id that does not exist.
    pub(crate) fn unknown_tenant(&self, id: &str) -> Refusal {
        Refusal::not_found(format!(
            "unknown tenant `{id}`; `quiver ctl tenant list` shows the tenants"
        ))
    }
}

/// `a, b, c`, or `none`.
fn listed<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let items: Vec<&str> = items.into_iter().map(String::as_str).collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Hex SHA-256 of a tool's canonical definition.
pub(crate) fn definition_hash(tool: &ToolDef) -> String {
    let value = serde_json::to_value(tool).unwrap_or(Value::Null);
    StubHash::of(to_canonical_json(&value).as_bytes()).to_hex()
}

#[cfg(test)]
mod tests;
