//! Tests of `stash.rs`.

use serde_json::json;

use super::*;

#[test]
fn values_are_scoped_to_their_session() {
    let store = StashStore::default();
    store.set("a", "k", json!(1), None).unwrap();
    assert_eq!(store.get("a", "k").unwrap(), json!(1));
    assert_eq!(store.get("b", "k").unwrap(), Value::Null);
    assert_eq!(store.keys("b"), json!([]));
}

#[test]
fn quotas_are_enforced_and_named() {
    let limits = StashLimits {
        max_value_bytes: 100,
        max_session_bytes: 150,
        max_keys: 2,
        ..StashLimits::default()
    };
    let store = StashStore::new(limits);
    assert!(
        store
            .set("s", "big", json!("x".repeat(200)), None)
            .unwrap_err()
            .to_string()
            .contains("too large")
    );
    store.set("s", "a", json!("x".repeat(80)), None).unwrap();
    assert!(
        store
            .set("s", "b", json!("x".repeat(80)), None)
            .unwrap_err()
            .to_string()
            .contains("stash full")
    );
    store.set("s", "b", json!(1), None).unwrap();
    assert!(
        store
            .set("s", "c", json!(1), None)
            .unwrap_err()
            .to_string()
            .contains("at most 2 keys")
    );
    assert_eq!(store.delete("s", "a").unwrap(), json!(true));
    store.set("s", "c", json!(1), None).unwrap();
}

#[test]
fn one_tenant_cannot_hold_more_sessions_than_its_cap() {
    let store = StashStore::new(StashLimits {
        max_sessions_per_tenant: 2,
        ..StashLimits::default()
    });
    store.set("acme/1", "k", json!(1), None).unwrap();
    store.set("acme/2", "k", json!(1), None).unwrap();
    let refused = store
        .set("acme/3", "k", json!(1), None)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("2 sessions"), "{refused}");
    // Reading does not create a session, and another tenant is unaffected.
    assert_eq!(store.get("acme/4", "k").unwrap(), Value::Null);
    store.set("other/1", "k", json!(1), None).unwrap();
}

fn directory(tenants: &[(&str, Option<u64>)]) -> TenantDirectory {
    TenantDirectory::new(tenants.iter().map(|(id, bytes)| {
        let mut tenant: quiver_proto::tenant::Tenant = serde_json::from_value(json!({
            "id": id, "display_name": id, "created_ms": 0, "updated_ms": 0
        }))
        .unwrap();
        tenant.stash_bytes = *bytes;
        tenant
    }))
}

#[test]
fn a_tenant_at_its_quota_is_told_so_and_another_tenant_still_writes() {
    let store = StashStore::new(StashLimits {
        max_total_bytes: 8_000,
        ..StashLimits::default()
    });
    store.set_tenants(&directory(&[("greedy", None), ("quiet", None)]));
    // Many sessions of one tenant, each within its own limits.
    for session in 0..3 {
        store
            .set(
                &format!("greedy/{session}"),
                "k",
                json!("x".repeat(300)),
                None,
            )
            .unwrap();
    }
    let refused = store
        .set("greedy/9", "k", json!("x".repeat(300)), None)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("tenant `greedy` may keep 1000 bytes"),
        "{refused}"
    );
    store
        .set("quiet/1", "k", json!("x".repeat(900)), None)
        .unwrap();
    assert_eq!(store.held("greedy").bytes, 3 * 303);
}

#[test]
fn all_sessions_together_stay_under_the_global_cap() {
    // Quotas of 600 each on an executor of 1,000: 500 guaranteed each.
    let store = StashStore::new(StashLimits {
        max_total_bytes: 1_000,
        ..StashLimits::default()
    });
    store.set_tenants(&directory(&[("a", Some(600)), ("b", Some(600))]));
    store.set("a/1", "k", json!("x".repeat(480)), None).unwrap();
    let refused = store
        .set("a/2", "k", json!("x".repeat(100)), None)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("no room for this now"), "{refused}");
    store.set("b/1", "k", json!("x".repeat(480)), None).unwrap();
    // Freeing space makes room again; overwriting with less always fits.
    store.delete("a/1", "k").unwrap();
    store.set("a/2", "k", json!("x".repeat(100)), None).unwrap();
    store.set("b/1", "k", json!(1), None).unwrap();
}

fn snapshot(revision: i64, entries: &[(&str, Value)]) -> ReplicaSnapshot {
    ReplicaSnapshot {
        entries: entries
            .iter()
            .map(|(key, value)| ReplicaEntry {
                key: key.to_string(),
                value: value.clone(),
                ttl: Duration::from_secs(60),
            })
            .collect(),
        revision,
    }
}

#[test]
fn a_load_replaces_the_copy_unless_the_copy_is_newer() {
    let store = StashStore::default();
    store.set("s", "local", json!(0), None).unwrap();
    store
        .install("s", snapshot(5, &[("a", json!(1)), ("b", json!(2))]))
        .unwrap();
    assert_eq!(store.keys("s"), json!(["a", "b"]), "the replica wins");
    // A write of this copy landed at revision 9; a load read at 7 is older.
    store.set("s", "c", json!(3), None).unwrap();
    store.note_revision("s", 9);
    store.install("s", snapshot(7, &[("a", json!(1))])).unwrap();
    assert_eq!(store.keys("s"), json!(["a", "b", "c"]));
    store
        .install("s", snapshot(10, &[("c", json!(4))]))
        .unwrap();
    assert_eq!(store.keys("s"), json!(["c"]));
    assert_eq!(store.get("s", "c").unwrap(), json!(4));
}

#[test]
fn a_forgotten_session_frees_its_bytes_and_its_place() {
    let store = StashStore::new(StashLimits {
        max_total_bytes: 8_000,
        max_sessions_per_tenant: 1,
        ..StashLimits::default()
    });
    store
        .set("acme/1", "k", json!("x".repeat(900)), None)
        .unwrap();
    store.forget("acme/1");
    assert_eq!(store.get("acme/1", "k").unwrap(), Value::Null);
    store
        .set("acme/2", "k", json!("x".repeat(900)), None)
        .unwrap();
}

#[test]
fn expired_values_disappear() {
    let store = StashStore::default();
    store.set("s", "k", json!(1), Some(0)).unwrap();
    assert_eq!(store.get("s", "k").unwrap(), Value::Null);
}

#[test]
fn odd_keys_are_plain_keys_or_refused() {
    let store = StashStore::default();
    store.set("s", "../../etc/passwd", json!(1), None).unwrap();
    assert_eq!(store.get("other", "../../etc/passwd").unwrap(), Value::Null);
    assert!(store.set("s", "", json!(1), None).is_err());
    assert!(store.set("s", &"k".repeat(300), json!(1), None).is_err());
    assert!(store.set("s", "a\u{0}b", json!(1), None).is_err());
}
