//! `quiver ctl snapshot save|inspect`: backups of the control plane's state
//! (`quiver_control_plane::backup`).

use std::{
    path::Path,
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;
use quiver_control_plane::{
    backup::{self, BackupHeader},
    client::AdminClient,
};
use serde_json::json;

use super::args::Output;

/// Saves a backup taken on the leader to `file`, after checking it.
pub(super) async fn save(
    client: &mut AdminClient,
    file: &Path,
    output: Output,
) -> anyhow::Result<()> {
    let bytes = client.save_backup().await?;
    // What the leader sent is checked as a restore would check it.
    let header = backup::inspect(&bytes).context("the backup the leader sent")?;
    backup::write_file(file, &bytes)?;
    match output {
        Output::Json => say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "file": file.display().to_string(),
                "bytes": bytes.len(),
                "header": header,
            }))?
        ),
        Output::Table => {
            say!("saved {} ({} bytes)", file.display(), bytes.len());
            print_header(&header);
        }
    }
    Ok(())
}

/// Checks `file` and shows what it holds.
pub(super) fn inspect(file: &Path, output: Output) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let header = backup::inspect(&bytes).with_context(|| file.display().to_string())?;
    match output {
        Output::Json => say!("{}", serde_json::to_string_pretty(&header)?),
        Output::Table => {
            say!(
                "{}: a valid backup ({} bytes, checksum verified)",
                file.display(),
                bytes.len()
            );
            print_header(&header);
        }
    }
    Ok(())
}

fn print_header(header: &BackupHeader) {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let age = std::time::Duration::from_secs(now_ms.saturating_sub(header.taken_at_ms) / 1000);
    let counts = &header.counts;
    let rows = [
        ("format", header.format.to_string()),
        ("written by", format!("Quiver {}", header.quiver_version)),
        (
            "taken",
            format!(
                "{} ms since the epoch ({} ago)",
                header.taken_at_ms,
                humantime::format_duration(age)
            ),
        ),
        (
            "raft",
            format!(
                "index {}, term {}, leader node {}",
                header.raft_index, header.raft_term, header.leader
            ),
        ),
        ("manifest version", header.manifest_version.to_string()),
        ("tenants", counts.tenants.to_string()),
        ("api keys", counts.api_keys.to_string()),
        ("secrets", counts.secrets.to_string()),
        ("oauth grants", counts.oauth_grants.to_string()),
        ("upstreams", counts.upstreams.to_string()),
        ("tools", counts.tools.to_string()),
        ("audit records", counts.audit_records.to_string()),
        ("events", counts.events.to_string()),
        ("manifest versions", counts.manifest_versions.to_string()),
        (
            "sealed with",
            if header.sealed_with.is_empty() {
                "nothing sealed (no cluster key needed to restore)".to_string()
            } else {
                format!("cluster key {}", header.sealed_with.join(", "))
            },
        ),
    ];
    for (name, value) in rows {
        say!("  {name:<18} {value}");
    }
}
