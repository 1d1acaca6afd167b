//! Every operator request, and answers of every shape, come back from their
//! protobuf messages (encoded to bytes and decoded) as they went in: what
//! `quiver ctl` prints, `-o json` included, cannot change on the way.

use std::collections::BTreeMap;

use prost::Message as _;
use quiver_proto::audit::{AuditKind, AuditOutcome, AuditRecord, Decision};
use quiver_proto::finding::{Finding, HoldAt, Severity};
use quiver_proto::manifest::ValidationMode;
use quiver_proto::mode::Mode;
use quiver_proto::node_role::NodeRole;
use quiver_proto::tenant::StashUsage;
use quiver_proto::tool::ToolDef;
use quiver_proto::upstream_config::UpstreamConfig;
use quiver_proto::{secret_value::SecretValue, upstream_state::UpstreamState};

use super::{Message, WireError};
use crate::audit::{AuditQuery, AuditRetention};
use crate::outcome::{
    CommandResult, DiscoveryRecord, DriftApproved, KeyChanged, OAuthGrantChanged, SecretChanged,
    TenantDeleted, UpstreamPut, UpstreamRemoved,
};
use crate::records::{Event, EventKind, ManifestRecord, PendingDrift};
use crate::tenant::TenantPatch;
use crate::usage::{LeaseGranted, LeaseRequest, StashReport, TenantUsage};
use crate::*;

/// Through bytes and back.
fn again<M: Message>(value: &M) -> M
where
    M::Pb: prost::Message + Default,
{
    let bytes = value.to_pb().encode_to_vec();
    M::from_pb(M::Pb::decode(bytes.as_slice()).expect("decodes")).expect("reads")
}

fn patch() -> TenantPatch {
    TenantPatch {
        display_name: Some("Acme".into()),
        mode: Some("code".into()),
        servers: Some(vec!["gh".into()]),
        tools: Some(vec![]),
        tags: Some(vec!["paid".into()]),
        rate_limit_per_minute: Some(60),
        tool_rate_limits: Some(BTreeMap::from([("gh/*".into(), 5)])),
        audit_arguments: Some(true),
        self_service_keys: Some(true),
        validation: Some(String::new()),
        hold_findings: Some("medium".into()),
        stash_bytes: Some(1 << 20),
        stash_keys: Some(100),
        task_wall_ms: Some(60_000),
        budget: Some(12.5),
        prices: Some(BTreeMap::from([("gh/create_issue".into(), 0.25)])),
    }
}

fn stash() -> StashUsage {
    StashUsage {
        bytes: 10,
        keys: 2,
        quota_bytes: 100,
        quota_keys: 20,
        fleet: true,
    }
}

fn audit_record() -> AuditRecord {
    AuditRecord {
        id: 7,
        at_ms: 1_700,
        tenant: "acme".into(),
        caller: "key:k1".into(),
        edge: "edge-1".into(),
        executor: "exec-1".into(),
        kind: AuditKind::Call,
        tool: Some("gh/create_issue".into()),
        arguments_sha256: Some("ab".into()),
        arguments: Some(serde_json::json!({"title": "x", "n": 18446744073709551615u64})),
        decision: Decision::Denied,
        reason: Some("rate".into()),
        latency_us: 12,
        outcome: AuditOutcome::Error,
        script_sha256: None,
        task_id: Some("t1".into()),
    }
}

fn upstream() -> UpstreamConfig {
    let mut config = UpstreamConfig::http("gh", "https://example.invalid/mcp");
    config.tags = vec!["code".into()];
    config
}

fn finding() -> Finding {
    Finding {
        rule: "hidden-characters".into(),
        severity: Severity::High,
        field: "description".into(),
        start: 1,
        end: 4,
        excerpt: "\\u{200b}".into(),
    }
}

#[test]
fn every_request_comes_back_as_it_went() {
    let requests = vec![
        AdminRequest::ClusterInit,
        AdminRequest::ClusterStatus,
        AdminRequest::AddLearner {
            node_id: 2,
            addr: "127.0.0.1:7001".into(),
        },
        AdminRequest::Promote { node_id: 2 },
        AdminRequest::Remove { node_id: 3 },
        AdminRequest::TransferLeader { node_id: 4 },
        AdminRequest::Verify,
        AdminRequest::SetElection { enabled: false },
        AdminRequest::Fleet,
        AdminRequest::UpstreamAdd {
            upstream: upstream(),
            quarantine: true,
            replace: false,
        },
        AdminRequest::UpstreamList,
        AdminRequest::UpstreamShow { id: "gh".into() },
        AdminRequest::UpstreamRemove { id: "gh".into() },
        AdminRequest::UpstreamRefresh { id: None },
        AdminRequest::UpstreamRescreen {
            id: Some("gh".into()),
        },
        AdminRequest::UpstreamDrift {
            id: Some("gh".into()),
        },
        AdminRequest::UpstreamFindings { id: None },
        AdminRequest::UpstreamApprove {
            id: "gh".into(),
            tool: Some("create_issue".into()),
        },
        AdminRequest::TenantCreate {
            id: "acme".into(),
            patch: patch(),
        },
        AdminRequest::TenantList,
        AdminRequest::TenantShow { id: "acme".into() },
        AdminRequest::TenantUpdate {
            id: "acme".into(),
            patch: TenantPatch::default(),
        },
        AdminRequest::TenantDelete { id: "acme".into() },
        AdminRequest::KeyIssue {
            tenant: "acme".into(),
            requester: KeyRequester::Tenant,
        },
        AdminRequest::KeyRevoke {
            tenant: "acme".into(),
            key_id: "k1".into(),
            requester: KeyRequester::Operator,
        },
        AdminRequest::TenantUsage { id: "acme".into() },
        AdminRequest::BudgetLease {
            lease: LeaseRequest {
                tenant: "acme".into(),
                node: "exec-1".into(),
                want: 1.5,
                spent: 0.25,
                calls: 3,
                give_back: 0.5,
                stash: Some(stash()),
            },
        },
        AdminRequest::AuditAppend {
            records: vec![audit_record()],
        },
        AdminRequest::Audit {
            query: AuditQuery {
                tenant: Some("acme".into()),
                since_ms: Some(5),
                limit: None,
            },
        },
        AdminRequest::AuditRetention {
            set: Some(AuditRetention {
                max_age_days: 30,
                max_records: 1000,
            }),
        },
        AdminRequest::SecretSet {
            tenant: "acme".into(),
            name: "TOKEN".into(),
            value: SecretValue::new("s3cret".into()),
        },
        AdminRequest::SecretList {
            tenant: "acme".into(),
        },
        AdminRequest::SecretDelete {
            tenant: "acme".into(),
            name: "TOKEN".into(),
        },
        AdminRequest::ManifestShow { version: Some(3) },
        AdminRequest::ManifestDiff { from: 1, to: 3 },
        AdminRequest::ManifestHash,
        AdminRequest::UpstreamAuthorize {
            upstream: "gh".into(),
            tenant: "acme".into(),
            scopes: vec!["issues:write".into()],
        },
        AdminRequest::UpstreamAuthorized {
            url: SecretValue::new("https://q.example/oauth/callback?code=c&state=s".into()),
        },
        AdminRequest::UpstreamDeauthorize {
            upstream: "gh".into(),
            tenant: "acme".into(),
        },
        AdminRequest::GrantRenew {
            upstream: "gh".into(),
            tenant: "acme".into(),
        },
        AdminRequest::GrantList {
            tenant: Some("acme".into()),
        },
        AdminRequest::GrantList { tenant: None },
    ];
    assert_eq!(requests.len(), 42, "one of each operation");
    for request in &requests {
        assert_eq!(&again(request), request);
    }
}

fn committed(result: CommandResult) -> AdminAnswer {
    AdminAnswer::TenantUpdate(Committed {
        result,
        manifest_version: 9,
        log_index: 21,
    })
}

fn readiness() -> ReportedReadiness {
    ReportedReadiness {
        ready: Some(false),
        not_ready: "manifest: behind".into(),
        admin: "http://127.0.0.1:9".into(),
        grpc: String::new(),
        mcp: "http://127.0.0.1:8".into(),
    }
}

#[test]
fn answers_of_every_shape_come_back_as_they_went() {
    let mut tenant = TenantPatch::default().create("acme", 1);
    tenant.mode = Some(Mode::Search);
    tenant.hold_findings = Some(HoldAt::Never);
    tenant.validation = Some(ValidationMode::Strict);
    let mut public = PublicTenant::from(&tenant);
    public.keys.push(KeySummary {
        key_id: "k1".into(),
        created_ms: 2,
    });
    let verdict = NodeVerdict {
        node: "edge-1".into(),
        role: NodeRole::Edge,
        manifest_version: 3,
        stub_hash: "ab".into(),
        verdict: Verdict::Behind,
        age_ms: 10,
        reported_to: 1,
        readiness: readiness(),
    };
    let proposed = ToolDef {
        name: "create_issue".into(),
        title: None,
        description: "Creates".into(),
        input_schema: serde_json::json!({"type": "object", "properties": {"t": {"type": "string"}}}),
        output_schema: None,
        annotations: Some(serde_json::json!({"readOnlyHint": false})),
        meta: None,
    };
    let usage = TenantUsage {
        leased: 1.0,
        spent: 0.5,
        calls: 4,
        updated_ms: 8,
        stash: BTreeMap::from([(
            "exec-1".into(),
            StashReport {
                usage: stash(),
                at_ms: 7,
            },
        )]),
    };
    let answers = vec![
        AdminAnswer::ClusterStatus(ClusterStatus {
            leader: 1,
            term: 2,
            last_log_index: Some(30),
            last_applied: Some(29),
            snapshot: None,
            purged: Some(0),
            members: vec![MemberStatus {
                id: 2,
                addr: "127.0.0.1:7001".into(),
                role: MemberRole::Learner,
                matched_index: None,
                state: MemberReach::Down,
            }],
            manifest_version: 3,
            stub_hash: "ab".into(),
            fleet: vec![verdict.clone()],
        }),
        AdminAnswer::AddLearner(LearnerAdded {
            added: 2,
            log_index: 5,
        }),
        AdminAnswer::Promote(VoterPromoted {
            promoted: 2,
            log_index: 6,
        }),
        AdminAnswer::Remove(MemberRemoved {
            removed: 3,
            log_index: 7,
        }),
        AdminAnswer::Verify(FleetVerification {
            manifest_version: 3,
            stub_hash: "ab".into(),
            ok: false,
            disagree: vec!["edge-1".into()],
            nodes: vec![verdict],
        }),
        AdminAnswer::Fleet(vec![FleetMember {
            node: "exec-1".into(),
            role: NodeRole::Executor,
            manifest_version: 3,
            stub_hash: "ab".into(),
            age_ms: 4,
            reported_to: 1,
            readiness: ReportedReadiness::default(),
        }]),
        AdminAnswer::UpstreamList(vec![UpstreamSummary {
            id: "gh".into(),
            transport: "http: https://example.invalid/mcp".into(),
            tools: 12,
            pending: 1,
            quarantine: true,
            tags: vec!["code".into()],
            group: "dev".into(),
            state: None,
        }]),
        AdminAnswer::UpstreamShow(Box::new(UpstreamDetail {
            id: "gh".into(),
            transport: "http: https://example.invalid/mcp".into(),
            tools: vec![ToolSummary {
                name: "create_issue".into(),
                description: "Creates".into(),
            }],
            pending: Some(BTreeMap::from([(
                "create_issue".into(),
                PendingDrift {
                    proposed,
                    seen_ms: 3,
                },
            )])),
            quarantine: true,
            tags: vec![],
            group: String::new(),
            state: Some(UpstreamState::Down),
            config: upstream(),
        })),
        AdminAnswer::UpstreamDrift(DriftReport {
            events: vec![Event {
                id: 1,
                at_ms: 2,
                kind: EventKind::Drift,
                actor: "refresh".into(),
                upstream: Some("gh".into()),
                tool: None,
                message: "changed".into(),
            }],
            pending: BTreeMap::from([("gh".into(), vec!["create_issue".into()])]),
        }),
        AdminAnswer::UpstreamRescreen(Rescreened {
            upstreams: 3,
            changed: vec!["gh".into(), "mail".into()],
        }),
        AdminAnswer::UpstreamFindings(FindingsReport {
            tools: vec![ToolFindings {
                upstream: "gh".into(),
                tool: "create_issue".into(),
                status: FindingStatus::Held,
                held_since_ms: Some(4),
                findings: vec![finding()],
            }],
        }),
        AdminAnswer::TenantList(vec![public.clone()]),
        AdminAnswer::TenantShow(public),
        AdminAnswer::KeyIssue(IssuedKey {
            tenant: "acme".into(),
            key_id: "k1".into(),
            key: "qk_secret".into(),
        }),
        AdminAnswer::TenantUsage(UsageReport {
            tenant: "acme".into(),
            budget: None,
            leased: 1.0,
            spent: 0.5,
            calls: 4,
            remaining: Some(0.5),
            updated_ms: 9,
            stash_bytes: 10,
            stash_keys: 2,
            stash_quota_bytes: None,
            stash_quota_keys: Some(20),
            stash_executors: 1,
        }),
        AdminAnswer::BudgetLease(LeaseGranted {
            tenant: "acme".into(),
            granted: 0.5,
            budget: Some(2.0),
            usage: usage.clone(),
        }),
        AdminAnswer::Audit(vec![audit_record()]),
        AdminAnswer::SecretList(SecretList {
            tenant: "acme".into(),
            secrets: vec![SecretSummary {
                name: "TOKEN".into(),
                updated_ms: 3,
            }],
        }),
        AdminAnswer::ManifestShow(ManifestShown::Kept(ManifestRecord {
            version: 2,
            stub_hash: "cd".into(),
            at_ms: 1,
            tools: BTreeMap::from([(
                "gh".into(),
                BTreeMap::from([("create_issue".into(), "ef".into())]),
            )]),
        })),
        AdminAnswer::ManifestShow(ManifestShown::Current(ManifestSummary {
            version: 3,
            stub_hash: "ab".into(),
            servers: vec![ServerSummary {
                id: "gh".into(),
                tools: 1,
                stub_hash: "12".into(),
            }],
            tools: 1,
        })),
        committed(CommandResult::Nothing),
        committed(CommandResult::PutUpstream(UpstreamPut {
            id: "gh".into(),
            replaced: true,
        })),
        committed(CommandResult::RemoveUpstream(UpstreamRemoved {
            id: "gh".into(),
        })),
        committed(CommandResult::RecordDiscovery(vec![
            DiscoveryRecord::Recorded {
                upstream: "gh".into(),
                changed: true,
            },
            DiscoveryRecord::Skipped {
                upstream: "fs".into(),
                reason: "stale".into(),
            },
        ])),
        committed(CommandResult::ApproveDrift(DriftApproved {
            upstream: "gh".into(),
            approved: vec!["create_issue".into()],
            findings: BTreeMap::from([("create_issue".into(), vec![finding()])]),
        })),
        committed(CommandResult::CreateTenant(Box::new(tenant))),
        committed(CommandResult::DeleteTenant(TenantDeleted {
            id: "acme".into(),
        })),
        committed(CommandResult::RevokeKey(KeyChanged {
            tenant: "acme".into(),
            key_id: "k1".into(),
        })),
        committed(CommandResult::LeaseBudget(LeaseGranted {
            tenant: "acme".into(),
            granted: 0.0,
            budget: None,
            usage,
        })),
        committed(CommandResult::AppendAudit(Some((3, 9)))),
        committed(CommandResult::AppendAudit(None)),
        committed(CommandResult::DeleteSecret(SecretChanged {
            tenant: "acme".into(),
            name: "TOKEN".into(),
        })),
        AdminAnswer::UpstreamAuthorize(AuthorizationLink {
            upstream: "gh".into(),
            tenant: "acme".into(),
            link: "https://as.example/authorize?state=s".into(),
            expires_in_s: 600,
        }),
        AdminAnswer::UpstreamAuthorized(OAuthGrantChanged {
            tenant: "acme".into(),
            upstream: "gh".into(),
        }),
        AdminAnswer::GrantList(vec![GrantSummary {
            tenant: "acme".into(),
            upstream: "gh".into(),
            scopes: vec!["issues:read".into()],
            expires_at_ms: Some(9),
            renewable: true,
            granted_ms: 1,
            updated_ms: 2,
        }]),
        AdminAnswer::GrantRenew(Committed {
            result: CommandResult::PutOAuthGrant(OAuthGrantChanged {
                tenant: "acme".into(),
                upstream: "gh".into(),
            }),
            manifest_version: 3,
            log_index: 7,
        }),
        committed(CommandResult::DropOAuthGrant(OAuthGrantChanged {
            tenant: "acme".into(),
            upstream: "gh".into(),
        })),
    ];
    for answer in &answers {
        let back = again(answer);
        assert_eq!(&back, answer);
        assert_eq!(back.to_json(), answer.to_json(), "`-o json` is unchanged");
    }
}

#[test]
fn a_request_or_answer_without_an_operation_is_refused_by_name() {
    let empty = quiver_proto::pb::AdminRequest { call: None };
    assert!(matches!(
        AdminRequest::from_pb(empty),
        Err(WireError::Missing("AdminRequest.call"))
    ));
    let status = quiver_proto::pb::AdminAnswer {
        answer: Some(quiver_proto::pb::admin_answer::Answer::Verify(
            quiver_proto::pb::FleetVerification {
                nodes: vec![quiver_proto::pb::NodeVerdict {
                    role: quiver_proto::pb::NodeRole::Edge as i32,
                    verdict: 99,
                    readiness: Some(Default::default()),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )),
    };
    let error = AdminAnswer::from_pb(status).unwrap_err();
    assert!(error.to_string().contains("NodeVerdict.verdict"), "{error}");
}
