//! Tests of `admin/answer.rs`.

use serde_json::json;

use super::*;
use crate::outcome::UpstreamRemoved;

#[test]
fn an_answer_travels_tagged_and_prints_as_its_own_fields() {
    let answer = AdminAnswer::ManifestHash(ManifestHash {
        version: 3,
        stub_hash: "ab".into(),
        tools: 2,
    });
    let wire = crate::wire::Message::to_pb(&answer);
    assert_eq!(
        <AdminAnswer as crate::wire::Message>::from_pb(wire).unwrap(),
        answer
    );
    assert_eq!(
        answer.to_json(),
        json!({"version": 3, "stub_hash": "ab", "tools": 2})
    );
}

#[test]
fn a_write_prints_its_result_and_where_it_landed() {
    let answer = AdminAnswer::UpstreamRemove(Committed {
        result: CommandResult::RemoveUpstream(UpstreamRemoved { id: "gh".into() }),
        manifest_version: 4,
        log_index: 9,
    });
    assert_eq!(
        answer.to_json(),
        json!({"result": {"id": "gh"}, "manifest_version": 4, "log_index": 9})
    );
}

#[test]
fn roles_and_verdicts_print_as_they_serialize() {
    for role in [
        MemberRole::Leader,
        MemberRole::Follower,
        MemberRole::Learner,
    ] {
        assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
    }
    for verdict in [Verdict::Ok, Verdict::Behind, Verdict::Mismatch] {
        assert_eq!(serde_json::to_value(verdict).unwrap(), verdict.as_str());
    }
}

#[test]
fn a_tenant_is_shown_with_key_ids_never_hashes() {
    let mut tenant = crate::tenant::TenantPatch::default().create("acme", 1);
    tenant.keys.insert(
        "k1".into(),
        crate::tenant::ApiKey {
            sha256: "f".repeat(64),
            created_ms: 2,
        },
    );
    let shown = serde_json::to_value(PublicTenant::from(&tenant)).unwrap();
    assert_eq!(shown["keys"], json!([{"key_id": "k1", "created_ms": 2}]));
    assert!(!shown.to_string().contains(&"f".repeat(64)));
}
