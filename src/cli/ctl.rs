//! `quiver ctl`: the operator CLI. Talks gRPC to any control-plane node and
//! follows the leader by itself; prints tables, or JSON with `-o json`.
//! `ctl search` is the exception: search's outcome signals are kept by each
//! edge, so it asks an edge over HTTP (`--edge`).

use quiver_control_plane::{
    admin::{AdminAnswer, AdminRequest},
    client::AdminClient,
    raft::network::ClusterTls,
};

/// `println!` that ignores a closed stdout (`quiver ctl … | head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod args;
mod render;
mod request;
mod search;
mod secret_input;
mod snapshot;

pub use args::CtlArgs;
use args::{ClusterCommand, CtlCommand, Output, SnapshotCommand};
use render::Shown;

/// How often `audit --wait` asks again.
const AUDIT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Runs one command; a non-zero exit carries an operator-readable reason.
pub async fn run(args: CtlArgs) -> anyhow::Result<()> {
    let command = match args.command {
        CtlCommand::Search(search) => return search::search_signals(search, args.output).await,
        CtlCommand::Snapshot(SnapshotCommand::Inspect { file }) => {
            return snapshot::inspect(&file, args.output);
        }
        other => other,
    };
    let tls = ClusterTls::from_flags(
        args.tls_ca.as_ref(),
        args.tls_cert.as_ref(),
        args.tls_key.as_ref(),
    )
    .map(|t| t.load())
    .transpose()?;
    let endpoints: Vec<String> = args
        .endpoints
        .iter()
        .map(|e| e.trim().trim_start_matches("http://").to_string())
        .filter(|e| !e.is_empty())
        .collect();
    if endpoints.is_empty() {
        anyhow::bail!("--endpoints is empty; give at least one control-plane node as host:port");
    }
    let shown = match command {
        CtlCommand::Cluster(ClusterCommand::Members) => Shown::Members,
        _ => Shown::Whole,
    };
    let etcd_members =
        matches!(command, CtlCommand::Cluster(ClusterCommand::Status)) && !args.etcd.is_empty();
    let wait = match &command {
        CtlCommand::Audit(audit) => audit.wait,
        _ => None,
    };
    let mut client = AdminClient::new(endpoints, tls);
    if let CtlCommand::Snapshot(SnapshotCommand::Save { file }) = &command {
        return snapshot::save(&mut client, file, args.output).await;
    }
    let request = request::request_of(command)?;
    let mut answer = if matches!(request, AdminRequest::ClusterInit) {
        client.call_here(&request).await?
    } else {
        client.call(&request).await?
    };
    // `audit --wait`: ask again until a record matches or the wait is over.
    if let Some(wait) = wait {
        let deadline = tokio::time::Instant::now() + wait;
        while matches!(&answer, AdminAnswer::Audit(records) if records.is_empty())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(AUDIT_POLL).await;
            answer = client.call(&request).await?;
        }
    }
    if etcd_members {
        // What etcd lists, beside what the control plane heard: a member
        // cut off from the control plane still shows here, and the reverse.
        let members = quiver_fleet::membership::members(&args.etcd)
            .await
            .map_err(|e| anyhow::anyhow!("etcd at {}: {e}", args.etcd.join(",")))?;
        let canonical = match &answer {
            AdminAnswer::ClusterStatus(status) => status.stub_hash.clone(),
            _ => String::new(),
        };
        match args.output {
            Output::Json => render::print_json_with_etcd(&answer, &members)?,
            Output::Table => {
                render::print_table(&answer, shown);
                render::etcd_members(&members, &canonical);
            }
        }
        return Ok(());
    }
    match args.output {
        Output::Json => render::print_json(&answer, shown)?,
        Output::Table => render::print_table(&answer, shown),
    }
    if let AdminAnswer::Verify(verification) = &answer
        && !verification.ok
    {
        anyhow::bail!(
            "stub hashes disagree on: {}",
            verification.disagree.join(", ")
        );
    }
    Ok(())
}
