//! Per-tenant upstream credentials through real processes. An HTTP mock
//! upstream reports (as SHA-256s, never values) the `Authorization` header of
//! every request it gets; `quiver dev --auth required` registers it with
//! `Authorization: Bearer ${tenant_secret:API_TOKEN}`; operators set each
//! tenant's token with `quiver ctl secret set` on standard input. Each
//! tenant's calls reach the upstream with its own token and never another's,
//! a tenant without the secret is told how to fix it and the upstream sees
//! nothing of it, and the plaintext is nowhere: not in quiver's output, not
//! in `ctl` answers, not in any file of the data directory.

use crate::support;

use std::{
    collections::BTreeSet,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient, ServiceExt,
    model::CallToolRequestParams,
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use support::{ControlPlaneProcess, MockHttpUpstream, ctl, ctl_json, quiver_bin, text};

/// The exposed name of the mock's header-reporting tool.
const HEADER_TOOL: &str = "hdr__quiver_test_request_header";
/// The exposed name of the mock's counters.
const STATS_TOOL: &str = "hdr__quiver_test_stats";

/// Hex SHA-256, as the mock upstream reports headers.
pub(crate) fn sha256(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A token no other run (or other tenant) shares.
pub(crate) fn fresh_token(who: &str) -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 12];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("randomness");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("tok-{who}-{hex}")
}

/// `quiver dev` with its stdout and stderr written to files, so the test can
/// search everything it printed (killed on drop).
struct LoggedDev {
    child: Child,
    url: String,
    control_plane: String,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl LoggedDev {
    /// Starts `quiver dev <args>` at debug level, output in `logs/<name>.*`.
    fn start(args: &[&str], logs: &Path, name: &str) -> LoggedDev {
        let stdout = logs.join(format!("{name}.stdout"));
        let stderr = logs.join(format!("{name}.stderr"));
        let child = Command::new(quiver_bin())
            .arg("dev")
            .args([
                "--listen",
                "127.0.0.1:0",
                "--control-plane-listen",
                "127.0.0.1:0",
            ])
            .args(args)
            .env("RUST_LOG", "debug")
            .env_remove("QUIVER_CLUSTER_KEY")
            .env_remove("QUIVER_CLUSTER_KEY_FILE")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn quiver dev");
        let deadline = Instant::now() + Duration::from_secs(120);
        let banner = loop {
            let printed = std::fs::read_to_string(&stdout).unwrap_or_default();
            if let Some(line) = printed
                .lines()
                .find(|l| l.starts_with("quiver dev: serving"))
            {
                break line.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "quiver dev printed no startup line; stderr:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // Passthrough: the upstream's tools are called by their own names.
        let url = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|u| format!("{}/passthrough/mcp", u.trim_end_matches("/mcp")))
            .unwrap_or_else(|| panic!("no URL in: {banner}"));
        let control_plane = banner
            .split("control plane ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_string();
        LoggedDev {
            child,
            url,
            control_plane,
            stdout,
            stderr,
        }
    }

    /// Everything it printed so far.
    fn output(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!("{}{}", read(&self.stdout), read(&self.stderr))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LoggedDev {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `quiver ctl <args>` with `input` on its standard input; (success, stdout, stderr).
fn ctl_with_stdin(endpoints: &str, args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(quiver_bin())
        .args(["ctl", "--endpoints", endpoints])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run quiver ctl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the secret");
    let output = child.wait_with_output().expect("quiver ctl ends");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Sets `tenant`'s `API_TOKEN` from standard input, as an operator would
/// (with the newline `echo` adds); returns what `ctl` printed.
pub(crate) fn set_token(cp: &str, tenant: &str, token: &str) -> String {
    let (ok, out, err) = ctl_with_stdin(
        cp,
        &["secret", "set", "--tenant", tenant, "API_TOKEN"],
        &format!("{token}\n"),
    );
    assert!(ok, "secret set for {tenant}: {err}");
    format!("{out}{err}")
}

/// A client presenting `key` at `url`.
async fn connect_as(url: &str, key: &str) -> RunningService<RoleClient, ()> {
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(key.to_string());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects with its key")
}

/// Calls `name` with `args`; (is_error, text).
async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, String) {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    let result = client
        .call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    (result.is_error == Some(true), text(&result))
}

/// The SHA-256 of the `Authorization` header the upstream got with this call.
async fn authorization_seen(client: &RunningService<RoleClient, ()>) -> String {
    let (is_error, answer) = call(client, HEADER_TOOL, json!({"name": "authorization"})).await;
    assert!(!is_error, "the header tool failed: {answer}");
    let answer: Value = serde_json::from_str(&answer).expect("the tool answers JSON");
    answer["sha256"]
        .as_str()
        .unwrap_or_else(|| panic!("the upstream got no Authorization header: {answer}"))
        .to_string()
}

/// The mock's counters, read through `client`.
async fn upstream_stats(client: &RunningService<RoleClient, ()>) -> Value {
    let (is_error, answer) = call(client, STATS_TOOL, json!({})).await;
    assert!(!is_error, "{answer}");
    serde_json::from_str(&answer).expect("stats are JSON")
}

/// Creates `id` and issues it a key.
fn tenant_with_key(cp: &str, id: &str) -> String {
    let (ok, _, err) = ctl(cp, &["tenant", "create", id]);
    assert!(ok, "tenant create {id}: {err}");
    let key = ctl_json(cp, &["key", "issue", id]);
    key["key"].as_str().expect("the key").to_string()
}

/// Every file under `dir`, recursively, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                found.push((path, bytes));
            }
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Asserts no file under `dir` holds any of `plaintexts`; returns the files.
fn assert_no_plaintext_in(dir: &Path, plaintexts: &[&str]) -> Vec<(PathBuf, Vec<u8>)> {
    let files = files_under(dir);
    for (path, bytes) in &files {
        for secret in plaintexts {
            assert!(
                !contains(bytes, secret),
                "{} holds a plaintext secret",
                path.display()
            );
        }
    }
    files
}

/// Waits until the upstream's tools are in the manifest (discovery listed
/// them with a tenant's credentials).
fn wait_for_tools(cp: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = ctl_json(cp, &["upstream", "list"]);
        let tools = listed
            .as_array()
            .and_then(|a| a.iter().find(|u| u["id"] == "hdr"))
            .and_then(|u| u["tools"].as_u64())
            .unwrap_or(0);
        if tools > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "discovery never listed the per-tenant upstream: {listed}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_tenant_reaches_the_upstream_with_its_own_secret_and_the_plaintext_is_nowhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let upstream = MockHttpUpstream::start(&[]);
    let config = support::write_file(
        dir.path(),
        "quiver.toml",
        &format!(
            "[[upstream]]\nid = \"hdr\"\ntransport = \"http\"\nurl = \"{}\"\nheaders = {{ Authorization = \"Bearer ${{tenant_secret:API_TOKEN}}\" }}\n",
            upstream.url
        ),
    );
    let config = config.to_str().unwrap().to_string();
    let data_arg = data.to_str().unwrap().to_string();
    let dev_args = [
        "--config",
        config.as_str(),
        "--auth",
        "required",
        "--data",
        data_arg.as_str(),
    ];
    let (token_a, token_a2, token_b) = (
        fresh_token("alpha"),
        fresh_token("alpha2"),
        fresh_token("beta"),
    );
    let plaintexts = [token_a.as_str(), token_a2.as_str(), token_b.as_str()];
    let mut ctl_said = String::new();

    tracing::info!(
        "--- quiver dev makes its cluster key; operators set two tenants' tokens on stdin"
    );
    let mut dev = LoggedDev::start(&dev_args, &logs, "first");
    let cp = dev.control_plane.clone();
    let key_file = data.join("cluster.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file)
            .expect("dev made cluster.key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "cluster.key must be private");
    }
    let key_alpha = tenant_with_key(&cp, "alpha");
    let key_beta = tenant_with_key(&cp, "beta");
    let key_gamma = tenant_with_key(&cp, "gamma");
    ctl_said += &set_token(&cp, "alpha", &token_a);
    ctl_said += &set_token(&cp, "beta", &token_b);
    let (ok, _, err) = ctl_with_stdin(
        &cp,
        &["secret", "set", "--tenant", "alpha", "API_TOKEN"],
        "",
    );
    assert!(
        !ok && err.contains("no value on standard input"),
        "an empty value must be refused: {err}"
    );
    wait_for_tools(&cp);

    tracing::info!(
        "--- interleaved and concurrent calls: each tenant's own token, never another's"
    );
    let alpha = connect_as(&dev.url, &key_alpha).await;
    let beta = connect_as(&dev.url, &key_beta).await;
    let gamma = connect_as(&dev.url, &key_gamma).await;
    let (want_a, want_b) = (
        sha256(&format!("Bearer {token_a}")),
        sha256(&format!("Bearer {token_b}")),
    );
    let mut header_calls = 0u64;
    for _ in 0..3 {
        assert_eq!(authorization_seen(&alpha).await, want_a);
        assert_eq!(authorization_seen(&beta).await, want_b);
        header_calls += 2;
    }
    for _ in 0..4 {
        let (a, b) = tokio::join!(authorization_seen(&alpha), authorization_seen(&beta));
        assert_eq!((a, b), (want_a.clone(), want_b.clone()));
        header_calls += 2;
    }

    tracing::info!(
        "--- a tenant without the secret is told the fix and the upstream sees nothing of it"
    );
    let (is_error, refusal) = call(&gamma, HEADER_TOOL, json!({"name": "authorization"})).await;
    assert!(is_error, "gamma has no API_TOKEN: {refusal}");
    assert!(
        refusal.contains("API_TOKEN")
            && refusal.contains("quiver ctl secret set --tenant gamma API_TOKEN"),
        "the error names the secret and the fix: {refusal}"
    );
    let stats = upstream_stats(&alpha).await;
    assert_eq!(
        stats["calls"]["quiver_test_request_header"].as_u64(),
        Some(header_calls),
        "gamma's call must not reach the upstream: {stats}"
    );
    let client_keys: Vec<String> = [&key_alpha, &key_beta, &key_gamma]
        .iter()
        .flat_map(|k| [sha256(k), sha256(&format!("Bearer {k}"))])
        .collect();
    let seen: BTreeSet<String> = stats["authorization_sha256"]
        .as_object()
        .expect("the HTTP mock counts Authorization headers")
        .keys()
        .cloned()
        .collect();
    assert!(
        seen.is_subset(&BTreeSet::from([want_a.clone(), want_b.clone()])),
        "every request the upstream got carried alpha's or beta's token (never none, never a client's key): {seen:?}"
    );
    assert!(client_keys.iter().all(|k| !seen.contains(k)));

    tracing::info!("--- an upstream that echoes the credential has it replaced by value");
    let (is_error, echoed) = call(
        &alpha,
        HEADER_TOOL,
        json!({"name": "authorization", "echo": true}),
    )
    .await;
    header_calls += 1;
    assert!(!is_error, "{echoed}");
    let echoed: Value = serde_json::from_str(&echoed).expect("the tool answers JSON");
    assert_eq!(echoed["sha256"], want_a.as_str());
    assert_eq!(echoed["value"], "Bearer [redacted]", "{echoed}");

    tracing::info!("--- secret list shows names only; tenant show and the event log show no value");
    let (ok, listed, err) = ctl(&cp, &["secret", "list", "--tenant", "alpha"]);
    assert!(ok && listed.contains("API_TOKEN"), "{listed}{err}");
    let listed_json = ctl_json(&cp, &["secret", "list", "--tenant", "alpha"]);
    assert_eq!(
        listed_json["secrets"][0]["name"], "API_TOKEN",
        "{listed_json}"
    );
    let names: Vec<&str> = listed_json["secrets"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["name", "updated_ms"], "names and times only");
    ctl_said += &listed;
    ctl_said += &listed_json.to_string();
    for args in [
        &["tenant", "show", "alpha"][..],
        &["-o", "json", "tenant", "show", "alpha"],
        &["-o", "json", "upstream", "drift"],
    ] {
        let (ok, out, err) = ctl(&cp, args);
        assert!(ok, "{args:?}: {err}");
        ctl_said += &out;
        ctl_said += &err;
    }

    tracing::info!("--- a changed secret replaces the tenant's connection; a deleted one refuses");
    ctl_said += &set_token(&cp, "alpha", &token_a2);
    let want_a2 = sha256(&format!("Bearer {token_a2}"));
    assert_eq!(authorization_seen(&alpha).await, want_a2);
    assert_eq!(authorization_seen(&beta).await, want_b);
    header_calls += 2;
    let (ok, out, err) = ctl(&cp, &["secret", "delete", "--tenant", "beta", "API_TOKEN"]);
    assert!(ok, "secret delete: {err}");
    ctl_said += &out;
    let (is_error, refusal) = call(&beta, HEADER_TOOL, json!({"name": "authorization"})).await;
    assert!(
        is_error && refusal.contains("--tenant beta API_TOKEN"),
        "{refusal}"
    );
    let stats = upstream_stats(&alpha).await;
    assert_eq!(
        stats["calls"]["quiver_test_request_header"].as_u64(),
        Some(header_calls)
    );
    drop((alpha, beta, gamma));

    tracing::info!("--- a restart reuses cluster.key: the sealed secret still opens");
    dev.kill();
    let first_output = dev.output();
    let mut dev = LoggedDev::start(&dev_args, &logs, "second");
    let cp = dev.control_plane.clone();
    wait_for_tools(&cp);
    let alpha = connect_as(&dev.url, &key_alpha).await;
    assert_eq!(authorization_seen(&alpha).await, want_a2);
    drop(alpha);
    dev.kill();
    let second_output = dev.output();

    tracing::info!("--- the plaintext is nowhere: output, ctl answers, data directory");
    for (what, said) in [
        ("the first run", &first_output),
        ("the second run", &second_output),
        ("quiver ctl", &ctl_said),
    ] {
        assert!(
            said.len() > 100 || what == "quiver ctl",
            "{what} printed next to nothing"
        );
        for secret in plaintexts {
            assert!(!said.contains(secret), "{what} printed a plaintext secret");
        }
    }
    assert!(
        first_output.contains("cluster key"),
        "the debug log is what was searched"
    );
    let files = assert_no_plaintext_in(&data, &plaintexts);
    let raft = files
        .iter()
        .find(|(p, _)| p.ends_with("raft.redb"))
        .expect("the data directory has raft.redb");
    assert!(
        contains(&raft.1, "API_TOKEN") && contains(&raft.1, "ciphertext"),
        "raft.redb holds the sealed secrets the search looked through"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_control_plane_without_the_key_refuses_and_its_snapshots_hold_ciphertext_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    tracing::info!("--- a node given no key refuses with the fix");
    let keyless = ControlPlaneProcess::start(1, &dir.path().join("keyless"), &["--bootstrap"]);
    let (ok, _, err) = ctl(&keyless.addr, &["tenant", "create", "acme"]);
    assert!(ok, "{err}");
    let (ok, _, err) = ctl_with_stdin(
        &keyless.addr,
        &["secret", "set", "--tenant", "acme", "API_TOKEN"],
        "never-stored\n",
    );
    assert!(!ok, "a node without a cluster key must refuse");
    assert!(
        err.contains("no cluster key")
            && err.contains("QUIVER_CLUSTER_KEY")
            && err.contains("--cluster-key-file"),
        "the refusal names the fix: {err}"
    );
    assert!(!err.contains("never-stored"));
    drop(keyless);

    tracing::info!(
        "--- with a key and snapshots every 3 entries, every file holds ciphertext only"
    );
    let key_file = support::write_file(
        dir.path(),
        "cluster.key",
        &format!("{}\n", "Q".repeat(43) + "="),
    );
    let data = dir.path().join("keyed");
    let node = ControlPlaneProcess::start(
        1,
        &data,
        &[
            "--bootstrap",
            "--snapshot-every",
            "3",
            "--cluster-key-file",
            key_file.to_str().unwrap(),
        ],
    );
    let (ok, _, err) = ctl(&node.addr, &["tenant", "create", "acme"]);
    assert!(ok, "{err}");
    let tokens: Vec<String> = (0..6).map(|i| fresh_token(&format!("snap{i}"))).collect();
    for token in &tokens {
        let (ok, _, err) = ctl_with_stdin(
            &node.addr,
            &["secret", "set", "--tenant", "acme", "API_TOKEN"],
            token,
        );
        assert!(ok, "secret set: {err}");
    }
    let status = ctl_json(&node.addr, &["cluster", "status"]);
    assert!(
        status["snapshot"].as_u64().is_some(),
        "a snapshot was built: {status}"
    );
    drop(node);
    let plaintexts: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let files = assert_no_plaintext_in(&data, &plaintexts);
    assert!(
        files.iter().any(|(_, bytes)| contains(bytes, "ciphertext")),
        "the sealed secrets are there to search"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_executor_opens_each_tenants_secret_with_devs_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let upstream = MockHttpUpstream::start(&[]);
    let config = support::write_file(
        dir.path(),
        "quiver.toml",
        &format!(
            "[[upstream]]\nid = \"hdr\"\ntransport = \"http\"\nurl = \"{}\"\nheaders = {{ Authorization = \"Bearer ${{tenant_secret:API_TOKEN}}\" }}\ndiscovery_tenant = \"beta\"\n",
            upstream.url
        ),
    );
    let data = dir.path().join("data");
    tracing::info!("--- calls run in a `quiver executor` child that follows the control plane");
    let dev = LoggedDev::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--auth",
            "required",
            "--executor",
            "child",
            "--data",
            data.to_str().unwrap(),
        ],
        &logs,
        "child",
    );
    let cp = dev.control_plane.clone();
    let key_alpha = tenant_with_key(&cp, "alpha");
    let key_beta = tenant_with_key(&cp, "beta");
    let (token_a, token_b) = (fresh_token("alpha"), fresh_token("beta"));
    set_token(&cp, "alpha", &token_a);
    // Discovery waits for the tenant it was told to use.
    set_token(&cp, "beta", &token_b);
    wait_for_tools(&cp);
    let alpha = connect_as(&dev.url, &key_alpha).await;
    let beta = connect_as(&dev.url, &key_beta).await;
    let (want_a, want_b) = (
        sha256(&format!("Bearer {token_a}")),
        sha256(&format!("Bearer {token_b}")),
    );
    // The child hears of the secrets over its watch stream: the first call
    // may come before they arrive, and is then refused, never misrouted.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (is_error, answer) = call(&alpha, HEADER_TOOL, json!({"name": "authorization"})).await;
        if !is_error {
            let answer: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(answer["sha256"], want_a.as_str());
            break;
        }
        assert!(
            answer.contains("API_TOKEN") || answer.contains("no tenant secrets"),
            "{answer}"
        );
        assert!(
            Instant::now() < deadline,
            "the child never got the secrets: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for _ in 0..3 {
        let (a, b) = tokio::join!(authorization_seen(&alpha), authorization_seen(&beta));
        assert_eq!((a, b), (want_a.clone(), want_b.clone()));
    }
    let output = dev.output();
    for secret in [&token_a, &token_b] {
        assert!(
            !output.contains(secret.as_str()),
            "quiver printed a plaintext secret"
        );
    }
}
