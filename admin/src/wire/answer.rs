//! [`AdminAnswer`] and what it carries, as `quiver.v1.AdminAnswer`.

use quiver_proto::finding::{Finding, HoldAt};
use quiver_proto::manifest::ValidationMode;
use quiver_proto::mode::Mode;
use quiver_proto::node_role::NodeRole;
use quiver_proto::pb::{self, admin_answer::Answer};
use quiver_proto::registry::UnknownEnumValue;
use quiver_proto::tool::ToolDef;
use quiver_proto::upstream_state::UpstreamState;

use super::field::{Field, Message, WireError, enumeration, message, required_field};
use crate::{
    AdminAnswer, AuthorizationLink, ClusterInitialized, ClusterStatus, Committed, DriftReport,
    ElectionSwitch, FindingStatus, FindingsReport, FleetMember, FleetVerification, GrantSummary,
    IssuedKey, KeySummary, LeaderTransfer, LearnerAdded, ManifestDiff, ManifestHash, ManifestShown,
    ManifestSummary, MemberReach, MemberRemoved, MemberRole, MemberStatus, NodeVerdict,
    PublicTenant, RefreshStarted, ReportedReadiness, Rescreened, SecretList, SecretSummary,
    ServerSummary, ToolFindings, ToolSummary, UpstreamDetail, UpstreamSummary, UsageReport,
    Verdict, VoterPromoted,
    outcome::{
        CommandResult, DiscoveryRecord, DriftApproved, KeyChanged, OAuthGrantChanged,
        SecretChanged, TenantDeleted, UpstreamPut, UpstreamRemoved,
    },
    records::{Event, EventKind, ManifestRecord, PendingDrift},
    usage::{LeaseGranted, StashReport, TenantUsage},
};

enumeration!(MemberRole => MemberRole { Leader, Follower, Learner });
enumeration!(MemberReach => MemberReach { Up, Down });
enumeration!(Verdict => Verdict { Ok, Behind, Mismatch });
enumeration!(NodeRole => NodeRole { Edge, Executor, Dev });
enumeration!(EventKind => EventKind { Drift, Admin, Screening });
enumeration!(FindingStatus => FindingStatus { Held, Approved, Served });

/// An enum whose protobuf unspecified value reads as `None`.
macro_rules! optional_enumeration {
    ($rust:ident => $pb:ident { $($variant:ident),* $(,)? }) => {
        impl Field for Option<$rust> {
            type Pb = i32;
            fn to_field(&self) -> i32 {
                match self {
                    None => 0,
                    $(Some($rust::$variant) => pb::$pb::$variant as i32,)*
                }
            }
            fn from_field(value: i32, field: &'static str) -> Result<Self, WireError> {
                match value {
                    0 => Ok(None),
                    $(v if v == pb::$pb::$variant as i32 => Ok(Some($rust::$variant)),)*
                    _ => Err(UnknownEnumValue { field, value }.into()),
                }
            }
        }
    };
}

optional_enumeration!(UpstreamState => UpstreamState { Idle, Connecting, Connected, Down });
optional_enumeration!(Mode => Mode { Passthrough, Search, Code });
optional_enumeration!(ValidationMode => ValidationMode { Schema, Strict, Off });
optional_enumeration!(HoldAt => HoldAt { Low, Medium, High, Never });

message!(ClusterInitialized => pb::ClusterInitialized { initialized, node });
message!(MemberStatus => pb::MemberStatus { id, addr, role, matched_index, state });
message!(ReportedReadiness => pb::ReportedReadiness { ready, not_ready, admin, grpc, mcp });
message!(NodeVerdict => pb::NodeVerdict {
    node, role, manifest_version, stub_hash, verdict, age_ms, reported_to, readiness,
});
message!(ClusterStatus => pb::ClusterStatus {
    leader, term, last_log_index, last_applied, snapshot, purged, members,
    manifest_version, stub_hash, fleet,
});
message!(LeaderTransfer => pb::LeaderTransfer { leader, changed });
message!(FleetVerification => pb::FleetVerification {
    manifest_version, stub_hash, ok, disagree, nodes,
});
message!(ElectionSwitch => pb::ElectionSwitch { node, elect });
message!(FleetMember => pb::FleetMember {
    node, role, manifest_version, stub_hash, age_ms, reported_to, readiness,
});
message!(UpstreamPut => pb::UpstreamPut { id, replaced });
message!(KeyChanged => pb::KeyChanged { tenant, key_id });
message!(SecretChanged => pb::SecretChanged { tenant, name });
message!(StashReport => pb::StashReport { usage, at_ms });
message!(TenantUsage => pb::TenantUsage { leased, spent, calls, updated_ms, stash });
message!(LeaseGranted => pb::LeaseGranted { tenant, granted, budget, usage });
message!(UpstreamSummary => pb::UpstreamSummary {
    id, transport, tools, pending, quarantine, tags, group, state,
});
message!(ToolSummary => pb::ToolSummary { name, description });
message!(UpstreamDetail => pb::UpstreamDetail {
    id, transport, tools, pending, quarantine, tags, group, state, config,
});
message!(RefreshStarted => pb::RefreshStarted { refreshing });
message!(Rescreened => pb::Rescreened { upstreams, changed });
message!(Event => pb::Event { id, at_ms, kind, actor, upstream, tool, message });
message!(DriftReport => pb::DriftReport { events, pending });
message!(ToolFindings => pb::ToolFindings { upstream, tool, status, held_since_ms, findings });
message!(FindingsReport => pb::FindingsReport { tools });
message!(KeySummary => pb::KeySummary { key_id, created_ms });
message!(PublicTenant => pb::PublicTenant {
    id, display_name, mode, servers, tools, tags, rate_limit_per_minute, tool_rate_limits,
    audit_arguments, self_service_keys, validation, stash_bytes, hold_findings, stash_keys, task_wall_ms,
    budget, prices, keys, created_ms, updated_ms,
});
message!(IssuedKey => pb::IssuedKey { tenant, key_id, key });
message!(UsageReport => pb::UsageReport {
    tenant, budget, leased, spent, calls, remaining, updated_ms, stash_bytes, stash_keys,
    stash_quota_bytes, stash_quota_keys, stash_executors,
});
message!(SecretSummary => pb::SecretSummary { name, updated_ms });
message!(SecretList => pb::SecretList { tenant, secrets });
message!(OAuthGrantChanged => pb::OAuthGrantChanged { tenant, upstream });
message!(AuthorizationLink => pb::AuthorizationLink { upstream, tenant, link, expires_in_s });
message!(GrantSummary => pb::GrantSummary {
    tenant, upstream, scopes, expires_at_ms, renewable, granted_ms, updated_ms,
});
message!(ServerSummary => pb::ServerSummary { id, tools, stub_hash });
message!(ManifestSummary => pb::ManifestSummary { version, stub_hash, servers, tools });
message!(ManifestRecord => pb::ManifestRecord { version, stub_hash, at_ms, tools });
message!(ManifestDiff => pb::ManifestDiff {
    from, to, from_hash, to_hash, added, removed, changed,
});
message!(ManifestHash => pb::ManifestHash { version, stub_hash, tools });
message!(DriftApproved => pb::DriftApproved { upstream, approved, findings });

/// A server's tools by name, with their definition hashes.
impl Message for std::collections::BTreeMap<String, String> {
    type Pb = pb::ToolHashes;
    fn to_pb(&self) -> pb::ToolHashes {
        pb::ToolHashes {
            by_tool: self.to_field(),
        }
    }
    fn from_pb(pb: pb::ToolHashes) -> Result<Self, WireError> {
        Field::from_field(pb.by_tool, "ToolHashes.by_tool")
    }
}

/// One tool's findings.
impl Message for Vec<Finding> {
    type Pb = pb::ToolFindingsList;
    fn to_pb(&self) -> pb::ToolFindingsList {
        pb::ToolFindingsList {
            findings: self.to_field(),
        }
    }
    fn from_pb(pb: pb::ToolFindingsList) -> Result<Self, WireError> {
        Field::from_field(pb.findings, "ToolFindingsList.findings")
    }
}

/// Quarantined changes by tool.
impl Message for std::collections::BTreeMap<String, PendingDrift> {
    type Pb = pb::PendingChanges;
    fn to_pb(&self) -> pb::PendingChanges {
        pb::PendingChanges {
            by_tool: self.to_field(),
        }
    }
    fn from_pb(pb: pb::PendingChanges) -> Result<Self, WireError> {
        Field::from_field(pb.by_tool, "PendingChanges.by_tool")
    }
}

impl Message for PendingDrift {
    type Pb = pb::PendingDrift;
    fn to_pb(&self) -> pb::PendingDrift {
        pb::PendingDrift {
            proposed_json: serde_json::to_string(&self.proposed).unwrap_or_default(),
            seen_ms: self.seen_ms,
        }
    }
    fn from_pb(pb: pb::PendingDrift) -> Result<PendingDrift, WireError> {
        let proposed: ToolDef =
            serde_json::from_str(&pb.proposed_json).map_err(|source| WireError::Json {
                field: "PendingDrift.proposed_json",
                source,
            })?;
        Ok(PendingDrift {
            proposed,
            seen_ms: pb.seen_ms,
        })
    }
}

/// A membership change: the node and the log index.
fn change(node: u64, log_index: u64) -> pb::MembershipChange {
    pb::MembershipChange { node, log_index }
}

message!(Committed => pb::Committed { result, manifest_version, log_index });
required_field!(CommandResult, ManifestShown);

impl Message for DiscoveryRecord {
    type Pb = pb::DiscoveryRecord;
    fn to_pb(&self) -> pb::DiscoveryRecord {
        use pb::discovery_record::Record;
        let record = match self {
            DiscoveryRecord::Recorded { upstream, changed } => {
                Record::Recorded(pb::DiscoveryRecorded {
                    upstream: upstream.clone(),
                    changed: *changed,
                })
            }
            DiscoveryRecord::Skipped { upstream, reason } => {
                Record::Skipped(pb::DiscoverySkipped {
                    upstream: upstream.clone(),
                    reason: reason.clone(),
                })
            }
        };
        pb::DiscoveryRecord {
            record: Some(record),
        }
    }
    fn from_pb(pb: pb::DiscoveryRecord) -> Result<DiscoveryRecord, WireError> {
        use pb::discovery_record::Record;
        Ok(match pb.record {
            Some(Record::Recorded(r)) => DiscoveryRecord::Recorded {
                upstream: r.upstream,
                changed: r.changed,
            },
            Some(Record::Skipped(r)) => DiscoveryRecord::Skipped {
                upstream: r.upstream,
                reason: r.reason,
            },
            None => return Err(WireError::Missing("DiscoveryRecord.record")),
        })
    }
}

impl Message for CommandResult {
    type Pb = pb::CommandResult;
    fn to_pb(&self) -> pb::CommandResult {
        use pb::command_result::Result as R;
        let result = match self {
            CommandResult::Nothing => R::Nothing(pb::NoArguments {}),
            CommandResult::PutUpstream(r) => R::PutUpstream(r.to_pb()),
            CommandResult::RemoveUpstream(r) => R::RemoveUpstream(pb::Id { id: r.id.clone() }),
            CommandResult::RecordDiscovery(r) => R::RecordDiscovery(pb::DiscoveryRecords {
                records: r.to_field(),
            }),
            CommandResult::ApproveDrift(r) => R::ApproveDrift(r.to_pb()),
            CommandResult::CreateTenant(t) => R::CreateTenant(t.to_pb()),
            CommandResult::UpdateTenant(t) => R::UpdateTenant(t.to_pb()),
            CommandResult::DeleteTenant(r) => R::DeleteTenant(pb::Id { id: r.id.clone() }),
            CommandResult::IssueKey(r) => R::IssueKey(r.to_pb()),
            CommandResult::RevokeKey(r) => R::RevokeKey(r.to_pb()),
            CommandResult::LeaseBudget(r) => R::LeaseBudget(r.to_pb()),
            CommandResult::AppendAudit(ids) => R::AppendAudit(pb::AuditAppended {
                first: ids.map(|(first, _)| first),
                last: ids.map(|(_, last)| last),
            }),
            CommandResult::SetAuditRetention(r) => R::SetAuditRetention(r.to_pb()),
            CommandResult::SetSecret(r) => R::SetSecret(r.to_pb()),
            CommandResult::DeleteSecret(r) => R::DeleteSecret(r.to_pb()),
            CommandResult::PutOAuthGrant(r) => R::PutOauthGrant(r.to_pb()),
            CommandResult::DropOAuthGrant(r) => R::DropOauthGrant(r.to_pb()),
        };
        pb::CommandResult {
            result: Some(result),
        }
    }
    fn from_pb(pb: pb::CommandResult) -> Result<CommandResult, WireError> {
        use pb::command_result::Result as R;
        let Some(result) = pb.result else {
            return Err(WireError::Missing("CommandResult.result"));
        };
        Ok(match result {
            R::Nothing(_) => CommandResult::Nothing,
            R::PutUpstream(r) => CommandResult::PutUpstream(Message::from_pb(r)?),
            R::RemoveUpstream(r) => CommandResult::RemoveUpstream(UpstreamRemoved { id: r.id }),
            R::RecordDiscovery(r) => CommandResult::RecordDiscovery(Field::from_field(
                r.records,
                "DiscoveryRecords.records",
            )?),
            R::ApproveDrift(r) => CommandResult::ApproveDrift(Message::from_pb(r)?),
            R::CreateTenant(t) => CommandResult::CreateTenant(Box::new(Message::from_pb(t)?)),
            R::UpdateTenant(t) => CommandResult::UpdateTenant(Box::new(Message::from_pb(t)?)),
            R::DeleteTenant(r) => CommandResult::DeleteTenant(TenantDeleted { id: r.id }),
            R::IssueKey(r) => CommandResult::IssueKey(Message::from_pb(r)?),
            R::RevokeKey(r) => CommandResult::RevokeKey(Message::from_pb(r)?),
            R::LeaseBudget(r) => CommandResult::LeaseBudget(Message::from_pb(r)?),
            R::AppendAudit(r) => CommandResult::AppendAudit(r.first.zip(r.last)),
            R::SetAuditRetention(r) => CommandResult::SetAuditRetention(Message::from_pb(r)?),
            R::SetSecret(r) => CommandResult::SetSecret(Message::from_pb(r)?),
            R::DeleteSecret(r) => CommandResult::DeleteSecret(Message::from_pb(r)?),
            R::PutOauthGrant(r) => CommandResult::PutOAuthGrant(Message::from_pb(r)?),
            R::DropOauthGrant(r) => CommandResult::DropOAuthGrant(Message::from_pb(r)?),
        })
    }
}

impl Message for ManifestShown {
    type Pb = pb::ManifestShown;
    fn to_pb(&self) -> pb::ManifestShown {
        use pb::manifest_shown::Shown;
        let shown = match self {
            ManifestShown::Current(m) => Shown::Current(m.to_pb()),
            ManifestShown::Kept(m) => Shown::Kept(m.to_pb()),
        };
        pb::ManifestShown { shown: Some(shown) }
    }
    fn from_pb(pb: pb::ManifestShown) -> Result<ManifestShown, WireError> {
        use pb::manifest_shown::Shown;
        Ok(match pb.shown {
            Some(Shown::Current(m)) => ManifestShown::Current(Message::from_pb(m)?),
            Some(Shown::Kept(m)) => ManifestShown::Kept(Message::from_pb(m)?),
            None => return Err(WireError::Missing("ManifestShown.shown")),
        })
    }
}

impl Message for AdminAnswer {
    type Pb = pb::AdminAnswer;

    fn to_pb(&self) -> pb::AdminAnswer {
        let answer = match self {
            AdminAnswer::ClusterInit(a) => Answer::ClusterInit(a.to_pb()),
            AdminAnswer::ClusterStatus(a) => Answer::ClusterStatus(a.to_pb()),
            AdminAnswer::AddLearner(a) => Answer::AddLearner(change(a.added, a.log_index)),
            AdminAnswer::Promote(a) => Answer::Promote(change(a.promoted, a.log_index)),
            AdminAnswer::Remove(a) => Answer::Remove(change(a.removed, a.log_index)),
            AdminAnswer::TransferLeader(a) => Answer::TransferLeader(a.to_pb()),
            AdminAnswer::Verify(a) => Answer::Verify(a.to_pb()),
            AdminAnswer::SetElection(a) => Answer::SetElection(a.to_pb()),
            AdminAnswer::Fleet(a) => Answer::Fleet(pb::FleetMembers {
                members: a.to_field(),
            }),
            AdminAnswer::UpstreamAdd(c) => Answer::UpstreamAdd(c.to_pb()),
            AdminAnswer::UpstreamList(a) => Answer::UpstreamList(pb::UpstreamSummaries {
                upstreams: a.to_field(),
            }),
            AdminAnswer::UpstreamShow(a) => Answer::UpstreamShow(a.to_pb()),
            AdminAnswer::UpstreamRemove(c) => Answer::UpstreamRemove(c.to_pb()),
            AdminAnswer::UpstreamRefresh(a) => Answer::UpstreamRefresh(a.to_pb()),
            AdminAnswer::UpstreamRescreen(a) => Answer::UpstreamRescreen(a.to_pb()),
            AdminAnswer::UpstreamDrift(a) => Answer::UpstreamDrift(a.to_pb()),
            AdminAnswer::UpstreamFindings(a) => Answer::UpstreamFindings(a.to_pb()),
            AdminAnswer::UpstreamApprove(c) => Answer::UpstreamApprove(c.to_pb()),
            AdminAnswer::TenantCreate(c) => Answer::TenantCreate(c.to_pb()),
            AdminAnswer::TenantList(a) => Answer::TenantList(pb::PublicTenants {
                tenants: a.to_field(),
            }),
            AdminAnswer::TenantShow(a) => Answer::TenantShow(a.to_pb()),
            AdminAnswer::TenantUpdate(c) => Answer::TenantUpdate(c.to_pb()),
            AdminAnswer::TenantDelete(c) => Answer::TenantDelete(c.to_pb()),
            AdminAnswer::KeyIssue(a) => Answer::KeyIssue(a.to_pb()),
            AdminAnswer::KeyRevoke(c) => Answer::KeyRevoke(c.to_pb()),
            AdminAnswer::TenantUsage(a) => Answer::TenantUsage(a.to_pb()),
            AdminAnswer::BudgetLease(a) => Answer::BudgetLease(a.to_pb()),
            AdminAnswer::AuditAppend(c) => Answer::AuditAppend(c.to_pb()),
            AdminAnswer::Audit(a) => Answer::Audit(pb::AuditRecords {
                records: a.to_field(),
            }),
            AdminAnswer::AuditRetention(a) => Answer::AuditRetention(a.to_pb()),
            AdminAnswer::SecretSet(c) => Answer::SecretSet(c.to_pb()),
            AdminAnswer::SecretList(a) => Answer::SecretList(a.to_pb()),
            AdminAnswer::SecretDelete(c) => Answer::SecretDelete(c.to_pb()),
            AdminAnswer::UpstreamAuthorize(a) => Answer::UpstreamAuthorize(a.to_pb()),
            AdminAnswer::UpstreamAuthorized(a) => Answer::UpstreamAuthorized(a.to_pb()),
            AdminAnswer::UpstreamDeauthorize(c) => Answer::UpstreamDeauthorize(c.to_pb()),
            AdminAnswer::GrantRenew(c) => Answer::GrantRenew(c.to_pb()),
            AdminAnswer::GrantList(a) => Answer::GrantList(pb::GrantList {
                grants: a.to_field(),
            }),
            AdminAnswer::ManifestShow(a) => Answer::ManifestShow(a.to_pb()),
            AdminAnswer::ManifestDiff(a) => Answer::ManifestDiff(a.to_pb()),
            AdminAnswer::ManifestHash(a) => Answer::ManifestHash(a.to_pb()),
        };
        pb::AdminAnswer {
            answer: Some(answer),
        }
    }

    fn from_pb(pb: pb::AdminAnswer) -> Result<AdminAnswer, WireError> {
        let Some(answer) = pb.answer else {
            return Err(WireError::Missing("AdminAnswer.answer"));
        };
        Ok(match answer {
            Answer::ClusterInit(a) => AdminAnswer::ClusterInit(Message::from_pb(a)?),
            Answer::ClusterStatus(a) => AdminAnswer::ClusterStatus(Message::from_pb(a)?),
            Answer::AddLearner(a) => AdminAnswer::AddLearner(LearnerAdded {
                added: a.node,
                log_index: a.log_index,
            }),
            Answer::Promote(a) => AdminAnswer::Promote(VoterPromoted {
                promoted: a.node,
                log_index: a.log_index,
            }),
            Answer::Remove(a) => AdminAnswer::Remove(MemberRemoved {
                removed: a.node,
                log_index: a.log_index,
            }),
            Answer::TransferLeader(a) => AdminAnswer::TransferLeader(Message::from_pb(a)?),
            Answer::Verify(a) => AdminAnswer::Verify(Message::from_pb(a)?),
            Answer::SetElection(a) => AdminAnswer::SetElection(Message::from_pb(a)?),
            Answer::Fleet(a) => {
                AdminAnswer::Fleet(Field::from_field(a.members, "FleetMembers.members")?)
            }
            Answer::UpstreamAdd(c) => AdminAnswer::UpstreamAdd(Message::from_pb(c)?),
            Answer::UpstreamList(a) => AdminAnswer::UpstreamList(Field::from_field(
                a.upstreams,
                "UpstreamSummaries.upstreams",
            )?),
            Answer::UpstreamShow(a) => AdminAnswer::UpstreamShow(Box::new(Message::from_pb(a)?)),
            Answer::UpstreamRemove(c) => AdminAnswer::UpstreamRemove(Message::from_pb(c)?),
            Answer::UpstreamRefresh(a) => AdminAnswer::UpstreamRefresh(Message::from_pb(a)?),
            Answer::UpstreamRescreen(a) => AdminAnswer::UpstreamRescreen(Message::from_pb(a)?),
            Answer::UpstreamDrift(a) => AdminAnswer::UpstreamDrift(Message::from_pb(a)?),
            Answer::UpstreamFindings(a) => AdminAnswer::UpstreamFindings(Message::from_pb(a)?),
            Answer::UpstreamApprove(c) => AdminAnswer::UpstreamApprove(Message::from_pb(c)?),
            Answer::TenantCreate(c) => AdminAnswer::TenantCreate(Message::from_pb(c)?),
            Answer::TenantList(a) => {
                AdminAnswer::TenantList(Field::from_field(a.tenants, "PublicTenants.tenants")?)
            }
            Answer::TenantShow(a) => AdminAnswer::TenantShow(Message::from_pb(a)?),
            Answer::TenantUpdate(c) => AdminAnswer::TenantUpdate(Message::from_pb(c)?),
            Answer::TenantDelete(c) => AdminAnswer::TenantDelete(Message::from_pb(c)?),
            Answer::KeyIssue(a) => AdminAnswer::KeyIssue(Message::from_pb(a)?),
            Answer::KeyRevoke(c) => AdminAnswer::KeyRevoke(Message::from_pb(c)?),
            Answer::TenantUsage(a) => AdminAnswer::TenantUsage(Message::from_pb(a)?),
            Answer::BudgetLease(a) => AdminAnswer::BudgetLease(Message::from_pb(a)?),
            Answer::AuditAppend(c) => AdminAnswer::AuditAppend(Message::from_pb(c)?),
            Answer::Audit(a) => {
                AdminAnswer::Audit(Field::from_field(a.records, "AuditRecords.records")?)
            }
            Answer::AuditRetention(a) => AdminAnswer::AuditRetention(Message::from_pb(a)?),
            Answer::SecretSet(c) => AdminAnswer::SecretSet(Message::from_pb(c)?),
            Answer::SecretList(a) => AdminAnswer::SecretList(Message::from_pb(a)?),
            Answer::SecretDelete(c) => AdminAnswer::SecretDelete(Message::from_pb(c)?),
            Answer::UpstreamAuthorize(a) => AdminAnswer::UpstreamAuthorize(Message::from_pb(a)?),
            Answer::UpstreamAuthorized(a) => AdminAnswer::UpstreamAuthorized(Message::from_pb(a)?),
            Answer::UpstreamDeauthorize(c) => {
                AdminAnswer::UpstreamDeauthorize(Message::from_pb(c)?)
            }
            Answer::GrantRenew(c) => AdminAnswer::GrantRenew(Message::from_pb(c)?),
            Answer::GrantList(a) => {
                AdminAnswer::GrantList(Field::from_field(a.grants, "GrantList.grants")?)
            }
            Answer::ManifestShow(a) => AdminAnswer::ManifestShow(Message::from_pb(a)?),
            Answer::ManifestDiff(a) => AdminAnswer::ManifestDiff(Message::from_pb(a)?),
            Answer::ManifestHash(a) => AdminAnswer::ManifestHash(Message::from_pb(a)?),
        })
    }
}
