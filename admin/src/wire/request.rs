//! [`AdminRequest`] and what it carries, as `quiver.v1.AdminRequest`.

use quiver_proto::audit::{AuditKind, AuditOutcome, AuditRecord, Decision};
use quiver_proto::finding::Finding;
use quiver_proto::pb::{self, admin_request::Call};
use quiver_proto::secret_value::SecretValue;
use quiver_proto::tenant::StashUsage;
use quiver_proto::upstream_config::UpstreamConfig;

use super::field::{Field, Message, WireError, enumeration, message, required, required_field};
use crate::{
    AdminRequest, KeyRequester,
    audit::{AuditQuery, AuditRetention},
    tenant::{Tenant, TenantPatch},
    usage::LeaseRequest,
};

impl Message for UpstreamConfig {
    type Pb = pb::Upstream;
    fn to_pb(&self) -> pb::Upstream {
        UpstreamConfig::to_pb(self)
    }
    fn from_pb(pb: pb::Upstream) -> Result<UpstreamConfig, WireError> {
        Ok(UpstreamConfig::from_pb(pb)?)
    }
}

impl Message for Tenant {
    type Pb = pb::Tenant;
    fn to_pb(&self) -> pb::Tenant {
        Tenant::to_pb(self)
    }
    fn from_pb(pb: pb::Tenant) -> Result<Tenant, WireError> {
        Ok(Tenant::from_pb(pb)?)
    }
}

impl Message for Finding {
    type Pb = pb::Finding;
    fn to_pb(&self) -> pb::Finding {
        self.into()
    }
    fn from_pb(pb: pb::Finding) -> Result<Finding, WireError> {
        Ok((&pb).into())
    }
}

required_field!(UpstreamConfig, Tenant);

/// A list of names.
impl Message for Vec<String> {
    type Pb = pb::Strings;
    fn to_pb(&self) -> pb::Strings {
        pb::Strings {
            values: self.clone(),
        }
    }
    fn from_pb(pb: pb::Strings) -> Result<Vec<String>, WireError> {
        Ok(pb.values)
    }
}

message!(StashUsage => pb::StashUsage { bytes, keys, quota_bytes, quota_keys, fleet });
message!(LeaseRequest => pb::LeaseRequest { tenant, node, want, spent, calls, give_back, stash });
message!(AuditQuery => pb::AuditQuery { tenant, since_ms, limit });
message!(AuditRetention => pb::AuditRetention { max_age_days, max_records });

enumeration!(AuditKind => AuditKind { Call, Execute, Approval, Task });
enumeration!(Decision => Decision { Allowed, Denied });

impl Message for AuditRecord {
    type Pb = pb::AuditRecord;
    fn to_pb(&self) -> pb::AuditRecord {
        pb::AuditRecord {
            id: self.id,
            at_ms: self.at_ms,
            tenant: self.tenant.clone(),
            caller: self.caller.clone(),
            edge: self.edge.clone(),
            executor: self.executor.clone(),
            kind: self.kind.to_field(),
            tool: self.tool.clone(),
            arguments_sha256: self.arguments_sha256.clone(),
            arguments_json: self.arguments.as_ref().map(|a| a.to_string()),
            decision: self.decision.to_field(),
            reason: self.reason.clone(),
            latency_us: self.latency_us,
            outcome: self.outcome.to_string(),
            script_sha256: self.script_sha256.clone(),
            task_id: self.task_id.clone(),
        }
    }
    fn from_pb(pb: pb::AuditRecord) -> Result<AuditRecord, WireError> {
        let arguments = pb
            .arguments_json
            .map(|json| serde_json::from_str(&json))
            .transpose()
            .map_err(|source| WireError::Json {
                field: "AuditRecord.arguments_json",
                source,
            })?;
        Ok(AuditRecord {
            id: pb.id,
            at_ms: pb.at_ms,
            tenant: pb.tenant,
            caller: pb.caller,
            edge: pb.edge,
            executor: pb.executor,
            kind: Field::from_field(pb.kind, "AuditRecord.kind")?,
            tool: pb.tool,
            arguments_sha256: pb.arguments_sha256,
            arguments,
            decision: Field::from_field(pb.decision, "AuditRecord.decision")?,
            reason: pb.reason,
            latency_us: pb.latency_us,
            outcome: AuditOutcome::from_name(&pb.outcome),
            script_sha256: pb.script_sha256,
            task_id: pb.task_id,
        })
    }
}

impl Message for TenantPatch {
    type Pb = pb::TenantPatch;
    fn to_pb(&self) -> pb::TenantPatch {
        pb::TenantPatch {
            display_name: self.display_name.clone(),
            mode: self.mode.clone(),
            servers: self.servers.to_field(),
            tools: self.tools.to_field(),
            tags: self.tags.to_field(),
            rate_limit_per_minute: self.rate_limit_per_minute,
            tool_rate_limits: self.tool_rate_limits.as_ref().map(|limits| pb::RateLimits {
                per_minute: limits.to_field(),
            }),
            audit_arguments: self.audit_arguments,
            self_service_keys: self.self_service_keys,
            validation: self.validation.clone(),
            hold_findings: self.hold_findings.clone(),
            stash_bytes: self.stash_bytes,
            stash_keys: self.stash_keys,
            task_wall_ms: self.task_wall_ms,
            budget: self.budget,
            prices: self.prices.as_ref().map(|prices| pb::Prices {
                by_tool: prices.to_field(),
            }),
        }
    }
    fn from_pb(pb: pb::TenantPatch) -> Result<TenantPatch, WireError> {
        Ok(TenantPatch {
            display_name: pb.display_name,
            mode: pb.mode,
            servers: Field::from_field(pb.servers, "TenantPatch.servers")?,
            tools: Field::from_field(pb.tools, "TenantPatch.tools")?,
            tags: Field::from_field(pb.tags, "TenantPatch.tags")?,
            rate_limit_per_minute: pb.rate_limit_per_minute,
            tool_rate_limits: pb
                .tool_rate_limits
                .map(|l| l.per_minute.into_iter().collect()),
            audit_arguments: pb.audit_arguments,
            self_service_keys: pb.self_service_keys,
            validation: pb.validation,
            hold_findings: pb.hold_findings,
            stash_bytes: pb.stash_bytes,
            stash_keys: pb.stash_keys,
            task_wall_ms: pb.task_wall_ms,
            budget: pb.budget,
            prices: pb.prices.map(|p| p.by_tool.into_iter().collect()),
        })
    }
}

fn patch(id: &str, patch: &TenantPatch) -> pb::TenantPatchRequest {
    pb::TenantPatchRequest {
        id: id.to_string(),
        patch: Some(patch.to_pb()),
    }
}

fn id(id: &str) -> pb::Id {
    pb::Id { id: id.to_string() }
}

fn optional_id(id: &Option<String>) -> pb::OptionalId {
    pb::OptionalId { id: id.clone() }
}

fn node(node_id: u64) -> pb::NodeRequest {
    pb::NodeRequest { node_id }
}

fn tenant(tenant: &str) -> pb::TenantRequest {
    pb::TenantRequest {
        tenant: tenant.to_string(),
    }
}

fn grant(upstream: &str, tenant: &str) -> pb::GrantRequest {
    pb::GrantRequest {
        upstream: upstream.to_string(),
        tenant: tenant.to_string(),
        scopes: Vec::new(),
    }
}

impl Message for AdminRequest {
    type Pb = pb::AdminRequest;

    fn to_pb(&self) -> pb::AdminRequest {
        let none = pb::NoArguments {};
        let call = match self {
            AdminRequest::ClusterInit => Call::ClusterInit(none),
            AdminRequest::ClusterStatus => Call::ClusterStatus(none),
            AdminRequest::AddLearner { node_id, addr } => Call::AddLearner(pb::AddLearnerRequest {
                node_id: *node_id,
                addr: addr.clone(),
            }),
            AdminRequest::Promote { node_id } => Call::Promote(node(*node_id)),
            AdminRequest::Remove { node_id } => Call::Remove(node(*node_id)),
            AdminRequest::TransferLeader { node_id } => Call::TransferLeader(node(*node_id)),
            AdminRequest::Verify => Call::Verify(none),
            AdminRequest::SetElection { enabled } => {
                Call::SetElection(pb::SetElectionRequest { enabled: *enabled })
            }
            AdminRequest::Fleet => Call::Fleet(none),
            AdminRequest::UpstreamAdd {
                upstream,
                quarantine,
                replace,
            } => Call::UpstreamAdd(pb::UpstreamAddRequest {
                upstream: Some(upstream.to_pb()),
                quarantine: *quarantine,
                replace: *replace,
            }),
            AdminRequest::UpstreamList => Call::UpstreamList(none),
            AdminRequest::UpstreamShow { id: i } => Call::UpstreamShow(id(i)),
            AdminRequest::UpstreamRemove { id: i } => Call::UpstreamRemove(id(i)),
            AdminRequest::UpstreamRefresh { id } => Call::UpstreamRefresh(optional_id(id)),
            AdminRequest::UpstreamRescreen { id } => Call::UpstreamRescreen(optional_id(id)),
            AdminRequest::UpstreamDrift { id } => Call::UpstreamDrift(optional_id(id)),
            AdminRequest::UpstreamFindings { id } => Call::UpstreamFindings(optional_id(id)),
            AdminRequest::UpstreamApprove { id, tool } => {
                Call::UpstreamApprove(pb::UpstreamApproveRequest {
                    id: id.clone(),
                    tool: tool.clone(),
                })
            }
            AdminRequest::TenantCreate { id, patch: p } => Call::TenantCreate(patch(id, p)),
            AdminRequest::TenantList => Call::TenantList(none),
            AdminRequest::TenantShow { id: i } => Call::TenantShow(id(i)),
            AdminRequest::TenantUpdate { id, patch: p } => Call::TenantUpdate(patch(id, p)),
            AdminRequest::TenantDelete { id: i } => Call::TenantDelete(id(i)),
            AdminRequest::KeyIssue { tenant, requester } => Call::KeyIssue(pb::KeyIssueRequest {
                tenant: tenant.clone(),
                requester: pb::KeyRequester::from(*requester).into(),
            }),
            AdminRequest::KeyRevoke {
                tenant,
                key_id,
                requester,
            } => Call::KeyRevoke(pb::KeyRevokeRequest {
                tenant: tenant.clone(),
                key_id: key_id.clone(),
                requester: pb::KeyRequester::from(*requester).into(),
            }),
            AdminRequest::TenantUsage { id: i } => Call::TenantUsage(id(i)),
            AdminRequest::BudgetLease { lease } => Call::BudgetLease(lease.to_pb()),
            AdminRequest::AuditAppend { records } => Call::AuditAppend(pb::AuditRecords {
                records: records.to_field(),
            }),
            AdminRequest::Audit { query } => Call::Audit(query.to_pb()),
            AdminRequest::AuditRetention { set } => {
                Call::AuditRetention(pb::AuditRetentionRequest {
                    set: set.to_field(),
                })
            }
            AdminRequest::SecretSet {
                tenant,
                name,
                value,
            } => Call::SecretSet(pb::SecretSetRequest {
                tenant: tenant.clone(),
                name: name.clone(),
                value: value.expose().to_string(),
            }),
            AdminRequest::SecretList { tenant: t } => Call::SecretList(tenant(t)),
            AdminRequest::UpstreamAuthorize {
                upstream,
                tenant,
                scopes,
            } => Call::UpstreamAuthorize(pb::GrantRequest {
                scopes: scopes.clone(),
                ..grant(upstream, tenant)
            }),
            AdminRequest::UpstreamAuthorized { url } => {
                Call::UpstreamAuthorized(pb::OAuthCallback {
                    url: url.expose().to_string(),
                })
            }
            AdminRequest::UpstreamDeauthorize { upstream, tenant } => {
                Call::UpstreamDeauthorize(grant(upstream, tenant))
            }
            AdminRequest::GrantRenew { upstream, tenant } => {
                Call::GrantRenew(grant(upstream, tenant))
            }
            AdminRequest::GrantList { tenant } => {
                Call::GrantList(pb::OptionalId { id: tenant.clone() })
            }
            AdminRequest::SecretDelete { tenant, name } => Call::SecretDelete(pb::SecretRequest {
                tenant: tenant.clone(),
                name: name.clone(),
            }),
            AdminRequest::ManifestShow { version } => {
                Call::ManifestShow(pb::ManifestShowRequest { version: *version })
            }
            AdminRequest::ManifestDiff { from, to } => {
                Call::ManifestDiff(pb::ManifestDiffRequest {
                    from: *from,
                    to: *to,
                })
            }
            AdminRequest::ManifestHash => Call::ManifestHash(none),
        };
        pb::AdminRequest { call: Some(call) }
    }

    fn from_pb(pb: pb::AdminRequest) -> Result<AdminRequest, WireError> {
        let Some(call) = pb.call else {
            return Err(WireError::Missing("AdminRequest.call"));
        };
        Ok(match call {
            Call::ClusterInit(_) => AdminRequest::ClusterInit,
            Call::ClusterStatus(_) => AdminRequest::ClusterStatus,
            Call::AddLearner(r) => AdminRequest::AddLearner {
                node_id: r.node_id,
                addr: r.addr,
            },
            Call::Promote(r) => AdminRequest::Promote { node_id: r.node_id },
            Call::Remove(r) => AdminRequest::Remove { node_id: r.node_id },
            Call::TransferLeader(r) => AdminRequest::TransferLeader { node_id: r.node_id },
            Call::Verify(_) => AdminRequest::Verify,
            Call::SetElection(r) => AdminRequest::SetElection { enabled: r.enabled },
            Call::Fleet(_) => AdminRequest::Fleet,
            Call::UpstreamAdd(r) => AdminRequest::UpstreamAdd {
                upstream: required(r.upstream, "UpstreamAddRequest.upstream")?,
                quarantine: r.quarantine,
                replace: r.replace,
            },
            Call::UpstreamList(_) => AdminRequest::UpstreamList,
            Call::UpstreamShow(r) => AdminRequest::UpstreamShow { id: r.id },
            Call::UpstreamRemove(r) => AdminRequest::UpstreamRemove { id: r.id },
            Call::UpstreamRefresh(r) => AdminRequest::UpstreamRefresh { id: r.id },
            Call::UpstreamRescreen(r) => AdminRequest::UpstreamRescreen { id: r.id },
            Call::UpstreamDrift(r) => AdminRequest::UpstreamDrift { id: r.id },
            Call::UpstreamFindings(r) => AdminRequest::UpstreamFindings { id: r.id },
            Call::UpstreamApprove(r) => AdminRequest::UpstreamApprove {
                id: r.id,
                tool: r.tool,
            },
            Call::TenantCreate(r) => AdminRequest::TenantCreate {
                id: r.id,
                patch: required(r.patch, "TenantPatchRequest.patch")?,
            },
            Call::TenantList(_) => AdminRequest::TenantList,
            Call::TenantShow(r) => AdminRequest::TenantShow { id: r.id },
            Call::TenantUpdate(r) => AdminRequest::TenantUpdate {
                id: r.id,
                patch: required(r.patch, "TenantPatchRequest.patch")?,
            },
            Call::TenantDelete(r) => AdminRequest::TenantDelete { id: r.id },
            Call::KeyIssue(r) => AdminRequest::KeyIssue {
                requester: r.requester().into(),
                tenant: r.tenant,
            },
            Call::KeyRevoke(r) => AdminRequest::KeyRevoke {
                requester: r.requester().into(),
                tenant: r.tenant,
                key_id: r.key_id,
            },
            Call::TenantUsage(r) => AdminRequest::TenantUsage { id: r.id },
            Call::BudgetLease(r) => AdminRequest::BudgetLease {
                lease: LeaseRequest::from_pb(r)?,
            },
            Call::AuditAppend(r) => AdminRequest::AuditAppend {
                records: Field::from_field(r.records, "AuditRecords.records")?,
            },
            Call::Audit(r) => AdminRequest::Audit {
                query: AuditQuery::from_pb(r)?,
            },
            Call::AuditRetention(r) => AdminRequest::AuditRetention {
                set: Field::from_field(r.set, "AuditRetentionRequest.set")?,
            },
            Call::SecretSet(r) => AdminRequest::SecretSet {
                tenant: r.tenant,
                name: r.name,
                value: SecretValue::new(r.value),
            },
            Call::SecretList(r) => AdminRequest::SecretList { tenant: r.tenant },
            Call::UpstreamAuthorize(r) => AdminRequest::UpstreamAuthorize {
                upstream: r.upstream,
                tenant: r.tenant,
                scopes: r.scopes,
            },
            Call::UpstreamAuthorized(r) => AdminRequest::UpstreamAuthorized {
                url: SecretValue::new(r.url),
            },
            Call::UpstreamDeauthorize(r) => AdminRequest::UpstreamDeauthorize {
                upstream: r.upstream,
                tenant: r.tenant,
            },
            Call::GrantRenew(r) => AdminRequest::GrantRenew {
                upstream: r.upstream,
                tenant: r.tenant,
            },
            Call::GrantList(r) => AdminRequest::GrantList { tenant: r.id },
            Call::SecretDelete(r) => AdminRequest::SecretDelete {
                tenant: r.tenant,
                name: r.name,
            },
            Call::ManifestShow(r) => AdminRequest::ManifestShow { version: r.version },
            Call::ManifestDiff(r) => AdminRequest::ManifestDiff {
                from: r.from,
                to: r.to,
            },
            Call::ManifestHash(_) => AdminRequest::ManifestHash,
        })
    }
}

impl From<KeyRequester> for pb::KeyRequester {
    fn from(requester: KeyRequester) -> pb::KeyRequester {
        match requester {
            KeyRequester::Operator => pb::KeyRequester::Operator,
            KeyRequester::Tenant => pb::KeyRequester::Tenant,
        }
    }
}

impl From<pb::KeyRequester> for KeyRequester {
    fn from(requester: pb::KeyRequester) -> KeyRequester {
        match requester {
            pb::KeyRequester::Operator => KeyRequester::Operator,
            pb::KeyRequester::Tenant => KeyRequester::Tenant,
        }
    }
}
