//! `quiver.toml`: the configuration of `quiver dev` (an `[edge]` table and
//! `[[upstream]]` entries). `${VAR}` and `${VAR:-default}` in string values are
//! expanded from the environment; `QUIVER_DEV_LISTEN` and
//! `QUIVER_DEV_DEFAULT_MODE` override the file. Errors name the key and the fix.

use std::{collections::BTreeSet, net::SocketAddr, path::Path};

use anyhow::{Context as _, bail};
use quiver_edge::{EdgeConfig, Mode, auth::AuthMode};
use quiver_upstream::UpstreamConfig;
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevConfig {
    /// The edge.
    #[serde(default)]
    pub edge: EdgeConfig,
    /// Downstream MCP servers.
    #[serde(default, rename = "upstream")]
    pub upstreams: Vec<UpstreamConfig>,
    /// The embedded control plane.
    #[serde(default)]
    pub control_plane: DevControlPlane,
    /// OTLP export and the log format (the `OTEL_*` variables win).
    #[serde(default)]
    pub telemetry: quiver_telemetry::TelemetrySettings,
}

/// `[control_plane]` of `quiver dev`: the embedded one-node cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevControlPlane {
    /// Data directory (Raft log, snapshots). Default `.quiver/dev`.
    #[serde(default = "default_dev_data")]
    pub data: std::path::PathBuf,
    /// gRPC address for `quiver ctl`. Default `127.0.0.1:7400`, where `quiver ctl` looks first.
    #[serde(default = "default_dev_control_plane_listen")]
    pub listen: std::net::SocketAddr,
    /// The most API keys one tenant may hold (operator-issued and
    /// self-service together). Default 100.
    #[serde(default = "default_max_keys_per_tenant")]
    pub max_keys_per_tenant: u32,
    /// Whether screening runs the learned detector beside its rules.
    /// Default true.
    #[serde(default = "default_true")]
    pub screening_detector: bool,
}

fn default_true() -> bool {
    true
}

fn default_max_keys_per_tenant() -> u32 {
    quiver_control_plane::node::DEFAULT_MAX_KEYS_PER_TENANT
}

impl Default for DevControlPlane {
    fn default() -> Self {
        DevControlPlane {
            data: default_dev_data(),
            listen: default_dev_control_plane_listen(),
            max_keys_per_tenant: default_max_keys_per_tenant(),
            screening_detector: true,
        }
    }
}

fn default_dev_data() -> std::path::PathBuf {
    std::path::PathBuf::from(".quiver/dev")
}

fn default_dev_control_plane_listen() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 7400))
}

impl DevConfig {
    /// Reads, expands, parses and validates `path`.
    pub fn load(path: &Path) -> anyhow::Result<DevConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<DevConfig> {
        let mut value: toml::Value =
            toml::from_str(text).with_context(|| format!("{origin}: not valid TOML"))?;
        expand_env(&mut value, &mut Vec::new())
            .with_context(|| format!("{origin}: expanding environment variables"))?;
        let mut config: DevConfig = value
            .try_into()
            .with_context(|| format!("{origin}: invalid configuration"))?;
        config.apply_env_overrides()?;
        config
            .validate()
            .with_context(|| format!("{origin}: invalid configuration"))?;
        Ok(config)
    }

    fn apply_env_overrides(&mut self) -> anyhow::Result<()> {
        if let Ok(listen) = std::env::var("QUIVER_DEV_LISTEN") {
            self.edge.listen = listen
                .parse()
                .with_context(|| format!("QUIVER_DEV_LISTEN: `{listen}` is not HOST:PORT"))?;
        }
        if let Ok(mode) = std::env::var("QUIVER_DEV_DEFAULT_MODE") {
            self.edge.default_mode =
                mode.parse().map_err(|e: quiver_edge::mode::UnknownMode| {
                    anyhow::anyhow!("QUIVER_DEV_DEFAULT_MODE: {e}")
                })?;
        }
        Ok(())
    }

    /// Checks what serde cannot: upstream fields and unique ids.
    pub fn validate(&self) -> anyhow::Result<()> {
        let mut ids = BTreeSet::new();
        for (i, upstream) in self.upstreams.iter().enumerate() {
            upstream
                .validate()
                .with_context(|| format!("upstream[{i}]"))?;
            if !ids.insert(upstream.id.as_str()) {
                bail!(
                    "upstream[{i}].id: `{}` is used twice; every upstream needs its own id",
                    upstream.id
                );
            }
        }
        if self.edge.max_body_bytes < 1024 {
            bail!(
                "edge.max_body_bytes: {} is too small; use at least 1024",
                self.edge.max_body_bytes
            );
        }
        if self.edge.search_limit == 0 || self.edge.search_limit > 50 {
            bail!("edge.search_limit: must be between 1 and 50");
        }
        if self.edge.max_views == 0 {
            bail!("edge.max_views: must be at least 1 (default 16384)");
        }
        Ok(())
    }
}

/// `upstream.[i].headers`, `upstream.[i].env` and `upstream.[i].oauth.client_secret`.
fn is_secret_table(path: &[String]) -> bool {
    match path {
        [first, _, last] => first == "upstream" && (last == "headers" || last == "env"),
        [first, _, table, key] => first == "upstream" && table == "oauth" && key == "client_secret",
        _ => false,
    }
}

fn expand_env(value: &mut toml::Value, path: &mut Vec<String>) -> anyhow::Result<()> {
    match value {
        // Upstream credentials stay references: the node that connects resolves
        // them, so they are never stored or replicated in clear.
        toml::Value::Table(_) | toml::Value::String(_) if is_secret_table(path) => {}
        toml::Value::String(s) => {
            *s = expand_str(s).with_context(|| format!("at `{}`", path.join(".")))?;
        }
        toml::Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(format!("[{i}]"));
                expand_env(item, path)?;
                path.pop();
            }
        }
        toml::Value::Table(table) => {
            for (key, item) in table.iter_mut() {
                path.push(key.clone());
                expand_env(item, path)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

fn expand_str(text: &str) -> anyhow::Result<String> {
    quiver_upstream::expand_references(text).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_telemetry_table_is_read_and_its_mistakes_are_named() {
        let config = DevConfig::parse(
            r#"
            [telemetry]
            otlp_endpoint = "http://127.0.0.1:4317"
            otlp_protocol = "grpc"
            log_format = "json"
            "#,
            "test",
        )
        .unwrap();
        assert_eq!(
            config.telemetry.otlp_protocol,
            Some(quiver_telemetry::OtlpProtocol::Grpc)
        );
        assert_eq!(
            config.telemetry.log_format,
            Some(quiver_telemetry::LogFormat::Json)
        );
        let err = format!(
            "{:#}",
            DevConfig::parse("[telemetry]\notlp_protocol = \"udp\"\n", "test").unwrap_err()
        );
        assert!(err.contains("udp") && err.contains("telemetry"), "{err}");
        let err = format!(
            "{:#}",
            DevConfig::parse("[telemetry]\nendpoint = \"x\"\n", "test").unwrap_err()
        );
        assert!(err.contains("endpoint"), "{err}");
    }

    #[test]
    fn parses_a_full_config() {
        let config = DevConfig::parse(
            r#"
            [edge]
            listen = "127.0.0.1:9000"
            default_mode = "search"

            [[upstream]]
            id = "files"
            transport = "stdio"
            command = "mcp-files"
            args = ["--root", "/tmp"]

            [[upstream]]
            id = "remote"
            transport = "http"
            url = "https://mcp.example.com/mcp"
            headers = { Authorization = "Bearer ${QUIVER_TEST_UNSET_TOKEN:-t0ken}" }
            validation = "strict"
            "#,
            "test",
        )
        .unwrap();
        assert_eq!(config.edge.listen.port(), 9000);
        assert_eq!(config.upstreams.len(), 2);
        match &config.upstreams[1].transport {
            quiver_upstream::Transport::Http { headers, .. } => {
                // Credentials stay references until the connecting node resolves them.
                let header = &headers["Authorization"];
                assert_eq!(header, "Bearer ${QUIVER_TEST_UNSET_TOKEN:-t0ken}");
                assert_eq!(
                    quiver_upstream::expand_references(header).unwrap(),
                    "Bearer t0ken"
                );
            }
            other => panic!("unexpected transport {other:?}"),
        }
    }

    #[test]
    fn an_oauth_client_secret_stays_a_reference_and_the_rest_of_the_table_expands() {
        let config = DevConfig::parse(
            r#"
            [[upstream]]
            id = "tracker"
            transport = "http"
            url = "https://tracker.example/mcp"

            [upstream.oauth]
            redirect_uri = "${QUIVER_TEST_UNSET_CALLBACK:-https://quiver.example/oauth/callback}"
            client_id = "quiver"
            client_secret = "${QUIVER_TEST_UNSET_CLIENT_SECRET}"
            scopes = ["issues:read"]
            "#,
            "test",
        )
        .unwrap();
        let oauth = config.upstreams[0].oauth.as_ref().expect("oauth settings");
        assert_eq!(oauth.redirect_uri, "https://quiver.example/oauth/callback");
        assert_eq!(
            oauth.client_secret.as_deref(),
            Some("${QUIVER_TEST_UNSET_CLIENT_SECRET}"),
            "resolved by the node that connects, never stored in clear"
        );
        let err = DevConfig::parse(
            "[[upstream]]\nid = \"a\"\ntransport = \"http\"\nurl = \"https://a/mcp\"\n[upstream.oauth]\nredirect_uri = \"https://q/cb\"\nclient_id = \"q\"\nclient_secret = \"s3cret\"\n",
            "q",
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("never the secret itself"),
            "{err:#}"
        );
    }

    #[test]
    fn the_example_control_plane_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/control-plane.toml");
        let file = ControlPlaneFile::load(&path).unwrap();
        assert_eq!(file.control_plane.node_id, Some(1));
        assert!(file.control_plane.bootstrap);
        assert!(file.control_plane.data.unwrap().ends_with("n1"));
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = DevConfig::parse("[edge]\nlisten_addr = \"x\"\n", "quiver.toml").unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("listen_addr"), "{text}");
    }

    #[test]
    fn missing_env_var_is_named_with_its_key() {
        let err = DevConfig::parse(
            "[[upstream]]\nid = \"a\"\ntransport = \"http\"\nurl = \"${QUIVER_TEST_SURELY_UNSET}\"\n",
            "quiver.toml",
        )
        .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("QUIVER_TEST_SURELY_UNSET") && text.contains("upstream.[0].url"),
            "{text}"
        );
    }

    #[test]
    fn duplicate_ids_are_rejected() {
        let err = DevConfig::parse(
            "[[upstream]]\nid = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\n[[upstream]]\nid = \"a\"\ntransport = \"stdio\"\ncommand = \"y\"\n",
            "quiver.toml",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("used twice"));
    }

    #[test]
    fn bad_urls_and_ids_are_explained() {
        let err = DevConfig::parse(
            "[[upstream]]\nid = \"a b\"\ntransport = \"stdio\"\ncommand = \"x\"\n",
            "q",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("[a-zA-Z0-9_-]"));
        let err = DevConfig::parse(
            "[[upstream]]\nid = \"a\"\ntransport = \"http\"\nurl = \"ftp://x\"\n",
            "q",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("http://"));
    }

    #[test]
    fn dollar_escapes() {
        assert_eq!(expand_str("a$$b$c").unwrap(), "a$b$c");
    }
}

/// A `quiver control-plane` config file: a `[control_plane]` table with the
/// same settings as the flags (flags win). `${VAR}` expansion as above.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlPlaneFile {
    /// The node.
    #[serde(default)]
    pub control_plane: ControlPlaneSettings,
    /// OTLP export and the log format (the `OTEL_*` variables win).
    #[serde(default)]
    pub telemetry: quiver_telemetry::TelemetrySettings,
}

/// `[control_plane]`: every key optional here; the command says which are required.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlPlaneSettings {
    /// `--node-id`.
    pub node_id: Option<u64>,
    /// `--listen`.
    pub listen: Option<std::net::SocketAddr>,
    /// `--data`.
    pub data: Option<std::path::PathBuf>,
    /// `--advertise`.
    pub advertise: Option<String>,
    /// `--bootstrap`.
    #[serde(default)]
    pub bootstrap: bool,
    /// `--heartbeat-ms`.
    pub heartbeat_ms: Option<u64>,
    /// The most API keys one tenant may hold. Default 100.
    pub max_keys_per_tenant: Option<u32>,
    /// Whether screening runs the learned detector beside its rules.
    /// Default true; set it alike on every node.
    pub screening_detector: Option<bool>,
    /// `--election-timeout-ms`.
    pub election_timeout_ms: Option<u64>,
    /// `--snapshot-every`.
    pub snapshot_every: Option<u64>,
    /// `[control_plane.tls]`: `ca`, `cert`, `key` (PEM files).
    pub tls: Option<quiver_control_plane::raft::network::ClusterTls>,
    /// `--admin-listen`.
    pub admin_listen: Option<std::net::SocketAddr>,
    /// `--backup-dir`.
    pub backup_dir: Option<std::path::PathBuf>,
    /// `--backup-every` (`"1h"`).
    pub backup_every: Option<String>,
    /// `--backup-keep`.
    pub backup_keep: Option<usize>,
}

impl ControlPlaneFile {
    /// Reads, expands and parses `path`; errors name the file and the key.
    pub fn load(path: &Path) -> anyhow::Result<ControlPlaneFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        let origin = path.display().to_string();
        let mut value: toml::Value =
            toml::from_str(&text).with_context(|| format!("{origin}: not valid TOML"))?;
        expand_env(&mut value, &mut Vec::new())
            .with_context(|| format!("{origin}: expanding environment variables"))?;
        value
            .try_into()
            .with_context(|| format!("{origin}: invalid control-plane configuration"))
    }
}

/// The `[edge]` settings `quiver dev` and `quiver edge` take as flags too;
/// a flag given wins over the file.
#[derive(clap::Args, Debug)]
pub struct EdgeFlags {
    /// MCP listen address (overrides `edge.listen`), e.g. 127.0.0.1:8080;
    /// port 0 picks a free one.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Mode served at /mcp (overrides `edge.default_mode`).
    #[arg(long)]
    pub mode: Option<Mode>,
    /// `none` (default): anonymous callers are the built-in tenant `default`,
    /// which sees every tool; `required`: every MCP request must carry an API
    /// key (`quiver ctl key issue`) or an OAuth access token (overrides
    /// `edge.auth`).
    #[arg(long)]
    pub auth: Option<AuthMode>,
    /// Serve the `quiver.v1.Gateway` gRPC API here too (overrides
    /// `edge.grpc_listen`; port 0 picks a free one). Off unless set.
    #[arg(long)]
    pub grpc_listen: Option<SocketAddr>,
    /// Also serve `/healthz`, `/readyz` and `/metrics` on this address
    /// (overrides `edge.admin_listen`; port 0 picks one). The MCP listener
    /// serves the probes always and `/metrics` only with `auth = "none"`.
    #[arg(long, env = "QUIVER_ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,
}

impl EdgeFlags {
    /// Puts the flags given into `edge`.
    pub fn apply(&self, edge: &mut EdgeConfig) {
        if let Some(listen) = self.listen {
            edge.listen = listen;
        }
        if let Some(mode) = self.mode {
            edge.default_mode = mode;
        }
        if let Some(auth) = self.auth {
            edge.auth = auth;
        }
        if self.grpc_listen.is_some() {
            edge.grpc_listen = self.grpc_listen;
        }
        if self.admin_listen.is_some() {
            edge.admin_listen = self.admin_listen;
        }
    }
}
