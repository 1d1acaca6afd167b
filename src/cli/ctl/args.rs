//! The arguments of `quiver ctl`: global flags and one subcommand per
//! operation, as clap parses them. Turning them into requests is `request.rs`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

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
    pub(crate) endpoints: Vec<String>,
    /// etcd endpoints (`host:port`, comma-separated): `cluster status` also
    /// lists the members registered there (see `quiver executor --etcd`).
    #[arg(long, global = true, env = "QUIVER_CTL_ETCD", value_delimiter = ',')]
    pub(crate) etcd: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,
    /// CA certificate (PEM) when the cluster uses mTLS.
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_CA", requires_all = ["tls_cert", "tls_key"])]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Client certificate (PEM).
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_CERT")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// Client key (PEM).
    #[arg(long, global = true, env = "QUIVER_CTL_TLS_KEY")]
    pub(crate) tls_key: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: CtlCommand,
}

/// `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
pub(crate) enum CtlCommand {
    /// Cluster membership and health.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Downstream MCP servers.
    #[command(subcommand)]
    Upstream(UpstreamCommand),
    /// Tenants and their policy.
    #[command(subcommand)]
    Tenant(Box<TenantCommand>),
    /// Tenants' API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Tenants' upstream credentials (`${tenant_secret:NAME}`), stored sealed.
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Manifest versions.
    #[command(subcommand)]
    Manifest(ManifestCommand),
    /// What searches led to, per tenant (kept by each edge; asks `--edge`).
    #[command(subcommand)]
    Search(SearchCommand),
    /// The audit log: every call and execution, allowed or denied (newest last).
    Audit(AuditArgs),
    /// Backups of the replicated state: save one through the leader, or
    /// inspect a file (restore with `quiver control-plane --restore FILE`).
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
}

/// `quiver ctl snapshot`.
#[derive(Subcommand, Debug)]
pub(crate) enum SnapshotCommand {
    /// Save a consistent backup of the cluster's state, taken on the leader
    /// after every write acknowledged before it (secrets stay sealed with
    /// the cluster key). Written whole or not at all.
    Save {
        /// The file to write (replaced if it exists).
        file: std::path::PathBuf,
    },
    /// Check a backup file (checksum, length, format) and show what it
    /// holds, without any secret; reads no cluster.
    Inspect {
        /// The backup file.
        file: std::path::PathBuf,
    },
}

/// `quiver ctl audit`.
#[derive(Args, Debug)]
pub(crate) struct AuditArgs {
    /// Only this tenant's records.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// Only records this recent (`90s`, `15m`, `2h`, `7d`, `1h 30m`) or
    /// since this time (RFC 3339, `2026-11-28T10:00:00Z`, or ms since the
    /// epoch).
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// When nothing matches yet, wait up to this long (`10s`) for the first
    /// record: executors ship records to the control plane within about 2 s
    /// of the call.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) wait: Option<std::time::Duration>,
    /// At most this many (the newest).
    #[arg(long, default_value_t = 100)]
    pub(crate) limit: u32,
    /// Show the retention setting instead of records; with `--set-days` and
    /// `--set-max-records`, change it.
    #[arg(long)]
    pub(crate) retention: bool,
    /// Keep records this many days.
    #[arg(long, requires = "retention")]
    pub(crate) set_days: Option<u32>,
    /// Keep at most this many records.
    #[arg(long, requires = "retention")]
    pub(crate) set_max_records: Option<u32>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum SearchCommand {
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
pub(crate) struct EdgeAddress {
    /// The edge to ask, on this machine (it answers loopback only):
    /// `host:port`, `http(s)://host:port`, or its MCP URL.
    #[arg(long, env = "QUIVER_CTL_EDGE", default_value = "http://127.0.0.1:8080")]
    pub(crate) edge: String,
    /// The edge's console operator token (`[edge.console]
    /// operator_token_file`; `quiver dev` writes
    /// `.quiver/dev/console-operator.token`, the default when it exists).
    #[arg(long, env = "QUIVER_OPERATOR_TOKEN_FILE")]
    pub(crate) operator_token_file: Option<std::path::PathBuf>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ClusterCommand {
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
pub(crate) enum UpstreamCommand {
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
    /// Screen what the upstreams last reported again with this build's
    /// rules, without listing them (after an upgrade); definitions whose
    /// findings change are held back or let go at once.
    Rescreen {
        /// Upstream id (all when absent).
        id: Option<String>,
    },
    /// Schema drift events and quarantined changes.
    Drift {
        /// Only this upstream.
        id: Option<String>,
    },
    /// What screening found in tool definitions: tools held back (served to
    /// no tenant until approved) and tools served with findings.
    Findings {
        /// Only this upstream.
        id: Option<String>,
    },
    /// Accept quarantined schema changes; `--tool` with a tool that
    /// screening held back serves it with its findings.
    Approve {
        /// Upstream id.
        id: String,
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
    },
    /// Print the link a person opens to grant Quiver access to an upstream
    /// behind OAuth for a tenant (their authorization server sends them
    /// back to Quiver's callback, which keeps the grant).
    Authorize {
        /// Upstream id.
        id: String,
        /// The tenant whose calls will use the grant.
        #[arg(long)]
        tenant: String,
        /// A scope to ask for besides the configured ones and those already
        /// granted (repeat), when the upstream asked for more.
        #[arg(long = "scope")]
        scopes: Vec<String>,
    },
    /// Drop a tenant's OAuth grant of an upstream (its tokens are deleted).
    Deauthorize {
        /// Upstream id.
        id: String,
        /// Tenant id.
        #[arg(long)]
        tenant: String,
    },
    /// The OAuth grants kept: tenant, upstream, scopes, expiry (never a token).
    Grants {
        /// Only this tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
}

#[derive(Args, Debug)]
pub(crate) struct UpstreamAddArgs {
    /// Upstream id (`[a-zA-Z0-9_-]`); the default namespace of its tools.
    pub(crate) id: Option<String>,
    /// Read the upstream from a TOML file (the `[[upstream]]` keys of quiver.toml).
    #[arg(long, conflicts_with_all = ["command", "url"])]
    pub(crate) file: Option<PathBuf>,
    /// Program to start (stdio transport).
    #[arg(long, conflicts_with = "url")]
    pub(crate) command: Option<String>,
    /// An argument of the program (repeat).
    #[arg(long = "arg", allow_hyphen_values = true)]
    pub(crate) args: Vec<String>,
    /// `KEY=VALUE` for the program's environment; values may be `${SECRET}` references.
    #[arg(long = "env")]
    pub(crate) env: Vec<String>,
    /// Streamable HTTP endpoint.
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// `Name=Value` header; values may be `${SECRET}` references.
    #[arg(long = "header")]
    pub(crate) headers: Vec<String>,
    /// Exposed-name prefix (default: the id).
    #[arg(long)]
    pub(crate) namespace: Option<String>,
    /// One-line description for code mode's `list`.
    #[arg(long)]
    pub(crate) description: Option<String>,
    /// Tag (repeat).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Group.
    #[arg(long)]
    pub(crate) group: Option<String>,
    /// Argument validation: schema, strict or off.
    #[arg(long)]
    pub(crate) validation: Option<String>,
    /// Hold back tools whose screening findings reach this severity until
    /// `upstream approve --tool`: high (default), medium, low or never.
    #[arg(long)]
    pub(crate) hold_findings: Option<String>,
    /// Hold back schema changes until `upstream approve`.
    #[arg(long)]
    pub(crate) quarantine: bool,
    /// Replace an upstream with the same id.
    #[arg(long)]
    pub(crate) replace: bool,
    #[command(flatten)]
    pub(crate) oauth: OAuthFlags,
}

/// `--oauth REDIRECT_URI` and what goes with it: the upstream is behind
/// OAuth 2.1, and Quiver authorizes itself (see docs/security.md).
#[derive(clap::Args, Debug, Default)]
pub(crate) struct OAuthFlags {
    /// Authorize to this HTTP upstream with OAuth 2.1; the value is Quiver's
    /// callback, where the authorization server sends the person back.
    #[arg(long = "oauth", value_name = "REDIRECT_URI")]
    pub(crate) redirect_uri: Option<String>,
    /// Authorize to this HTTP upstream with OAuth 2.1 as a service account
    /// (client credentials: needs --oauth-client-id and --oauth-client-secret).
    #[arg(long = "oauth-client-credentials", requires_all = ["client_id", "client_secret"])]
    pub(crate) client_credentials: bool,
    /// Authorize each call to this HTTP upstream on behalf of its caller:
    /// the caller's own OAuth access token is exchanged (RFC 8693) by
    /// Quiver's client (needs --oauth-client-id and --oauth-client-secret).
    #[arg(
        long = "oauth-token-exchange",
        requires_all = ["client_id", "client_secret"],
        conflicts_with = "client_credentials"
    )]
    pub(crate) token_exchange: bool,
    /// A client registered with the authorization server beforehand.
    #[arg(long = "oauth-client-id")]
    pub(crate) client_id: Option<String>,
    /// That client's secret as a `${VAR}` reference (never the value).
    #[arg(long = "oauth-client-secret", requires = "client_id")]
    pub(crate) client_secret: Option<String>,
    /// HTTPS URL of the client ID metadata document describing Quiver.
    #[arg(long = "oauth-client-metadata")]
    pub(crate) client_metadata_url: Option<String>,
    /// A scope to ask for (repeat; default: what the server names).
    #[arg(long = "oauth-scope")]
    pub(crate) scopes: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum TenantCommand {
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
    /// Budget, and what executors leased, spent and called for the tenant.
    Usage {
        /// Tenant id.
        id: String,
    },
}

#[derive(Args, Debug)]
pub(crate) struct TenantFlags {
    /// Name shown to operators.
    #[arg(long)]
    pub(crate) display_name: Option<String>,
    /// passthrough, search or code ("" for the edge's default).
    #[arg(long)]
    pub(crate) mode: Option<String>,
    /// Visible servers by glob (repeat; replaces the list).
    #[arg(long = "server")]
    pub(crate) servers: Vec<String>,
    /// Visible tools by `<server>/<tool>` glob (repeat; replaces the list).
    #[arg(long = "tool")]
    pub(crate) tools: Vec<String>,
    /// Servers with this tag are visible (repeat; replaces the list).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Tool calls per minute, all tools together (0 clears).
    #[arg(long)]
    pub(crate) rate_limit: Option<u32>,
    /// `GLOB=N`: calls per minute of each tool matching `<server>/<tool>`
    /// glob GLOB, one bucket per tool (repeat; 0 removes the entry).
    #[arg(long = "tool-rate-limit")]
    pub(crate) tool_rate_limits: Vec<String>,
    /// How the tenant's call arguments are checked: schema, strict or off
    /// ("" for each server's own level).
    #[arg(long)]
    pub(crate) validation: Option<String>,
    /// Hide tools whose screening findings reach this severity from the
    /// tenant even where their upstream serves them: low, medium, high or
    /// never ("" clears it).
    #[arg(long)]
    pub(crate) hold_findings: Option<String>,
    /// Keep calls' arguments in audit records (by default only their SHA-256).
    #[arg(long)]
    pub(crate) audit_arguments: Option<bool>,
    /// Let the tenant issue and revoke its own API keys in the web console.
    #[arg(long)]
    pub(crate) self_service_keys: Option<bool>,
    /// Bytes of stashed values the tenant may keep, per executor and, with
    /// etcd-backed stashes, across the fleet: a number with an optional unit
    /// (`64MiB`, `512KiB`, `1GiB`); 0 goes back to the executor's default
    /// (an eighth of its capacity).
    #[arg(long, value_parser = parse_size)]
    pub(crate) stash_bytes: Option<u64>,
    /// Stashed keys the tenant may keep, likewise (0: the executor's default).
    #[arg(long)]
    pub(crate) stash_keys: Option<u64>,
    /// Wall time of a code-mode script that may run as a task (its client
    /// takes tasks), up to the executors' `--task-wall-max`: `20s`, `5m`,
    /// `1500ms`; 0 goes back to the usual wall time.
    #[arg(long, value_parser = parse_millis)]
    pub(crate) task_wall: Option<u64>,
    /// Budget (negative clears).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) budget: Option<f64>,
    /// `GLOB=PRICE` per call (repeat; a negative price removes the entry).
    #[arg(long = "price", allow_hyphen_values = true)]
    pub(crate) prices: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum KeyCommand {
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
pub(crate) enum SecretCommand {
    /// Set a tenant's secret; the value is read from standard input (one
    /// trailing newline dropped) and can never be read back.
    Set {
        /// Tenant id.
        #[arg(long)]
        tenant: String,
        /// Secret name, as upstreams reference it: `${tenant_secret:NAME}`.
        name: String,
    },
    /// A tenant's secrets: names and when they were set, never values.
    List {
        /// Tenant id.
        #[arg(long)]
        tenant: String,
    },
    /// Delete a tenant's secret.
    Delete {
        /// Tenant id.
        #[arg(long)]
        tenant: String,
        /// Secret name.
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ManifestCommand {
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

/// A duration (`20s`, `5m`, `1500ms`; `0` alone) as milliseconds.
pub(crate) fn parse_millis(text: &str) -> Result<u64, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    let duration = humantime::parse_duration(text)
        .map_err(|e| format!("{e}; expected a duration such as 20s, 5m or 1500ms"))?;
    u64::try_from(duration.as_millis()).map_err(|_| "the duration is too long".to_string())
}

/// A size in bytes: digits, then optionally `B`, `KiB`, `MiB` or `GiB` (or
/// `K`, `M`, `G`, also powers of 1,024).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| {
        format!("`{text}` is not a size: write bytes, or a number with KiB, MiB or GiB")
    })?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}`: use B, KiB, MiB or GiB"
            ));
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_units_and_refuse_nonsense() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512 KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5 parsecs").unwrap_err().contains("unit"));
        assert!(parse_size("99999999999999999999G").is_err());
    }
}
