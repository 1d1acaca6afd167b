//! The child process of a stdio upstream: started with a clean environment in
//! a process group of its own, its stderr forwarded to the log, and the whole
//! group stopped at shutdown. Speaking MCP over its pipes is rmcp's job.

use std::{collections::BTreeMap, process::Stdio};

use quiver_proto::{references::ExpandError, secret_value::TenantSecrets};
use rmcp::transport::TokioChildProcess;

/// Variables a stdio upstream inherits from Quiver; everything else it gets
/// comes from its configured `env`.
const INHERITED: [&str; 5] = ["PATH", "HOME", "LANG", "TMPDIR", "RUST_LOG"];

/// Why a stdio upstream's process could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    /// A value of its `env` does not expand.
    #[error("env `{key}`: {source}")]
    Env { key: String, source: ExpandError },
    /// The program could not be started.
    #[error("cannot start `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
}

/// Starts `command` for upstream `id`; returns the transport over its pipes
/// and its process group. `env` values are expanded (`${VAR}`, and
/// `${tenant_secret:NAME}` from `secrets`) here, on the node that connects.
pub(crate) fn spawn(
    id: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&str>,
    secrets: Option<&TenantSecrets>,
) -> Result<(TokioChildProcess, Option<u32>), SpawnError> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear();
    for key in INHERITED {
        if let Ok(value) = std::env::var(key) {
            cmd.env(key, value);
        }
    }
    for (key, value) in env {
        let value =
            quiver_proto::references::expand_with_secrets(value, secrets).map_err(|source| {
                SpawnError::Env {
                    key: key.clone(),
                    source,
                }
            })?;
        cmd.env(key, value);
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Its own process group, so everything it starts can be stopped with it.
    #[cfg(unix)]
    cmd.process_group(0);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SpawnError::Start {
            command: command.to_string(),
            source,
        })?;
    let process_group = transport.id();
    if let Some(stderr) = stderr {
        tokio::spawn(forward_stderr(id.to_owned(), stderr));
    }
    Ok((transport, process_group))
}

async fn forward_stderr(id: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(upstream = %id, "stderr: {line}");
    }
}

/// Stops a stdio upstream's whole process group: SIGTERM, then SIGKILL for
/// whatever is still there after a grace period.
#[cfg(unix)]
pub(crate) async fn stop_process_group(group: u32) {
    use nix::{
        sys::signal::{Signal, killpg},
        unistd::Pid,
    };
    let Ok(raw) = i32::try_from(group) else {
        return;
    };
    let group = Pid::from_raw(raw);
    if killpg(group, Signal::SIGTERM).is_err() {
        return; // already gone
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    // Signal 0 asks whether any member is left.
    while killpg(group, None).is_ok() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _ = killpg(group, Signal::SIGKILL);
}

#[cfg(not(unix))]
pub(crate) async fn stop_process_group(_group: u32) {}
