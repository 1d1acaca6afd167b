//! Shared pieces of the integration tests: start real `quiver` processes on
//! loopback and talk to them with real rmcp clients.
#![allow(dead_code)]

pub mod answers;
pub mod browser;
mod catalogues;
mod control_plane;
mod ctl;
pub mod doc_session;
pub mod etcd;
pub mod jwt_issuer;
pub mod markdown_blocks;
pub mod node_tools;
pub mod otlp;
pub mod partial_run;
pub mod protected_upstream;
pub mod raw_session;
pub mod session_client;
mod task_client;
mod tls;
mod wait;

pub use catalogues::*;
pub use control_plane::*;
pub use ctl::*;
pub use task_client::*;
pub use tls::*;

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, JsonObject},
    service::{NotificationContext, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

pub use wait::wait_for;

/// Runs `command` to its end: whether it succeeded, and its standard output
/// followed by its standard error.
pub fn output_of(command: &mut Command) -> (bool, String) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// SIGTERM to `child`, then waits (up to 30 s) for it to exit.
pub fn terminate(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let pid = i32::try_from(child.id()).expect("pid fits");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    for _ in 0..1500 {
        if let Ok(Some(status)) = child.try_wait() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} ignored SIGTERM for 30 s");
}

/// The `quiver` binary under test.
pub fn quiver_bin() -> &'static str {
    env!("CARGO_BIN_EXE_quiver")
}

/// The test kit built beside it (`quiver-test-kit`): the mock upstream with
/// test hooks (`mock-upstream`) and the conformance suite's client.
pub fn test_kit_bin() -> &'static str {
    env!("CARGO_BIN_EXE_quiver-test-kit")
}

/// The shared datasets folder. When it is absent the test fails, unless
/// `QUIVER_PARTIAL_TESTS=1` marks a local partial run: then `None` (skip).
pub fn datasets() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets");
    partial_run::required_input(
        &dir.join("livemcpbench/tools.json"),
        "this test needs ../shared/datasets next to the repository",
    )
    .map(|_| dir)
}

/// Spawns `command` (logs at `RUST_LOG`, default warn, on stderr) and waits for
/// the first line it prints on stdout; later lines are drained.
pub fn spawn_with_banner(command: &mut Command, what: &str) -> (Child, String) {
    spawn_with_banner_logging(command, what, Stdio::inherit())
}

/// [`spawn_with_banner`] with the process's log (stderr) going to `log`.
pub fn spawn_with_banner_logging(command: &mut Command, what: &str, log: Stdio) -> (Child, String) {
    if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
        command.env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        );
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let banner = rx
        .recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("{what} printed no startup line"));
    (child, banner)
}

/// An error and all its causes, joined with `: ` (what a refusal test matches on:
/// the outermost message is often a generic "transport error").
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(inner) = cause {
        parts.push(inner.to_string());
        cause = inner.source();
    }
    parts.join(": ")
}

/// Opens a TLS connection to `addr` as a client trusting `ca_pem` for
/// `server_name`, presenting `identity` (cert and key PEM) if given, sends an
/// HTTP/2 preface and reads. The server must refuse; returns the error the
/// client saw (e.g. `received fatal alert: CertificateRequired`), which a
/// higher-level client would hide behind "connection closed".
pub fn tls_refusal(
    addr: &str,
    server_name: &str,
    ca_pem: &str,
    identity: Option<(&str, &str)>,
) -> String {
    const CLOSED: &str = "the server closed the connection without answering";
    match tls_answer(addr, server_name, ca_pem, identity) {
        Ok(n) => panic!("the server answered a client it must refuse: {n} bytes"),
        Err(e) if e == CLOSED => panic!("the server closed the connection without saying why"),
        Err(e) => e,
    }
}

/// A running `quiver executor` (killed on drop).
pub struct ExecutorProcess {
    child: Child,
    /// Its gRPC address.
    pub addr: String,
    /// Its admin listener's URL, when started with `--admin-listen`.
    pub admin: Option<String>,
}

impl ExecutorProcess {
    /// Starts `quiver executor --listen 127.0.0.1:0 <args>` and waits until it serves.
    pub fn start(args: &[&str]) -> ExecutorProcess {
        let mut command = Command::new(quiver_bin());
        command
            .args(["executor", "--listen", "127.0.0.1:0"])
            .args(args);
        let (child, banner) = spawn_with_banner(&mut command, "quiver executor");
        assert!(banner.contains("quiver executor: serving"), "{banner}");
        let addr = banner
            .split_whitespace()
            .skip_while(|w| *w != "on")
            .nth(1)
            .unwrap_or_else(|| panic!("no address in: {banner}"))
            .to_string();
        let admin = admin_of(&banner);
        ExecutorProcess { child, addr, admin }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (up to 30 s) for it to exit.
    pub fn stop_gracefully(&mut self) -> std::process::ExitStatus {
        terminate(&mut self.child, "the executor")
    }
}

impl Drop for ExecutorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `quiver dev` (killed on drop).
pub struct QuiverDev {
    child: Child,
    /// Base MCP URL, e.g. `http://127.0.0.1:41234/mcp`.
    pub url: String,
    /// The startup line.
    pub banner: String,
    /// The embedded control plane's gRPC address (for `quiver ctl --endpoints`).
    pub control_plane: String,
    /// The data directory, when the test did not pass its own `--data`.
    _data: Option<tempfile::TempDir>,
}

impl QuiverDev {
    /// Starts `quiver dev --listen 127.0.0.1:0 <args>` and waits for its startup line.
    pub fn start(args: &[&str]) -> QuiverDev {
        QuiverDev::start_with_env(args, &[])
    }

    /// [`QuiverDev::start`] with extra environment variables for the process.
    pub fn start_with_env(args: &[&str], env: &[(&str, &Path)]) -> QuiverDev {
        QuiverDev::start_logging(args, env, Stdio::inherit())
    }

    /// [`QuiverDev::start_with_env`] writing the process's log (stderr,
    /// `RUST_LOG=info` unless set) to `log`.
    pub fn start_logging_to(args: &[&str], log: &Path) -> QuiverDev {
        let file = std::fs::File::create(log).expect("a log file");
        let level = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
        QuiverDev::start_logging(args, &[("RUST_LOG", Path::new(&level))], Stdio::from(file))
    }

    fn start_logging(args: &[&str], env: &[(&str, &Path)], log: Stdio) -> QuiverDev {
        let data = (!args.contains(&"--data")).then(|| tempfile::tempdir().expect("temp dir"));
        let mut command = Command::new(quiver_bin());
        command
            .arg("dev")
            .args(["--listen", "127.0.0.1:0"])
            .args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        if let Some(dir) = &data {
            command.arg("--data").arg(dir.path());
        }
        if !args.contains(&"--control-plane-listen") {
            command.args(["--control-plane-listen", "127.0.0.1:0"]);
        }
        let (child, banner) = spawn_with_banner_logging(&mut command, "quiver dev", log);
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("no URL in startup line: {banner}"))
            .to_string();
        let control_plane = banner
            .split("control plane ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        QuiverDev {
            child,
            url,
            banner,
            control_plane,
            _data: data,
        }
    }

    /// URL of one mode's endpoint, `/{mode}/mcp`.
    pub fn mode_url(&self, mode: &str) -> String {
        format!("{}/{mode}/mcp", self.url.trim_end_matches("/mcp"))
    }

    /// `host:port` of the listener.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }

    /// `GET /status` of the edge, as JSON: from its admin listener when it
    /// has one (an edge that authenticates clients serves it there only).
    pub async fn status(&self) -> Value {
        let base = if self.banner.contains("; admin ") {
            word_after(&self.banner, "admin")
        } else {
            format!("http://{}", self.authority())
        };
        http()
            .get(format!("{base}/status"))
            .send()
            .await
            .expect("GET /status")
            .json()
            .await
            .expect("/status is JSON")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (polling, up to `limit`) for the process to exit; its status, or
    /// `None` if it is still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl QuiverDev {
    /// SIGTERM, then waits (bounded) for the process to exit.
    pub fn stop_gracefully(mut self) {
        let pid = i32::try_from(self.pid()).expect("pid fits");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM");
        assert!(
            self.wait_exit(Duration::from_secs(30)).is_some(),
            "quiver dev ignored SIGTERM"
        );
    }
}

/// The admin listener's URL a startup line names (`…; admin URL`).
fn admin_of(banner: &str) -> Option<String> {
    banner
        .split("; admin ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|url| url.trim_end_matches([';', ',']).to_string())
}

/// The `host:port` an edge's startup line says it serves MCP on.
pub fn mcp_authority(banner: &str) -> String {
    banner
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("no URL in: {banner}"))
        .to_string()
}

/// A running `quiver edge` (killed on drop).
pub struct EdgeProcess {
    child: Child,
    /// `host:port` it serves MCP on.
    pub authority: String,
    /// Its admin listener's URL, when started with `--admin-listen`.
    pub admin: Option<String>,
    control_plane: String,
    extra: Vec<String>,
}

impl EdgeProcess {
    /// `quiver edge --listen 127.0.0.1:0 --control-plane <control_plane>`.
    pub fn start(control_plane: &str) -> EdgeProcess {
        EdgeProcess::start_with(control_plane, &[])
    }

    /// The same with `extra` arguments.
    pub fn start_with(control_plane: &str, extra: &[&str]) -> EdgeProcess {
        EdgeProcess::spawn("127.0.0.1:0", control_plane, extra)
    }

    /// SIGTERM, waits for it to exit, and starts it again on the same
    /// address with the same arguments.
    pub fn restart_gracefully(&mut self) {
        let status = terminate(&mut self.child, "the edge");
        assert!(status.success(), "the edge exited with {status}");
        let (control_plane, extra) = (self.control_plane.clone(), self.extra.clone());
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        *self = EdgeProcess::spawn(&self.authority.clone(), &control_plane, &extra);
    }

    fn spawn(listen: &str, control_plane: &str, extra: &[&str]) -> EdgeProcess {
        let mut command = Command::new(quiver_bin());
        command
            .args(["edge", "--listen", listen, "--control-plane", control_plane])
            .args(extra);
        // `/status` is an operator's: an edge that authenticates its
        // clients serves it on its admin listener only.
        if !extra.contains(&"--admin-listen") {
            command.args(["--admin-listen", "127.0.0.1:0"]);
        }
        let (child, banner) = spawn_with_banner(&mut command, "quiver edge");
        assert!(banner.contains("quiver edge: serving"), "{banner}");
        let authority = mcp_authority(&banner);
        EdgeProcess {
            child,
            admin: admin_of(&banner),
            authority,
            control_plane: control_plane.to_string(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// SIGTERM, without waiting for it to exit.
    pub fn ask_to_stop(&self) {
        let pid = i32::try_from(self.child.id()).expect("pid fits");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM");
    }

    /// Waits (bounded) for it to exit after [`Self::ask_to_stop`].
    pub fn exit_status(&mut self) -> std::process::ExitStatus {
        for _ in 0..1500 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the edge did not exit within 30 s of SIGTERM");
    }

    /// `kill -9`, and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The MCP URL of `mode`.
    pub fn url(&self, mode: &str) -> String {
        format!("http://{}/{mode}/mcp", self.authority)
    }

    /// Its `/status` (from its admin listener).
    pub async fn status(&self) -> Value {
        let base = match &self.admin {
            Some(admin) => admin.trim_end_matches('/').to_string(),
            None => format!("http://{}", self.authority),
        };
        http()
            .get(format!("{base}/status"))
            .send()
            .await
            .expect("GET /status")
            .json()
            .await
            .expect("/status is JSON")
    }

    /// The executors its `/status` lists.
    pub async fn executors(&self) -> Vec<Value> {
        self.status().await["executors"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls `/status` until `done` holds for the executor list (bounded).
    pub async fn until(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        for _ in 0..600 {
            let executors = self.executors().await;
            if done(&executors) {
                return executors;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "{what}: not within 30 s; executors: {:?}",
            self.executors().await
        );
    }
}

impl Drop for EdgeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `quiver-test-kit mock-upstream --demo` over Streamable HTTP on a free
/// loopback port (killed on drop).
pub struct MockHttpUpstream {
    child: Child,
    /// Its MCP URL.
    pub url: String,
}

impl MockHttpUpstream {
    /// Starts it with `extra` arguments (e.g. `--server weather`).
    pub fn start(extra: &[&str]) -> MockHttpUpstream {
        let mut command = Command::new(test_kit_bin());
        command
            .args(["mock-upstream", "--demo"])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra);
        let (child, banner) = spawn_with_banner(&mut command, "mock-upstream");
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in: {banner}"))
            .to_string();
        MockHttpUpstream { child, url }
    }
}

impl Drop for MockHttpUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for QuiverDev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client handler that reports `tools/list_changed` on a channel.
#[derive(Clone)]
pub struct Watcher {
    pub changed: tokio::sync::mpsc::UnboundedSender<()>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

/// A plain HTTP client (rustls with ring, like the `quiver` binary).
pub fn http() -> reqwest::Client {
    quiver_upstream::install_crypto_provider();
    reqwest::Client::new()
}

/// A plain rmcp client over Streamable HTTP.
pub async fn connect(url: &str) -> RunningService<RoleClient, ()> {
    quiver_upstream::install_crypto_provider();
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .expect("MCP client connects")
}

/// An rmcp client presenting `credential` (an API key or an access token)
/// as `Authorization: Bearer`.
pub async fn connect_as(url: &str, credential: &str) -> RunningService<RoleClient, ()> {
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(credential.to_string());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects with its credential")
}

/// A raw MCP `initialize` POST to `url`, with `authorization` as the whole
/// `Authorization` header value when given (`Bearer …`, `Basic …`).
pub async fn post_initialize(url: &str, authorization: Option<&str>) -> reqwest::Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.expect("POST initialize")
}

/// A client that reports tool-list changes.
pub async fn connect_watching(
    url: &str,
) -> (
    RunningService<RoleClient, Watcher>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    quiver_upstream::install_crypto_provider();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Watcher { changed: tx }
        .serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .expect("MCP client connects");
    (client, rx)
}

/// Calls a tool with JSON arguments.
pub async fn call<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let arguments: Option<JsonObject> = args.as_object().cloned();
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = arguments;
    client
        .call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("tools/call {name} failed at the protocol level: {e}"))
}

/// All text content of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .filter_map(|v| v.get("text").and_then(Value::as_str).map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `contents` to `name` in `dir` and returns the path.
pub fn write_file(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write file");
    path
}

/// Writes `config` to a temporary `quiver.toml` and starts `quiver dev` on it;
/// the directory lives as long as the returned guard.
pub fn start_with_config(config: &str, args: &[&str]) -> (QuiverDev, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_file(dir.path(), "quiver.toml", config);
    let mut all = vec!["--config", path.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    (QuiverDev::start(&all), dir)
}

/// The names `tools/list` returns, in order.
pub async fn tool_names<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// A loopback port the test holds from first use to last, so no other process
/// can take it in between: bound but not listening (connections to it are
/// refused) until [`HeldPort::forward_to`] starts accepting on it.
pub struct HeldPort {
    socket: tokio::net::TcpSocket,
    /// `127.0.0.1:<port>`.
    pub addr: std::net::SocketAddr,
}

impl HeldPort {
    /// Binds a fresh loopback port, without listening.
    pub fn new() -> HeldPort {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket
            .bind(([127, 0, 0, 1], 0).into())
            .expect("bind a loopback port");
        let addr = socket.local_addr().expect("its address");
        HeldPort { socket, addr }
    }

    /// Starts listening on the held port and relays every connection to
    /// `target` (`host:port`), until the returned task is aborted.
    pub fn forward_to(self, target: String) -> tokio::task::JoinHandle<()> {
        let listener = self.socket.listen(64).expect("listen on the held port");
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = target.clone();
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        })
    }
}

/// The address a `quiver control-plane` startup line says it is serving on.
pub fn serving_addr(banner: &str) -> String {
    banner
        .split("serving on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no bound address in: {banner}"))
        .to_string()
}

/// The word after `key` in a startup line (`; admin http://…;` → the URL).
pub fn word_after(banner: &str, key: &str) -> String {
    banner
        .split_whitespace()
        .skip_while(|w| *w != key)
        .nth(1)
        .map(|w| w.trim_end_matches([';', ',']).to_string())
        .unwrap_or_else(|| panic!("no `{key}` in the startup line: {banner}"))
}

/// The text of `server`'s tool `tool`, called with no arguments in every
/// mode of `dev` as `credential` (none: anonymously): directly in
/// passthrough, through search mode's `call_tool`, and from a code-mode
/// script.
pub async fn text_in_every_mode(
    dev: &QuiverDev,
    credential: Option<&str>,
    server: &str,
    tool: &str,
) -> [String; 3] {
    let client = |mode: &str| {
        let url = dev.mode_url(mode);
        async move {
            match credential {
                Some(credential) => connect_as(&url, credential).await,
                None => connect(&url).await,
            }
        }
    };
    let direct = call(
        &client("passthrough").await,
        &format!("{server}__{tool}"),
        json!({}),
    )
    .await;
    let searched = call(
        &client("search").await,
        "call_tool",
        json!({"name": format!("{server}__{tool}"), "arguments": {}}),
    )
    .await;
    let script = format!("return await tools.{server}.{tool}({{}});");
    let scripted = call(&client("code").await, "execute", json!({ "code": script })).await;
    [text(&direct), text(&searched), text(&scripted)]
}
