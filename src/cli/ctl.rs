//! `quiver ctl`: the operator CLI. Talks gRPC to any control-plane node and
//! follows the leader by itself; prints tables, or JSON with `-o json`.
//! `ctl search` is the exception: search's outcome signals are kept by each
//! edge, so it asks an edge over HTTP (`--edge`).

use std::{collections::BTreeMap, path::PathBuf};

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use quiver_control_plane::{
    admin::AdminRequest,
    client::{AdminClient, ClientError},
    raft::network::ClusterTls,
    tenant::TenantPatch,
};
use quiver_proto::manifest::ValidationMode;
use quiver_upstream::{Transport, UpstreamConfig};
use serde_json::Value;

/// `println!` that ignores a closed stdout (`quiver ctl … | head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Arguments of `quiver ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// Control-plane nodes, `host:port` separated by commas; any member will do.
    #[arg(
        long,
        global = true,
        env = "QUIVER_CTL_ENDPOINTS",
        default_value = "127.0.0.1:7400",
        value_delimiter = ','
    )]
    endpoints: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// CA certificate (PEM) when the cluster uses mTLS.
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_CA", requires_all = ["tls_cert", "tls_key"])]
    tls_ca: Option<PathBuf>,
    /// Client certificate (PEM).
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// Client key (PEM).
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_KEY")]
    tls_key: Option<PathBuf>,
    #[command(subcommand)]
    command: CtlCommand,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
enum CtlCommand {
    /// Cluster membership and health.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Downstream MCP servers.
    #[command(subcommand)]
    Upstream(UpstreamCommand),
    /// Tenants and their policy.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Tenants' API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manifest versions.
    #[command(subcommand)]
    Manifest(ManifestCommand),
    /// What searches led to, per tenant (kept by each edge; asks `--edge`).
    #[command(subcommand)]
    Search(SearchCommand),
}

#[derive(Subcommand, Debug)]
enum SearchCommand {
    /// Zero-hit queries and tools searched for but never called.
    Stats {
        /// Only this tenant (default: every tenant with signals).
        #[arg(long)]
        tenant: Option<String>,
        #[command(flatten)]
        edge: EdgeAddress,
    },
    /// Forget everything a tenant's searches and calls taught the ranking.
    Reset {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        #[command(flatten)]
        edge: EdgeAddress,
    },
}

#[derive(Args, Debug)]
struct EdgeAddress {
    /// The edge to ask, on this machine (it answers loopback only):
    /// `host:port`, `http(s)://host:port`, or its MCP URL.
    #[arg(long, env = "QUIVER_CTL_EDGE", default_value = "http://127.0.0.1:8080")]
    edge: String,
}

#[derive(Subcommand, Debug)]
enum ClusterCommand {
    /// Make the (fresh) node at the first endpoint a one-node cluster.
    Init,
    /// Leader, term and members.
    Status,
    /// Members with their roles and addresses.
    Members,
    /// Add a node as a learner; it catches up before it can be promoted.
    AddLearner {
        /// The new node's id.
        #[arg(long)]
        node_id: u64,
        /// Its gRPC address.
        #[arg(long)]
        addr: String,
    },
    /// Make a learner a voter.
    Promote {
        /// Node id.
        node_id: u64,
    },
    /// Remove a node.
    Remove {
        /// Node id.
        node_id: u64,
    },
    /// Hand leadership to another voter.
    TransferLeader {
        /// Node id.
        node_id: u64,
    },
    /// Compare every edge's and executor's stub hash with the canonical one.
    Verify,
}

#[derive(Subcommand, Debug)]
enum UpstreamCommand {
    /// Register an upstream (stdio command or Streamable HTTP URL, or a TOML file).
    Add(Box<UpstreamAddArgs>),
    /// List upstreams.
    List,
    /// One upstream: settings, tools, pending changes.
    Show {
        /// Upstream id.
        id: String,
    },
    /// Remove an upstream and its tools.
    Remove {
        /// Upstream id.
        id: String,
    },
    /// Re-list tools now.
    Refresh {
        /// Upstream id (all when absent).
        id: Option<String>,
    },
    /// Schema drift events and quarantined changes.
    Drift {
        /// Only this upstream.
        id: Option<String>,
    },
    /// Accept quarantined schema changes.
    Approve {
        /// Upstream id.
        id: String,
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
    },
}

#[derive(Args, Debug)]
struct UpstreamAddArgs {
    /// Upstream id (`[a-zA-Z0-9_-]`); the default namespace of its tools.
    id: Option<String>,
    /// Read the upstream from a TOML file (the `[[upstream]]` keys of quiver.toml).
    #[arg(long, conflicts_with_all = ["command", "url"])]
    file: Option<PathBuf>,
    /// Program to start (stdio transport).
    #[arg(long, conflicts_with = "url")]
    command: Option<String>,
    /// An argument of the program (repeat).
    #[arg(long = "arg", allow_hyphen_values = true)]
    args: Vec<String>,
    /// `KEY=VALUE` for the program's environment; values may be `${SECRET}` references.
    #[arg(long = "env")]
    env: Vec<String>,
    /// Streamable HTTP endpoint.
    #[arg(long)]
    url: Option<String>,
    /// `Name=Value` header; values may be `${SECRET}` references.
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Exposed-name prefix (default: the id).
    #[arg(long)]
    namespace: Option<String>,
    /// One-line description for code mode's `list`.
    #[arg(long)]
    description: Option<String>,
    /// Tag (repeat).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Group.
    #[arg(long)]
    group: Option<String>,
    /// Argument validation: schema, strict or off.
    #[arg(long)]
    validation: Option<String>,
    /// Hold back schema changes until `upstream approve`.
    #[arg(long)]
    quarantine: bool,
    /// Replace an upstream with the same id.
    #[arg(long)]
    replace: bool,
}

#[derive(Subcommand, Debug)]
enum TenantCommand {
    /// Create a tenant.
    Create {
        /// Tenant id.
        id: String,
        #[command(flatten)]
        patch: TenantFlags,
    },
    /// List tenants.
    List,
    /// One tenant.
    Show {
        /// Tenant id.
        id: String,
    },
    /// Change a tenant.
    Update {
        /// Tenant id.
        id: String,
        #[command(flatten)]
        patch: TenantFlags,
    },
    /// Delete a tenant and its keys.
    Delete {
        /// Tenant id.
        id: String,
    },
}

#[derive(Args, Debug)]
struct TenantFlags {
    /// Name shown to operators.
    #[arg(long)]
    display_name: Option<String>,
    /// passthrough, search or code ("" for the edge's default).
    #[arg(long)]
    mode: Option<String>,
    /// Visible servers by glob (repeat; replaces the list).
    #[arg(long = "server")]
    servers: Vec<String>,
    /// Visible tools by `<server>/<tool>` glob (repeat; replaces the list).
    #[arg(long = "tool")]
    tools: Vec<String>,
    /// Servers with this tag are visible (repeat; replaces the list).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Tool calls per minute (0 clears).
    #[arg(long)]
    rate_limit: Option<u32>,
    /// Budget (negative clears).
    #[arg(long, allow_hyphen_values = true)]
    budget: Option<f64>,
    /// `GLOB=PRICE` per call (repeat; a negative price removes the entry).
    #[arg(long = "price", allow_hyphen_values = true)]
    prices: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum KeyCommand {
    /// Issue an API key for a tenant; it is printed once and never again.
    Issue {
        /// Tenant id.
        tenant: String,
    },
    /// Revoke an API key.
    Revoke {
        /// Tenant id.
        tenant: String,
        /// Key id.
        key_id: String,
    },
}

#[derive(Subcommand, Debug)]
enum ManifestCommand {
    /// A manifest version (default: the current one).
    Show {
        /// Version.
        version: Option<u64>,
    },
    /// Tools added, removed and changed between two versions.
    Diff {
        /// Older version.
        from: u64,
        /// Newer version.
        to: u64,
    },
    /// The current version and its stub hash.
    Hash,
}

/// Runs one command; a non-zero exit carries an operator-readable reason.
pub async fn run(args: CtlArgs) -> anyhow::Result<()> {
    let command = match args.command {
        CtlCommand::Search(search) => return search_signals(search, args.output).await,
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
    let mut client = AdminClient::new(endpoints, tls);
    let (request, view) = request_of(command)?;
    let answer = if matches!(request, AdminRequest::ClusterInit) {
        client.call_here(&request).await
    } else {
        client.call(&request).await
    };
    let answer = answer.map_err(explain)?;
    if args.output == Output::Json {
        let shown = match view {
            View::Members => answer.get("members").cloned().unwrap_or(Value::Null),
            _ => answer.clone(),
        };
        say!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        print_table(view, &answer);
    }
    if view == View::Verify && answer.get("ok") != Some(&Value::Bool(true)) {
        anyhow::bail!(
            "stub hashes disagree on: {}",
            answer["disagree"]
                .as_array()
                .map(|a| a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn explain(error: ClientError) -> anyhow::Error {
    anyhow::anyhow!("{error}")
}

/// How to print an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Status,
    Members,
    Verify,
    List,
    Object,
    Key,
}

fn request_of(command: CtlCommand) -> anyhow::Result<(AdminRequest, View)> {
    Ok(match command {
        CtlCommand::Cluster(c) => match c {
            ClusterCommand::Init => (AdminRequest::ClusterInit, View::Object),
            ClusterCommand::Status => (AdminRequest::ClusterStatus, View::Status),
            ClusterCommand::Members => (AdminRequest::ClusterStatus, View::Members),
            ClusterCommand::AddLearner { node_id, addr } => {
                (AdminRequest::AddLearner { node_id, addr }, View::Object)
            }
            ClusterCommand::Promote { node_id } => {
                (AdminRequest::Promote { node_id }, View::Object)
            }
            ClusterCommand::Remove { node_id } => (AdminRequest::Remove { node_id }, View::Object),
            ClusterCommand::TransferLeader { node_id } => {
                (AdminRequest::TransferLeader { node_id }, View::Object)
            }
            ClusterCommand::Verify => (AdminRequest::Verify, View::Verify),
        },
        CtlCommand::Upstream(c) => match c {
            UpstreamCommand::Add(add) => {
                let quarantine = add.quarantine;
                let replace = add.replace;
                (
                    AdminRequest::UpstreamAdd {
                        upstream: upstream_of(*add)?,
                        quarantine,
                        replace,
                    },
                    View::Object,
                )
            }
            UpstreamCommand::List => (AdminRequest::UpstreamList, View::List),
            UpstreamCommand::Show { id } => (AdminRequest::UpstreamShow { id }, View::Object),
            UpstreamCommand::Remove { id } => (AdminRequest::UpstreamRemove { id }, View::Object),
            UpstreamCommand::Refresh { id } => (AdminRequest::UpstreamRefresh { id }, View::Object),
            UpstreamCommand::Drift { id } => (AdminRequest::UpstreamDrift { id }, View::Object),
            UpstreamCommand::Approve { id, tool } => {
                (AdminRequest::UpstreamApprove { id, tool }, View::Object)
            }
        },
        CtlCommand::Tenant(c) => match c {
            TenantCommand::Create { id, patch } => (
                AdminRequest::TenantCreate {
                    id,
                    patch: patch_of(patch)?,
                },
                View::Object,
            ),
            TenantCommand::List => (AdminRequest::TenantList, View::List),
            TenantCommand::Show { id } => (AdminRequest::TenantShow { id }, View::Object),
            TenantCommand::Update { id, patch } => (
                AdminRequest::TenantUpdate {
                    id,
                    patch: patch_of(patch)?,
                },
                View::Object,
            ),
            TenantCommand::Delete { id } => (AdminRequest::TenantDelete { id }, View::Object),
        },
        CtlCommand::Key(c) => match c {
            KeyCommand::Issue { tenant } => (AdminRequest::KeyIssue { tenant }, View::Key),
            KeyCommand::Revoke { tenant, key_id } => {
                (AdminRequest::KeyRevoke { tenant, key_id }, View::Object)
            }
        },
        CtlCommand::Search(_) => anyhow::bail!("`ctl search` asks an edge, not the control plane"),
        CtlCommand::Manifest(c) => match c {
            ManifestCommand::Show { version } => {
                (AdminRequest::ManifestShow { version }, View::Object)
            }
            ManifestCommand::Diff { from, to } => {
                (AdminRequest::ManifestDiff { from, to }, View::Object)
            }
            ManifestCommand::Hash => (AdminRequest::ManifestHash, View::Object),
        },
    })
}

/// `ctl search stats|reset`: the edge's `/search/stats[/{tenant}]` and
/// `/search/reset/{tenant}`.
async fn search_signals(command: SearchCommand, output: Output) -> anyhow::Result<()> {
    let (edge, segments, reset) = match &command {
        SearchCommand::Stats { tenant, edge } => {
            let mut segments = vec!["search", "stats"];
            segments.extend(tenant.as_deref());
            (edge, segments, false)
        }
        SearchCommand::Reset { tenant, edge } => (edge, vec!["search", "reset", tenant], true),
    };
    let url = edge_url(&edge.edge, &segments)?;
    quiver_upstream::install_crypto_provider();
    let client = reqwest::Client::new();
    let request = if reset {
        client.post(url.clone())
    } else {
        client.get(url.clone())
    };
    let response = request.send().await.with_context(|| {
        format!(
            "cannot reach the edge at {}; is it running? Point --edge at its address",
            edge.edge
        )
    })?;
    let status = response.status();
    let body: Value = response.json().await.with_context(|| {
        format!("{url} answered {status} without JSON; is --edge a Quiver edge?")
    })?;
    if !status.is_success() {
        anyhow::bail!("the edge refused ({status}): {}", cell(&body["error"]));
    }
    if output == Output::Json {
        say!("{}", serde_json::to_string_pretty(&body)?);
        return Ok(());
    }
    if reset {
        say!(
            "search signals of tenant {} forgotten",
            cell(&body["tenant"])
        );
        return Ok(());
    }
    let tenants = body["tenants"].as_array().map_or(&[][..], Vec::as_slice);
    if tenants.is_empty() {
        say!("no search signals yet");
    }
    for (i, stats) in tenants.iter().enumerate() {
        if i > 0 {
            say!("");
        }
        say!(
            "tenant {}  ({} query→tool associations)",
            cell(&stats["tenant"]),
            cell(&stats["associations"])
        );
        let list = |key: &str| stats[key].as_array().cloned().unwrap_or_default();
        let zero = list("zero_hit_queries");
        say!("\nzero-hit queries: {}", zero.len());
        if !zero.is_empty() {
            table(&["count", "query"], &zero);
        }
        let never = list("found_never_called");
        say!("\nfound but never called: {}", never.len());
        if !never.is_empty() {
            table(&["shown", "tool"], &never);
        }
    }
    Ok(())
}

/// `edge` (`host:port`, a URL, or an MCP URL) with its path replaced by `segments`.
fn edge_url(edge: &str, segments: &[&str]) -> anyhow::Result<reqwest::Url> {
    let edge = edge.trim();
    let with_scheme = if edge.contains("://") {
        edge.to_string()
    } else {
        format!("http://{edge}")
    };
    let mut url = reqwest::Url::parse(&with_scheme)
        .with_context(|| format!("--edge `{edge}`: expected host:port or http://host:port"))?;
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("--edge `{edge}`: expected host:port or http://host:port"))?
        .clear()
        .extend(segments);
    Ok(url)
}

fn pairs(items: &[String], what: &str) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .with_context(|| format!("{what} `{item}` must be KEY=VALUE"))
        })
        .collect()
}

fn upstream_of(add: UpstreamAddArgs) -> anyhow::Result<UpstreamConfig> {
    if let Some(path) = &add.file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let upstream: UpstreamConfig = toml::from_str(&text)
            .with_context(|| format!("{}: not a valid upstream", path.display()))?;
        upstream
            .validate()
            .with_context(|| format!("{}: invalid upstream", path.display()))?;
        return Ok(upstream);
    }
    let id = add.id.context(
        "give the upstream an id: `quiver ctl upstream add ID --command …` or `--url …`",
    )?;
    let mut upstream = match (&add.command, &add.url) {
        (Some(command), None) => {
            let mut u = UpstreamConfig::stdio(id, command.clone(), add.args.clone());
            if let Transport::Stdio { env, .. } = &mut u.transport {
                *env = pairs(&add.env, "--env")?;
            }
            u
        }
        (None, Some(url)) => {
            let mut u = UpstreamConfig::http(id, url.clone());
            if let Transport::Http { headers, .. } = &mut u.transport {
                *headers = pairs(&add.headers, "--header")?;
            }
            u
        }
        _ => anyhow::bail!(
            "give exactly one of --command (stdio) or --url (Streamable HTTP), or --file"
        ),
    };
    upstream.namespace = add.namespace;
    upstream.description = add.description;
    upstream.tags = add.tags;
    upstream.group = add.group.unwrap_or_default();
    if let Some(v) = &add.validation {
        upstream.validation = match v.as_str() {
            "schema" => ValidationMode::Schema,
            "strict" => ValidationMode::Strict,
            "off" => ValidationMode::Off,
            other => anyhow::bail!("--validation `{other}`: use schema, strict or off"),
        };
    }
    upstream.validate()?;
    Ok(upstream)
}

fn patch_of(flags: TenantFlags) -> anyhow::Result<TenantPatch> {
    let prices = if flags.prices.is_empty() {
        None
    } else {
        let mut prices = BTreeMap::new();
        for (glob, price) in pairs(&flags.prices, "--price")? {
            let price: f64 = price
                .parse()
                .with_context(|| format!("--price `{glob}={price}`: the price must be a number"))?;
            prices.insert(glob, price);
        }
        Some(prices)
    };
    let list = |v: Vec<String>| (!v.is_empty()).then_some(v);
    let patch = TenantPatch {
        display_name: flags.display_name,
        mode: flags.mode,
        servers: list(flags.servers),
        tools: list(flags.tools),
        tags: list(flags.tags),
        rate_limit_per_minute: flags.rate_limit,
        budget: flags.budget,
        prices,
    };
    patch.validate().map_err(anyhow::Error::msg)?;
    Ok(patch)
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

fn table(columns: &[&str], rows: &[Value]) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| cell(&row[*c])).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<String>| {
        values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    say!(
        "{}",
        line(columns.iter().map(|c| c.to_uppercase()).collect())
    );
    for row in cells {
        say!("{}", line(row));
    }
}

fn print_table(view: View, answer: &Value) {
    match view {
        View::Status => {
            say!(
                "leader {}  term {}  last log {}  applied {}  snapshot {}  manifest v{} {}",
                cell(&answer["leader"]),
                cell(&answer["term"]),
                cell(&answer["last_log_index"]),
                cell(&answer["last_applied"]),
                cell(&answer["snapshot"]),
                cell(&answer["manifest_version"]),
                cell(&answer["stub_hash"]),
            );
            table(
                &["id", "addr", "role", "matched_index"],
                answer["members"].as_array().map_or(&[][..], Vec::as_slice),
            );
        }
        View::Members => table(
            &["id", "addr", "role"],
            answer["members"].as_array().map_or(&[][..], Vec::as_slice),
        ),
        View::Verify => {
            say!(
                "canonical manifest v{} {}",
                cell(&answer["manifest_version"]),
                cell(&answer["stub_hash"])
            );
            let nodes = answer["nodes"].as_array().map_or(&[][..], Vec::as_slice);
            if nodes.is_empty() {
                say!("no edge or executor has reported yet");
            } else {
                table(
                    &["node", "role", "manifest_version", "stub_hash", "verdict"],
                    nodes,
                );
            }
        }
        View::List => match answer.as_array() {
            Some(rows) if rows.first().is_some_and(|r| r.get("transport").is_some()) => table(
                &[
                    "id",
                    "transport",
                    "state",
                    "tools",
                    "pending",
                    "quarantine",
                    "tags",
                ],
                rows,
            ),
            Some(rows) => table(
                &["id", "display_name", "mode", "servers", "keys"],
                &rows
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        r["keys"] = Value::from(r["keys"].as_array().map_or(0, Vec::len));
                        r
                    })
                    .collect::<Vec<_>>(),
            ),
            None => say!("{answer}"),
        },
        View::Key => {
            say!(
                "key {} for tenant {} (shown once; store it now):\n{}",
                cell(&answer["key_id"]),
                cell(&answer["tenant"]),
                cell(&answer["key"])
            );
        }
        View::Object => print_object(answer),
    }
}

/// `key: value` lines; lists of objects become tables, other nested values
/// compact JSON. A write's `{result, manifest_version, log_index}` shows its
/// result first.
fn print_object(answer: &Value) {
    let Some(object) = answer.as_object() else {
        say!("{}", cell(answer));
        return;
    };
    if let Some(result) = object.get("result").filter(|r| r.is_object()) {
        print_object(result);
        say!(
            "(committed at log index {}, manifest v{})",
            cell(&object["log_index"]),
            cell(&object["manifest_version"])
        );
        return;
    }
    let width = object.keys().map(String::len).max().unwrap_or(0);
    let mut tables = Vec::new();
    for (key, value) in object {
        match value {
            Value::Array(items) if items.first().is_some_and(Value::is_object) => {
                tables.push((key, items));
            }
            Value::Object(_) => say!("{key:<width$}  {value}"),
            other => say!("{key:<width$}  {}", cell(other)),
        }
    }
    for (key, items) in tables {
        say!("\n{key}:");
        let columns: Vec<&str> = items[0]
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        table(&columns, items);
    }
}
