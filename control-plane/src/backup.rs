//! Backups of the replicated state: one file an operator keeps elsewhere and
//! seeds a new cluster from (`quiver ctl snapshot save|inspect`,
//! `quiver control-plane --restore`, and the leader's periodic backups).
//!
//! The file is three parts, each checked when it is read:
//!
//! ```text
//! quiver control-plane backup\n          the magic line (a foreign file fails here)
//! {header: format, version, index, counts, payload length}\n
//! <payload: the state as a Raft snapshot holds it (JSON)>
//! \nsha256 <hex of everything above>\n    the trailer (a truncated or damaged file fails here)
//! ```
//!
//! Secrets and OAuth grants stay sealed with the cluster key: a backup is
//! no more secret than the data directory, and a restore needs that key
//! (it is checked against every sealed value before anything is written).

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{cluster_key::ClusterKey, state::ControlState};

/// The first line of every backup file.
pub const MAGIC: &[u8] = b"quiver control-plane backup\n";
/// The backup format this build writes (and the newest it reads).
pub const BACKUP_FORMAT: u32 = 1;
/// How the trailer starts.
const TRAILER: &[u8] = b"\nsha256 ";
/// Bytes of the trailer: its prefix, 64 hex digits and a newline.
const TRAILER_LEN: usize = TRAILER.len() + 64 + 1;
/// The file name extension of backups the leader writes.
pub const EXTENSION: &str = "qbackup";

/// What a backup file says about itself (no secret in it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupHeader {
    /// The file's format ([`BACKUP_FORMAT`] when written by this build).
    pub format: u32,
    /// The Quiver release that wrote it.
    pub quiver_version: String,
    /// When it was taken (the leader's clock, ms since the epoch).
    pub taken_at_ms: u64,
    /// The Raft log index of the last entry it holds.
    pub raft_index: u64,
    /// The term of that entry.
    pub raft_term: u64,
    /// The node that led when it was taken.
    pub leader: u64,
    /// The manifest version it holds.
    pub manifest_version: u64,
    /// Ids of the cluster keys its secrets and grants are sealed with (a
    /// restore needs each of them; `[]` when it holds none).
    pub sealed_with: Vec<String>,
    /// What it holds.
    pub counts: BackupCounts,
    /// Bytes of the payload.
    pub payload_bytes: u64,
}

/// How much of each kind a backup holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupCounts {
    /// Tenants.
    pub tenants: u64,
    /// API keys (hashes) of all tenants.
    pub api_keys: u64,
    /// Sealed tenant secrets.
    pub secrets: u64,
    /// Sealed OAuth grants.
    pub oauth_grants: u64,
    /// Registered upstreams.
    pub upstreams: u64,
    /// Tools in the catalogue.
    pub tools: u64,
    /// Audit records.
    pub audit_records: u64,
    /// Event log entries (drift, screening, admin).
    pub events: u64,
    /// Manifest versions remembered.
    pub manifest_versions: u64,
}

impl BackupCounts {
    fn of(state: &ControlState) -> BackupCounts {
        let n = |n: usize| n as u64;
        BackupCounts {
            tenants: n(state.tenants.len()),
            api_keys: n(state.tenants.values().map(|t| t.keys.len()).sum()),
            secrets: n(state.secrets.values().map(|s| s.len()).sum()),
            oauth_grants: n(state.oauth_grants.values().map(|g| g.len()).sum()),
            upstreams: n(state.upstreams.len()),
            tools: n(state.catalogue.values().map(|s| s.tools.len()).sum()),
            audit_records: n(state.audit.records.len()),
            events: n(state.events.len()),
            manifest_versions: n(state.history.len()),
        }
    }
}

/// Why a backup could not be made, read or used. Each message says what
/// to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// Not a backup file at all.
    #[error(
        "this is not a Quiver control-plane backup (it does not start with `quiver control-plane backup`); check the file name"
    )]
    Foreign,
    /// The file ends early.
    #[error(
        "the backup is truncated ({have} bytes, {want} expected): it was cut short while being written or copied; use another copy"
    )]
    Truncated {
        /// Bytes there are.
        have: u64,
        /// Bytes the header announces.
        want: u64,
    },
    /// The checksum does not match.
    #[error(
        "the backup is damaged (its SHA-256 is {computed}, the file says {recorded}): it changed after it was written; use another copy"
    )]
    Damaged {
        /// What the file says.
        recorded: String,
        /// What its bytes hash to.
        computed: String,
    },
    /// Written by a newer release.
    #[error(
        "the backup was written by Quiver {version} in format {format}; this release ({ours}) reads format {BACKUP_FORMAT} and older: restore with Quiver {version} or newer"
    )]
    TooNew {
        /// Its format.
        format: u32,
        /// Its release.
        version: String,
        /// This release.
        ours: &'static str,
    },
    /// The header or payload does not decode although the checksum holds.
    #[error("the backup does not decode ({0}); was it written by another program?")]
    Decode(String),
    /// Its secrets need a cluster key and none was given.
    #[error(
        "the backup holds secrets sealed with cluster key {ids}; give that key (--cluster-key-file FILE or QUIVER_CLUSTER_KEY), the one the backed-up cluster ran with"
    )]
    KeyMissing {
        /// Ids of the keys it needs.
        ids: String,
    },
    /// The key given does not open its secrets.
    #[error(
        "the cluster key given (id {given}) cannot open the backup's secret {what} (sealed with key {sealed_with}): give the key the backed-up cluster ran with"
    )]
    WrongKey {
        /// Id of the key given.
        given: String,
        /// Which sealed value failed (tenant and name, never its value).
        what: String,
        /// Id of the key it was sealed with.
        sealed_with: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The state could not be encoded.
    #[error("encoding the backup: {0}")]
    Encode(String),
}

/// A backup read back and checked: its header and the state it holds.
#[derive(Debug)]
pub struct Backup {
    /// What the file says about itself.
    pub header: BackupHeader,
    /// The state at [`BackupHeader::raft_index`].
    pub state: ControlState,
}

/// The bytes of a backup of `state`, as applied up to `raft_index` (of
/// `raft_term`) on `leader`, taken at `taken_at_ms`.
pub fn encode(
    state: &ControlState,
    raft_index: u64,
    raft_term: u64,
    leader: u64,
    taken_at_ms: u64,
) -> Result<Vec<u8>, BackupError> {
    let payload = crate::raft::state_machine::encode_snapshot(state)
        .map_err(|e| BackupError::Encode(e.to_string()))?;
    let header = BackupHeader {
        format: BACKUP_FORMAT,
        quiver_version: env!("CARGO_PKG_VERSION").to_string(),
        taken_at_ms,
        raft_index,
        raft_term,
        leader,
        manifest_version: state.manifest_version(),
        sealed_with: sealed_with(state),
        counts: BackupCounts::of(state),
        payload_bytes: payload.len() as u64,
    };
    let header = serde_json::to_vec(&header).map_err(|e| BackupError::Encode(e.to_string()))?;
    let mut file = Vec::with_capacity(MAGIC.len() + header.len() + 1 + payload.len() + TRAILER_LEN);
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&header);
    file.push(b'\n');
    file.extend_from_slice(&payload);
    let digest = hex::encode(Sha256::digest(&file));
    file.extend_from_slice(TRAILER);
    file.extend_from_slice(digest.as_bytes());
    file.push(b'\n');
    Ok(file)
}

/// The ids of the keys that sealed `state`'s secrets and grants.
fn sealed_with(state: &ControlState) -> Vec<String> {
    let secrets = state
        .secrets
        .values()
        .flat_map(|s| s.values().map(|v| &v.sealed));
    let grants = state
        .oauth_grants
        .values()
        .flat_map(|g| g.values().map(|v| &v.sealed));
    let mut ids: Vec<String> = secrets
        .chain(grants)
        .map(|sealed| sealed.key_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Reads the header of `bytes` and checks the whole file (magic, length,
/// checksum, format) without decoding the state.
pub fn inspect(bytes: &[u8]) -> Result<BackupHeader, BackupError> {
    Ok(split(bytes)?.0)
}

/// Reads and checks `bytes`, and decodes the state it holds.
pub fn decode(bytes: &[u8]) -> Result<Backup, BackupError> {
    let (header, payload) = split(bytes)?;
    let state = crate::raft::state_machine::decode_snapshot(payload)
        .map_err(|e| BackupError::Decode(crate::error_chain::with_causes(&e)))?;
    Ok(Backup { header, state })
}

/// Reads the backup file at `path` ([`decode`]).
pub fn read(path: &Path) -> Result<Backup, BackupError> {
    let bytes = std::fs::read(path).map_err(|source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes)
}

/// The header and payload of `bytes`, every check passed.
fn split(bytes: &[u8]) -> Result<(BackupHeader, &[u8]), BackupError> {
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return Err(BackupError::Foreign);
    };
    let have = bytes.len() as u64;
    let Some(end) = rest.iter().position(|b| *b == b'\n') else {
        return Err(BackupError::Truncated {
            have,
            want: have + 1,
        });
    };
    let header: BackupHeader = serde_json::from_slice(&rest[..end]).map_err(|e| {
        // A header cut short reads as a JSON syntax error at its end.
        BackupError::Decode(format!("its header: {e}"))
    })?;
    let payload_start = MAGIC.len() + end + 1;
    let want = (payload_start as u64)
        .saturating_add(header.payload_bytes)
        .saturating_add(TRAILER_LEN as u64);
    if have < want {
        return Err(BackupError::Truncated { have, want });
    }
    let body_end = payload_start + header.payload_bytes as usize;
    let trailer = &bytes[body_end..];
    let recorded = trailer
        .strip_prefix(TRAILER)
        .and_then(|t| t.strip_suffix(b"\n"))
        .and_then(|t| std::str::from_utf8(t).ok())
        .filter(|t| t.len() == 64)
        .ok_or_else(|| BackupError::Decode("its trailer is not `sha256 <hex>`".into()))?;
    let computed = hex::encode(Sha256::digest(&bytes[..body_end]));
    if computed != recorded {
        return Err(BackupError::Damaged {
            recorded: recorded.to_string(),
            computed,
        });
    }
    if header.format > BACKUP_FORMAT {
        return Err(BackupError::TooNew {
            format: header.format,
            version: header.quiver_version.clone(),
            ours: env!("CARGO_PKG_VERSION"),
        });
    }
    Ok((header, &bytes[payload_start..body_end]))
}

impl Backup {
    /// Checks that `key` opens every secret and grant the backup holds (a
    /// backup without any needs no key).
    pub fn check_key(&self, key: Option<&ClusterKey>) -> Result<(), BackupError> {
        let secrets = self.state.secrets.iter().flat_map(|(tenant, secrets)| {
            secrets
                .iter()
                .map(move |(name, s)| (tenant, name.clone(), &s.sealed))
        });
        let grants = self.state.oauth_grants.iter().flat_map(|(tenant, grants)| {
            grants.iter().map(move |(upstream, g)| {
                (tenant, crate::cluster_key::grant_name(upstream), &g.sealed)
            })
        });
        let mut sealed = secrets.chain(grants).peekable();
        if sealed.peek().is_none() {
            return Ok(());
        }
        let Some(key) = key else {
            return Err(BackupError::KeyMissing {
                ids: self.header.sealed_with.join(", "),
            });
        };
        for (tenant, name, value) in sealed {
            if key.open(tenant, &name, value).is_err() {
                return Err(BackupError::WrongKey {
                    given: key.id().to_string(),
                    what: format!("`{name}` of tenant `{tenant}`"),
                    sealed_with: value.key_id.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Where and how often the leader writes backups.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    /// The directory backups go to (made when missing).
    pub dir: PathBuf,
    /// Time between two backups.
    pub every: Duration,
    /// Backups kept; older ones are removed after a new one is written.
    pub keep: usize,
}

/// Writes `bytes` to `path` whole or not at all (a temporary file renamed
/// over it, synced before the rename).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    use std::io::Write as _;
    let io = |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    };
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("backup");
    let partial = path.with_file_name(format!(".{name}.partial"));
    let mut file = std::fs::File::create(&partial).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&partial, path).map_err(io)
}

/// The backups in `dir` the leader wrote, oldest first (their names sort by
/// Raft index, then time).
pub fn list_backups(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == EXTENSION)
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("quiver-"))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// The file name of a backup taken at `raft_index`, `taken_at_ms`.
pub fn file_name(raft_index: u64, taken_at_ms: u64) -> String {
    format!("quiver-{raft_index:020}-{taken_at_ms:016}.{EXTENSION}")
}

#[cfg(test)]
mod tests;
