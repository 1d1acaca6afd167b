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
