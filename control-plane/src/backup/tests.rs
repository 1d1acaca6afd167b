//! Tests of `backup.rs`: a backup reads back as what was saved, and every
//! kind of bad file is refused with the error that says what to do.

use base64::{Engine, engine::general_purpose::STANDARD};
use quiver_proto::secret_value::SecretValue;

use super::*;
use crate::{
    command::{COMMAND_FORMAT, Command, Envelope},
    outcome::Outcome,
    raft::log_store::DataDir,
    raft::state_machine::StateMachine,
    state::RESTORE_VERSION_STEP,
};

fn key(byte: u8) -> ClusterKey {
    ClusterKey::from_base64(&STANDARD.encode([byte; 32]), "test").unwrap()
}

fn apply(state: &mut ControlState, command: Command) {
    let outcome = state.apply(&Envelope {
        format: COMMAND_FORMAT,
        at_ms: 1000,
        actor: "test".into(),
        command,
    });
    assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
}

/// Two tenants with a key each, one with a secret sealed by `sealing`.
fn state(sealing: &ClusterKey) -> ControlState {
    let mut state = ControlState::default();
    for tenant in ["acme", "globex"] {
        apply(
            &mut state,
            Command::CreateTenant {
                id: tenant.into(),
                patch: Default::default(),
            },
        );
        apply(
            &mut state,
            Command::IssueKey {
                tenant: tenant.into(),
                key_id: format!("{tenant}-k1"),
                sha256: "ab".repeat(32),
                limit: None,
            },
        );
    }
    let sealed = sealing
        .seal("acme", "API_TOKEN", &SecretValue::new("tok-1".into()))
        .unwrap();
    apply(
        &mut state,
        Command::SetSecret {
            tenant: "acme".into(),
            name: "API_TOKEN".into(),
            sealed,
        },
    );
    state
}

#[test]
fn a_backup_reads_back_as_the_state_it_was_taken_of() {
    let key = key(7);
    let original = state(&key);
    let bytes = encode(&original, 42, 3, 1, 5000).unwrap();
    let header = inspect(&bytes).unwrap();
    assert_eq!(header.format, BACKUP_FORMAT);
    assert_eq!(
        (header.raft_index, header.raft_term, header.leader),
        (42, 3, 1)
    );
    assert_eq!(header.counts.tenants, 2);
    assert_eq!(header.counts.api_keys, 2);
    assert_eq!(header.counts.secrets, 1);
    assert_eq!(header.sealed_with, vec![key.id().to_string()]);
    let backup = decode(&bytes).unwrap();
    assert_eq!(
        serde_json::to_value(&backup.state).unwrap(),
        serde_json::to_value(&original).unwrap()
    );
    backup.check_key(Some(&key)).unwrap();
    // No secret in the header, whatever it holds.
    let header_text = serde_json::to_string(&header).unwrap();
    assert!(!header_text.contains("tok-1") && !header_text.contains("ciphertext"));
}

#[test]
fn a_restore_needs_the_key_that_sealed_the_secrets() {
    let key = key(7);
    let backup = decode(&encode(&state(&key), 1, 1, 1, 0).unwrap()).unwrap();
    let missing = backup.check_key(None).unwrap_err();
    assert!(
        matches!(missing, BackupError::KeyMissing { .. }),
        "{missing}"
    );
    assert!(missing.to_string().contains(key.id()), "{missing}");
    let wrong = backup.check_key(Some(&self::key(8))).unwrap_err();
    assert!(matches!(wrong, BackupError::WrongKey { .. }), "{wrong}");
    assert!(
        wrong.to_string().contains("API_TOKEN") && !wrong.to_string().contains("tok-1"),
        "{wrong}"
    );
    // A backup holding no secret needs no key.
    let empty = decode(&encode(&ControlState::default(), 1, 1, 1, 0).unwrap()).unwrap();
    empty.check_key(None).unwrap();
}

#[test]
fn a_truncated_file_is_refused_at_every_length() {
    let bytes = encode(&state(&key(7)), 1, 1, 1, 0).unwrap();
    for cut in [
        MAGIC.len() + 5,
        MAGIC.len() + 200,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let error = inspect(&bytes[..cut]).unwrap_err();
        assert!(
            matches!(
                error,
                BackupError::Truncated { .. } | BackupError::Decode(_)
            ),
            "cut at {cut}: {error}"
        );
    }
    let error = inspect(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(matches!(
        error,
        BackupError::Decode(_) | BackupError::Truncated { .. }
    ));
    let error = inspect(&bytes[..bytes.len() / 2]).unwrap_err();
    assert!(matches!(error, BackupError::Truncated { .. }), "{error}");
    assert!(error.to_string().contains("another copy"), "{error}");
}

#[test]
fn a_changed_byte_anywhere_is_refused_as_damage() {
    let bytes = encode(&state(&key(7)), 1, 1, 1, 0).unwrap();
    let header_end = MAGIC.len()
        + bytes[MAGIC.len()..]
            .iter()
            .position(|b| *b == b'\n')
            .unwrap();
    // In the payload, and in the header (a count the JSON still reads).
    let mut in_payload = bytes.clone();
    in_payload[header_end + 40] ^= 0x01;
    let error = inspect(&in_payload).unwrap_err();
    assert!(matches!(error, BackupError::Damaged { .. }), "{error}");
    let text = String::from_utf8(bytes.clone()).unwrap();
    let forged = text.replacen("\"tenants\":2", "\"tenants\":3", 1);
    let error = inspect(forged.as_bytes()).unwrap_err();
    assert!(matches!(error, BackupError::Damaged { .. }), "{error}");
}

#[test]
fn a_foreign_file_is_refused() {
    let foreign: [&[u8]; 4] = [
        b"",
        b"SQLite format 3\0",
        b"{\"format\":1}",
        b"\x00\x01\x02",
    ];
    for foreign in foreign {
        let error = inspect(foreign).unwrap_err();
        assert!(matches!(error, BackupError::Foreign), "{error}");
    }
}

/// `bytes` with its header edited by `edit` and the checksum made again.
fn reseal(bytes: &[u8], edit: impl Fn(&mut BackupHeader)) -> Vec<u8> {
    let header_end = MAGIC.len()
        + bytes[MAGIC.len()..]
            .iter()
            .position(|b| *b == b'\n')
            .unwrap();
    let mut header: BackupHeader = serde_json::from_slice(&bytes[MAGIC.len()..header_end]).unwrap();
    edit(&mut header);
    let body_end = bytes.len() - TRAILER_LEN;
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&serde_json::to_vec(&header).unwrap());
    file.extend_from_slice(&bytes[header_end..body_end]);
    let digest = hex::encode(Sha256::digest(&file));
    file.extend_from_slice(TRAILER);
    file.extend_from_slice(digest.as_bytes());
    file.push(b'\n');
    file
}

#[test]
fn a_file_of_a_newer_release_is_refused_with_the_release_to_use() {
    let bytes = encode(&state(&key(7)), 1, 1, 1, 0).unwrap();
    assert!(
        inspect(&reseal(&bytes, |_| {})).is_ok(),
        "resealing alone keeps it valid"
    );
    let newer = reseal(&bytes, |h| {
        h.format = BACKUP_FORMAT + 1;
        h.quiver_version = "9.9.9".into();
    });
    let error = inspect(&newer).unwrap_err();
    assert!(matches!(error, BackupError::TooNew { .. }), "{error}");
    assert!(
        error.to_string().contains("Quiver 9.9.9 or newer"),
        "{error}"
    );
}

#[test]
fn a_restore_seeds_only_an_empty_data_directory_and_moves_the_manifest_version_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = DataDir::open(dir.path(), 1).unwrap();
    let mut state = state(&key(7));
    let before = state.manifest_version();
    state.begin_after_restore(2000, "restore", "restored".into());
    assert_eq!(
        state.manifest_version(),
        (before / RESTORE_VERSION_STEP + 1) * RESTORE_VERSION_STEP
    );
    crate::raft::state_machine::seed(&data, &state, 42, 1, "127.0.0.1:1").unwrap();
    let again = crate::raft::state_machine::seed(&data, &state, 42, 1, "127.0.0.1:1").unwrap_err();
    assert!(
        matches!(
            again,
            crate::raft::state_machine::SeedError::NotEmpty { .. }
        ),
        "{again}"
    );
    let machine = StateMachine::open(data).unwrap();
    let shared = machine.shared();
    assert_eq!(shared.last_applied().map(|l| l.index), Some(42));
    let restored = shared.lock();
    assert_eq!(restored.tenants.len(), 2);
    assert_eq!(restored.manifest_version(), state.manifest_version());
    assert_eq!(
        restored.events.back().map(|e| e.message.as_str()),
        Some("restored")
    );
}
