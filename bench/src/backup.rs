//! `quiver bench backup`: saving and restoring the control plane's state at
//! scale (10,000 tenants each with a key and a sealed secret, 10,000 tools,
//! a full audit log): the file's size, `ctl snapshot save`'s path (a
//! linearizable read on the leader, the state encoded and streamed over
//! gRPC, checked and written), checking a file, and a restore (read,
//! checked, secrets opened with the cluster key, a fresh data directory
//! seeded, the node started until it leads and answers a consistent read).

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use quiver_control_plane::{
    ControlPlaneNode, NodeConfig, RaftTuning,
    admin::AdminRequest,
    backup,
    client::AdminClient,
    cluster_key::ClusterKey,
    command::{COMMAND_FORMAT, Command, Envelope},
    outcome::Outcome,
    state::ControlState,
};
use quiver_proto::clock::now_ms;
use quiver_proto::{
    audit::{AuditKind, AuditRecord},
    secret_value::SecretValue,
    upstream_config::UpstreamConfig,
};
use tokio_util::sync::CancellationToken;

use crate::{
    executor::percentile,
    tenants::{load_catalog, replicated_entries},
};

/// Servers the catalogue's tools are spread over.
const SERVERS: usize = 100;

/// The cluster key of the benchmark's state (base64 of bytes 0..32).
const BENCH_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// Arguments of `quiver bench backup`.
#[derive(Args, Debug)]
pub struct BackupBenchArgs {
    /// Tenants, each with an API key and a sealed secret.
    #[arg(long, default_value_t = 10_000)]
    tenants: usize,
    /// Tools in the catalogue (the catalogue replicated under distinct ids).
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Audit records (100,000 is the default retention's most).
    #[arg(long, default_value_t = 100_000)]
    audit_records: usize,
    /// Saves and restores measured.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Tool catalogue (any file `quiver dev --catalog` reads).
    #[arg(long, default_value = "../shared/datasets/livemcpbench/tools.json")]
    catalog: PathBuf,
}

fn apply(state: &mut ControlState, command: Command) -> anyhow::Result<()> {
    let name = command.name();
    match state.apply(&Envelope {
        format: COMMAND_FORMAT,
        at_ms: now_ms(),
        actor: "bench".into(),
        command,
    }) {
        Outcome::Applied { .. } => Ok(()),
        Outcome::Refused { message, .. } => anyhow::bail!("{name} refused: {message}"),
    }
}

/// The state the benchmark saves: every part at the size asked for.
fn populated(args: &BackupBenchArgs, key: &ClusterKey) -> anyhow::Result<ControlState> {
    let catalog = load_catalog(&args.catalog)?;
    // The tools on 100 servers (registry ids are at most 48 characters,
    // and each registered server is an upstream discovery keeps trying).
    let copies = replicated_entries(&catalog, args.tools);
    let mut entries: Vec<quiver_proto::manifest::ServerEntry> = (0..SERVERS.min(copies.len()))
        .map(|i| {
            let mut entry = copies[i].clone();
            entry.id = format!("server-{i:03}");
            entry.namespace = entry.id.clone();
            entry.tools.clear();
            entry
        })
        .collect();
    let servers = entries.len();
    for (i, copy) in copies.into_iter().enumerate() {
        for mut tool in copy.tools {
            // Copies of one server share tool names: make them unique.
            tool.name = format!("{}-{i}", tool.name);
            entries[i % servers].tools.push(tool);
        }
    }
    let mut state = ControlState::default();
    for entry in &entries {
        apply(
            &mut state,
            Command::PutUpstream {
                // Nothing answers there: discovery fails at once and
                // retries in the background, spawning nothing.
                upstream: UpstreamConfig::http(entry.id.clone(), "http://127.0.0.1:9/mcp"),
                quarantine: false,
                replace: false,
            },
        )?;
    }
    apply(&mut state, Command::RecordDiscovery { entries })?;
    for i in 0..args.tenants {
        let tenant = format!("tenant-{i:05}");
        apply(
            &mut state,
            Command::CreateTenant {
                id: tenant.clone(),
                patch: Default::default(),
            },
        )?;
        apply(
            &mut state,
            Command::IssueKey {
                tenant: tenant.clone(),
                key_id: format!("k{i:05}"),
                sha256: format!("{:064x}", i),
                limit: None,
            },
        )?;
        let secret = SecretValue::new(format!("token-of-{tenant}"));
        apply(
            &mut state,
            Command::SetSecret {
                tenant: tenant.clone(),
                name: "API_TOKEN".into(),
                sealed: key.seal(&tenant, "API_TOKEN", &secret)?,
            },
        )?;
    }
    let at = now_ms();
    let mut written = 0;
    while written < args.audit_records {
        let batch = (args.audit_records - written).min(1000);
        let records = (written..written + batch)
            .map(|i| {
                let n = i % args.tenants.max(1);
                AuditRecord {
                    edge: "edge-1".into(),
                    executor: "exec-1".into(),
                    tool: Some("server-000/search".into()),
                    arguments_sha256: Some(format!("{:064x}", i)),
                    latency_us: 1200,
                    ..AuditRecord::new(
                        AuditKind::Call,
                        &format!("tenant-{n:05}"),
                        &format!("key:k{n:05}"),
                        at,
                    )
                }
            })
            .collect();
        apply(&mut state, Command::AppendAudit { records })?;
        written += batch;
    }
    Ok(state)
}

/// A node of its own (one-node cluster) restored from `restore`.
async fn start_restored(
    data: PathBuf,
    key: Arc<ClusterKey>,
    restore: Arc<backup::Backup>,
) -> anyhow::Result<(
    Arc<ControlPlaneNode>,
    std::net::SocketAddr,
    CancellationToken,
)> {
    let stop = CancellationToken::new();
    let (node, addr) = ControlPlaneNode::start(
        NodeConfig {
            node_id: 1,
            listen: "127.0.0.1:0".parse()?,
            advertise: None,
            data,
            bootstrap: false,
            tls: None,
            tuning: RaftTuning::default(),
            cluster_key: Some(key),
            max_keys_per_tenant: quiver_control_plane::node::DEFAULT_MAX_KEYS_PER_TENANT,
            restore: Some(restore),
            backups: None,
        },
        stop.clone(),
    )
    .await?;
    anyhow::ensure!(
        node.wait_for_leader(Duration::from_secs(30))
            .await
            .is_some(),
        "the restored node elected no leader"
    );
    // A consistent read: the node serves.
    node.admin(AdminRequest::TenantList).await?;
    Ok((node, addr, stop))
}

/// Starts `quiver control-plane --restore backup` on the empty `data` as a
/// process of its own and times it until `quiver ctl tenant list` answers
/// from it; stops it after.
fn restore_process(
    exe: &std::path::Path,
    data: &std::path::Path,
    backup: &std::path::Path,
    key_file: &std::path::Path,
) -> anyhow::Result<Duration> {
    use std::io::BufRead as _;
    let t = Instant::now();
    let mut child = std::process::Command::new(exe)
        .args([
            "control-plane",
            "--node-id",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--data",
        ])
        .arg(data)
        .arg("--restore")
        .arg(backup)
        .arg("--cluster-key-file")
        .arg(key_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("the node's stdout")?;
    let mut banner = String::new();
    std::io::BufReader::new(stdout).read_line(&mut banner)?;
    let addr = banner
        .split("serving on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .with_context(|| format!("no address in the node's first line: {banner:?}"))?
        .to_string();
    let listed = std::process::Command::new(exe)
        .args(["ctl", "--endpoints", &addr, "-o", "json", "tenant", "list"])
        .output()?;
    let elapsed = t.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    anyhow::ensure!(
        listed.status.success(),
        "quiver ctl tenant list on the restored node: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    Ok(elapsed)
}

/// Runs the benchmark.
pub async fn run(args: BackupBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; use `cargo build --release --bin quiver --bin quiver-bench` for numbers"
        );
    }
    let key = Arc::new(ClusterKey::from_base64(BENCH_KEY, "bench")?);
    let started = Instant::now();
    let state = populated(&args, &key)?;
    eprintln!(
        "state built in {:.1} s: {} tenants, {} tools, {} audit records",
        started.elapsed().as_secs_f64(),
        state.tenants.len(),
        state
            .catalogue
            .values()
            .map(|s| s.tools.len())
            .sum::<usize>(),
        state.audit.records.len()
    );
    let dir = tempfile::tempdir()?;
    // The cluster to save from: seeded with the state (a restore itself).
    let seed = backup::decode(&backup::encode(&state, 1, 1, 1, now_ms())?)?;
    drop(state);
    let (node, addr, stop) =
        start_restored(dir.path().join("source"), key.clone(), Arc::new(seed)).await?;
    let file = dir.path().join("bench.qbackup");
    let mut saves = Vec::new();
    let mut size = 0;
    for _ in 0..args.runs {
        let t = Instant::now();
        let mut client = AdminClient::new(vec![addr.to_string()], None);
        let bytes = client.save_backup().await?;
        backup::inspect(&bytes)?;
        backup::write_file(&file, &bytes)?;
        saves.push(t.elapsed());
        size = bytes.len();
    }
    // The same through the real CLI, a process of its own.
    let exe = crate::quiver::binary()?;
    let mut cli_saves = Vec::new();
    for _ in 0..args.runs {
        let t = Instant::now();
        let output = std::process::Command::new(&exe)
            .args(["ctl", "--endpoints", &addr.to_string(), "snapshot", "save"])
            .arg(&file)
            .output()?;
        anyhow::ensure!(
            output.status.success(),
            "quiver ctl snapshot save: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        cli_saves.push(t.elapsed());
    }
    stop.cancel();
    node.shutdown().await;
    let key_file = dir.path().join("cluster.key");
    std::fs::write(&key_file, format!("{BENCH_KEY}\n"))?;
    let mut cli_restores = Vec::new();
    for run in 0..args.runs {
        cli_restores.push(restore_process(
            &exe,
            &dir.path().join(format!("cli-{run}")),
            &file,
            &key_file,
        )?);
    }
    let mut inspects = Vec::new();
    let mut restores = Vec::new();
    for run in 0..args.runs {
        let t = Instant::now();
        let bytes = std::fs::read(&file)?;
        backup::inspect(&bytes)?;
        inspects.push(t.elapsed());
        let t = Instant::now();
        let restored = backup::read(&file)?;
        restored.check_key(Some(&key))?;
        let (node, _, stop) = start_restored(
            dir.path().join(format!("restored-{run}")),
            key.clone(),
            Arc::new(restored),
        )
        .await?;
        restores.push(t.elapsed());
        stop.cancel();
        node.shutdown().await;
    }
    println!(
        "Backup file: {:.1} MiB ({size} bytes) for {} tenants (a key and a sealed secret each), {} tools, {} audit records.\n",
        size as f64 / (1024.0 * 1024.0),
        args.tenants,
        args.tools,
        args.audit_records
    );
    println!("| operation | p50 | min | max | runs |");
    println!("|---|---|---|---|---|");
    for (what, mut times) in [
        (
            "`ctl snapshot save` path (leader read, encode, gRPC stream, check, write)",
            saves,
        ),
        (
            "`ctl snapshot inspect` (read and verify the file)",
            inspects,
        ),
        (
            "restore (read, verify, open every secret, seed, start, lead, first read)",
            restores,
        ),
        (
            "`quiver ctl snapshot save FILE`, a process of its own",
            cli_saves,
        ),
        (
            "`quiver control-plane --restore FILE` until `quiver ctl tenant list` answers, processes of their own",
            cli_restores,
        ),
    ] {
        times.sort();
        let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {what} | {} | {} | {} | {} |",
            ms(percentile(&times, 0.5)),
            ms(times[0]),
            ms(times[times.len() - 1]),
            times.len()
        );
    }
    Ok(())
}
