//! The edge's configuration (`[edge]` in `quiver.toml`).

use std::{net::SocketAddr, path::PathBuf};

use serde::{Deserialize, Serialize};

use crate::{
    auth::{AuthMode, jwt::OAuthConfig},
    mode::Mode,
};

/// How the edge serves MCP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeConfig {
    /// Address of the MCP Streamable HTTP listener. Default `127.0.0.1:8080`.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Mode served at `/mcp` (the other paths pick their own) to callers
    /// whose tenant names none. Default `code`.
    #[serde(default)]
    pub default_mode: Mode,
    /// `none` (anonymous callers are the built-in tenant `default`, which
    /// sees every tool) or `required` (every MCP request carries an API key
    /// or a bearer token). Default `none`.
    #[serde(default)]
    pub auth: AuthMode,
    /// Accept OAuth 2.1 access tokens (JWTs) from these issuers, as an MCP
    /// resource server (`[edge.oauth]`). Default: API keys only.
    #[serde(default)]
    pub oauth: Option<OAuthConfig>,
    /// `Host` values accepted (DNS-rebinding protection). Default: loopback names
    /// plus the listen address. Add your public host names when not on loopback.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted (scheme://host:port, `:*` for any port). Default:
    /// `http://localhost:*`, `http://127.0.0.1:*`, `https://localhost:*`.
    /// Requests without an `Origin` header (non-browser clients) are always accepted.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Connections open at once on the MCP listener. Past it new
    /// connections wait in the kernel's backlog. Default 10000.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections open at once from one client address; past it a new one
    /// is closed at once. Default 512.
    #[serde(default = "default_max_connections_per_address")]
    pub max_connections_per_address: usize,
    /// Seconds a request's head may take to arrive; also how long a
    /// connection may sit idle between requests. Default 20.
    #[serde(default = "default_header_timeout_secs")]
    pub header_timeout_secs: u64,
    /// Seconds a request's body may take to arrive (408 past it). Default 30.
    #[serde(default = "default_body_timeout_secs")]
    pub body_timeout_secs: u64,
    /// Largest request body accepted, in bytes. Default 4 MiB.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// Serve HTTPS with these PEM files.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// Address of the `quiver.v1.Gateway` gRPC listener (the API for
    /// internal services; same authentication and views as MCP). Default:
    /// none, the gRPC API is off.
    #[serde(default)]
    pub grpc_listen: Option<SocketAddr>,
    /// Serve `/healthz`, `/readyz` and `/metrics` on this address too (for
    /// Prometheus when the edge authenticates its clients: its own listener
    /// then serves the probes but not `/metrics`). Default: none.
    #[serde(default)]
    pub admin_listen: Option<SocketAddr>,
    /// Serve the gRPC API over TLS with these PEM files, and require client
    /// certificates signed by `client_ca` when given (mTLS). Default:
    /// plaintext.
    #[serde(default)]
    pub grpc_tls: Option<GrpcTlsConfig>,
    /// Default number of search results. Default 5.
    #[serde(default = "default_search_limit")]
    pub search_limit: usize,
    /// Distinct tenant views kept per manifest version; past it the least
    /// recently used is forgotten and derived again (a millisecond or so at
    /// 10,000 tools) on its tenant's next request. A view holds about 2 KiB
    /// at 10,000 tools. Default 16384.
    #[serde(default = "default_max_views")]
    pub max_views: usize,
    /// Rank search hybrid (lexical + a sentence model) when a model can be
    /// loaded. Default true; false ranks lexically even with a model.
    #[serde(default = "default_true")]
    pub search_semantic: bool,
    /// Apply the shipped query adapter (a linear map learned from public
    /// tool-retrieval data, `view/adapter/`) to query vectors. Default true;
    /// false compares the model's raw query vectors with tool vectors.
    #[serde(default = "default_true")]
    pub search_adapter: bool,
    /// Sentence-embedding model directory for hybrid search. Default: the
    /// directory `scripts/install-model.sh` installs to
    /// (`$QUIVER_SEARCH_MODEL_DIR`, else
    /// `~/.cache/quiver/models/all-MiniLM-L6-v2`), used when a model is
    /// there. A missing or damaged model means lexical ranking and one log
    /// line, never a failed start.
    #[serde(default)]
    pub search_model_dir: Option<PathBuf>,
    /// Directory for search's tool-vector cache and per-tenant outcome
    /// signals (`vectors/`, `signals/`). Default: none, both kept in memory.
    #[serde(default)]
    pub search_data_dir: Option<PathBuf>,
    /// Seconds between writes of changed outcome signals to
    /// `search_data_dir` (they are also written at shutdown; a crash loses
    /// at most this much). Default 1.
    #[serde(default = "default_signal_flush_secs")]
    pub search_signal_flush_secs: u64,
    /// How long a session (of a 2025-era client) lives across the fleet
    /// without a request, in seconds, when edges record sessions in etcd.
    /// Default 3600. Each edge also frees its in-memory copy of a session
    /// after 5 minutes without a request; the record takes it up again.
    #[serde(default = "default_session_idle_secs")]
    pub session_idle_secs: u64,
    /// The most sessions (of 2025-era clients) this edge holds at once;
    /// an `initialize` past it is refused with 503. Default 10000.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// The most sessions one tenant holds on this edge at once (anonymous
    /// callers count as one tenant). Default 1000.
    #[serde(default = "default_max_sessions_per_tenant")]
    pub max_sessions_per_tenant: usize,
    /// Tasks (SEP-2663) for clients that take them, `[edge.tasks]`.
    #[serde(default)]
    pub tasks: TasksConfig,
    /// The web console at `/console`, `[edge.console]`.
    #[serde(default)]
    pub console: crate::console_link::ConsoleConfig,
}

/// `[edge.tasks]`: when a call of a client that takes tasks becomes one, and
/// what a tenant's tasks may hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksConfig {
    /// How long such a call runs before it becomes a task, in milliseconds.
    /// Default 500.
    #[serde(default = "default_task_after_ms")]
    pub after_ms: u64,
    /// Tasks one tenant may hold on one edge (running, or ended and still
    /// kept); past that its calls answer directly. 0 turns tasks off.
    /// Default 100.
    #[serde(default = "default_tasks_per_tenant")]
    pub per_tenant: usize,
    /// The largest result a task keeps, in bytes of JSON; a larger one fails
    /// its task. Default 4 MiB.
    #[serde(default = "default_task_result_bytes")]
    pub result_bytes: usize,
    /// Tasks of every tenant together one edge holds; past that calls
    /// answer directly. Default 10000.
    #[serde(default = "default_max_tasks")]
    pub max_tasks: usize,
    /// Bytes of results one edge keeps for all its tasks together; a result
    /// past it fails its task, saying why. Default 256 MiB.
    #[serde(default = "default_task_results_total_bytes")]
    pub results_total_bytes: usize,
    /// How long a task is kept from its start (its `ttlMs`), in seconds; one
    /// still running then is stopped and failed. Default 3600.
    #[serde(default = "default_task_ttl_secs")]
    pub ttl_secs: u64,
}

fn default_session_idle_secs() -> u64 {
    3600
}
fn default_task_after_ms() -> u64 {
    500
}
fn default_tasks_per_tenant() -> usize {
    100
}
fn default_task_result_bytes() -> usize {
    4 * 1024 * 1024
}
fn default_task_ttl_secs() -> u64 {
    3600
}
fn default_max_tasks() -> usize {
    crate::tasks::TaskLimits::default().max_tasks
}
fn default_task_results_total_bytes() -> usize {
    crate::tasks::TaskLimits::default().results_total
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            after_ms: default_task_after_ms(),
            per_tenant: default_tasks_per_tenant(),
            result_bytes: default_task_result_bytes(),
            max_tasks: default_max_tasks(),
            results_total_bytes: default_task_results_total_bytes(),
            ttl_secs: default_task_ttl_secs(),
        }
    }
}

impl TasksConfig {
    /// The limits the edge's tasks run under.
    pub fn limits(&self) -> crate::tasks::TaskLimits {
        crate::tasks::TaskLimits {
            after: std::time::Duration::from_millis(self.after_ms),
            per_tenant: self.per_tenant,
            result_bytes: self.result_bytes,
            max_tasks: self.max_tasks.max(1),
            results_total: self.results_total_bytes,
            ttl: std::time::Duration::from_secs(self.ttl_secs.max(1)),
            ..crate::tasks::TaskLimits::default()
        }
    }
}

/// Certificate and key for the HTTPS listener.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Certificate, key and optional client CA for the gRPC listener.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcTlsConfig {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM CA certificate(s): when set, only clients presenting a
    /// certificate it signed may connect (mTLS). Default: none, any client.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}
fn default_max_body() -> usize {
    4 * 1024 * 1024
}
fn default_true() -> bool {
    true
}

fn default_search_limit() -> usize {
    5
}
fn default_max_connections() -> usize {
    crate::connections::ConnectionLimits::default().max
}
fn default_max_connections_per_address() -> usize {
    crate::connections::ConnectionLimits::default().per_address
}
fn default_header_timeout_secs() -> u64 {
    crate::connections::ConnectionLimits::default()
        .header_timeout
        .as_secs()
}
fn default_body_timeout_secs() -> u64 {
    crate::connections::ConnectionLimits::default()
        .body_timeout
        .as_secs()
}
fn default_max_sessions() -> usize {
    crate::sessions::SessionLimits::default().max
}
fn default_max_sessions_per_tenant() -> usize {
    crate::sessions::SessionLimits::default().per_tenant
}
fn default_max_views() -> usize {
    quiver_view::tenant_views::DEFAULT_MAX_VIEWS
}
fn default_signal_flush_secs() -> u64 {
    1
}

impl Default for EdgeConfig {
    fn default() -> Self {
        EdgeConfig {
            listen: default_listen(),
            default_mode: Mode::default(),
            auth: AuthMode::default(),
            oauth: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_connections: default_max_connections(),
            max_connections_per_address: default_max_connections_per_address(),
            header_timeout_secs: default_header_timeout_secs(),
            body_timeout_secs: default_body_timeout_secs(),
            max_body_bytes: default_max_body(),
            tls: None,
            grpc_listen: None,
            admin_listen: None,
            grpc_tls: None,
            search_limit: default_search_limit(),
            max_views: default_max_views(),
            search_semantic: true,
            search_adapter: true,
            search_model_dir: None,
            search_data_dir: None,
            search_signal_flush_secs: default_signal_flush_secs(),
            session_idle_secs: default_session_idle_secs(),
            max_sessions: default_max_sessions(),
            max_sessions_per_tenant: default_max_sessions_per_tenant(),
            tasks: TasksConfig::default(),
            console: crate::console_link::ConsoleConfig::default(),
        }
    }
}

impl EdgeConfig {
    /// The connection limits these settings give.
    pub fn connection_limits(&self) -> crate::connections::ConnectionLimits {
        crate::connections::ConnectionLimits {
            max: self.max_connections.max(1),
            per_address: self.max_connections_per_address.max(1),
            header_timeout: std::time::Duration::from_secs(self.header_timeout_secs.max(1)),
            body_timeout: std::time::Duration::from_secs(self.body_timeout_secs.max(1)),
        }
    }

    /// The session limits these settings give.
    pub fn session_limits(&self) -> crate::sessions::SessionLimits {
        crate::sessions::SessionLimits {
            max: self.max_sessions.max(1),
            per_tenant: self.max_sessions_per_tenant.max(1),
        }
    }

    /// Loads, once per process, what search ranks and learns with: the
    /// sentence model (`search_semantic`, `search_model_dir`; its vector
    /// cache under `search_data_dir/vectors`) and the outcome signals
    /// (`search_data_dir/signals`, written every
    /// `search_signal_flush_secs`). Every role that ranks calls it.
    pub fn install_search(&self) {
        use quiver_view::search::{semantic, signals};
        let data = self.search_data_dir.as_deref();
        semantic::install(
            &semantic::ModelSetting::from_config(
                self.search_semantic,
                self.search_model_dir.as_deref(),
            ),
            self.search_adapter,
            data.map(|d| d.join("vectors")).as_deref(),
        );
        signals::install(
            data.map(|d| d.join("signals")).as_deref(),
            std::time::Duration::from_secs(self.search_signal_flush_secs.max(1)),
        );
    }

    /// `Host` values accepted, defaults filled in.
    pub fn effective_allowed_hosts(&self, bound: SocketAddr) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        if hosts.is_empty() {
            hosts = vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "[::1]".into(),
                "::1".into(),
            ];
            let ip = bound.ip();
            if !ip.is_unspecified() {
                hosts.push(ip.to_string());
            }
        }
        hosts
    }

    /// `Origin` values accepted, defaults filled in.
    pub fn effective_allowed_origins(&self) -> Vec<String> {
        if self.allowed_origins.is_empty() {
            vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "https://localhost:*".into(),
                "https://127.0.0.1:*".into(),
            ]
        } else {
            self.allowed_origins.clone()
        }
    }
}
