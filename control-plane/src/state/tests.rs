//! Tests of `state/mod.rs`.

use serde_json::json;

use super::*;

fn envelope(command: Command) -> Envelope {
    Envelope {
        format: COMMAND_FORMAT,
        at_ms: 1000,
        actor: "test".into(),
        command,
    }
}

fn tool(name: &str, param: &str) -> ToolDef {
    serde_json::from_value(json!({
        "name": name,
        "description": format!("{name} things"),
        "inputSchema": {"type": "object", "properties": {param: {"type": "string"}}},
    }))
    .unwrap()
}

fn discovered(id: &str, tools: Vec<ToolDef>) -> Command {
    Command::RecordDiscovery {
        entries: vec![ServerEntry::new(id, tools)],
    }
}

fn with_upstream(quarantine: bool) -> ControlState {
    let mut state = ControlState::default();
    let upstream = UpstreamConfig::stdio("gh", "true", vec![]);
    let outcome = state.apply(&envelope(Command::PutUpstream {
        upstream,
        quarantine,
        replace: false,
    }));
    assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
    state
}

#[test]
fn discovery_commits_a_new_manifest_version_only_on_change() {
    let mut state = with_upstream(false);
    assert_eq!(state.manifest_version(), 0);
    state.apply(&envelope(discovered("gh", vec![tool("search", "q")])));
    assert_eq!(state.manifest_version(), 1);
    state.apply(&envelope(discovered("gh", vec![tool("search", "q")])));
    assert_eq!(state.manifest_version(), 1, "same tools, same version");
    state.apply(&envelope(discovered("gh", vec![tool("search", "query")])));
    assert_eq!(state.manifest_version(), 2);
    let drift: Vec<&Event> = state
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Drift)
        .collect();
    assert_eq!(drift.len(), 1);
    assert_eq!(drift[0].tool.as_deref(), Some("search"));
}

#[test]
fn quarantine_keeps_the_old_schema_until_approved() {
    let mut state = with_upstream(true);
    state.apply(&envelope(discovered("gh", vec![tool("search", "q")])));
    let before = state.manifest().stub_hash;
    state.apply(&envelope(discovered("gh", vec![tool("search", "query")])));
    assert_eq!(state.manifest().stub_hash, before, "change held back");
    assert!(state.pending["gh"].contains_key("search"));
    // Seen again: still pending, no second drift event.
    state.apply(&envelope(discovered("gh", vec![tool("search", "query")])));
    assert_eq!(
        state
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Drift)
            .count(),
        1
    );
    let outcome = state.apply(&envelope(Command::ApproveDrift {
        upstream: "gh".into(),
        tool: None,
    }));
    assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
    assert_ne!(state.manifest().stub_hash, before);
    assert!(state.pending.is_empty());
    let schema = &state.catalogue["gh"].tools[0].input_schema;
    assert!(schema["properties"].get("query").is_some());
}

#[test]
fn refusals_name_what_exists_and_change_nothing() {
    let mut state = with_upstream(false);
    let before = serde_json::to_string(&state).unwrap();
    let Outcome::Refused { code, message } = state.apply(&envelope(Command::RemoveUpstream {
        id: "gitlab".into(),
    })) else {
        panic!("removing an unknown upstream must be refused");
    };
    assert_eq!(code, RefusalCode::NotFound);
    assert!(message.contains("registered: gh"), "{message}");
    assert_eq!(serde_json::to_string(&state).unwrap(), before);
}

#[test]
fn newer_entry_formats_are_refused_not_misread() {
    let mut state = ControlState::default();
    let mut entry = envelope(Command::DeleteTenant { id: "x".into() });
    entry.format = COMMAND_FORMAT + 1;
    assert!(matches!(
        state.apply(&entry),
        Outcome::Refused { code, .. } if code == RefusalCode::Unsupported
    ));
}

#[test]
fn a_snapshot_round_trip_gives_the_same_manifest_hash() {
    let mut state = with_upstream(false);
    state.apply(&envelope(discovered(
        "gh",
        vec![tool("a", "x"), tool("b", "y")],
    )));
    let bytes = serde_json::to_vec(&state).unwrap();
    let mut restored: ControlState = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(restored.manifest().stub_hash, state.manifest().stub_hash);
    assert_eq!(restored.manifest().version, state.manifest().version);
}

fn key(tenant: &str, n: usize, limit: Option<u32>) -> Command {
    Command::IssueKey {
        tenant: tenant.into(),
        key_id: format!("k{n}"),
        sha256: format!("{n:064x}"),
        limit,
    }
}

#[test]
fn a_tenant_holds_at_most_its_key_limit() {
    let mut state = ControlState::default();
    state.apply(&envelope(Command::CreateTenant {
        id: "acme".into(),
        patch: TenantPatch::default(),
    }));
    for n in 0..3 {
        let outcome = state.apply(&envelope(key("acme", n, Some(3))));
        assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
    }
    let Outcome::Refused { code, message } = state.apply(&envelope(key("acme", 3, Some(3)))) else {
        panic!("a fourth key was issued");
    };
    assert_eq!(code, RefusalCode::LimitReached);
    assert!(message.contains("revoke one"), "{message}");
    assert_eq!(state.tenants["acme"].keys.len(), 3);
    // Revoking one makes room.
    state.apply(&envelope(Command::RevokeKey {
        tenant: "acme".into(),
        key_id: "k0".into(),
    }));
    let outcome = state.apply(&envelope(key("acme", 4, Some(3))));
    assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
    // Entries written before the limit existed keep their meaning.
    let old = Envelope {
        format: 1,
        ..envelope(key("acme", 5, None))
    };
    assert!(matches!(state.apply(&old), Outcome::Applied { .. }));
    assert_eq!(state.tenants["acme"].keys.len(), 4);
}

#[test]
fn drift_history_survives_any_amount_of_admin_activity() {
    let mut state = with_upstream(false);
    state.apply(&envelope(discovered("gh", vec![tool("search", "q")])));
    state.apply(&envelope(discovered("gh", vec![tool("search", "query")])));
    let drift = |state: &ControlState| {
        state
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Drift)
            .count()
    };
    assert_eq!(drift(&state), 1);
    state.apply(&envelope(Command::CreateTenant {
        id: "acme".into(),
        patch: TenantPatch::default(),
    }));
    for n in 0..(EVENT_LOG_LIMIT * 3) {
        state.apply(&envelope(key("acme", n, None)));
        state.apply(&envelope(Command::RevokeKey {
            tenant: "acme".into(),
            key_id: format!("k{n}"),
        }));
    }
    assert_eq!(drift(&state), 1, "the drift event is still there");
    let admin = state
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Admin)
        .count();
    assert_eq!(
        admin, EVENT_LOG_LIMIT,
        "admin events keep to their own limit"
    );
    // The newest admin events are the ones kept.
    assert!(
        state
            .events
            .back()
            .is_some_and(|e| e.message.contains(&format!("k{}", EVENT_LOG_LIMIT * 3 - 1))),
        "{:?}",
        state.events.back()
    );
}
