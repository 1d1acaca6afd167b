//! Disaster recovery, drilled with real processes on loopback: a
//! three-node control plane holding tenants, keys, sealed secrets and an
//! OAuth grant serves two edges and two executors; `quiver ctl snapshot
//! save` takes a backup; more is written after it; every control-plane
//! node is killed and its data deleted. Bad backups and a wrong cluster key
//! are refused with what to do. `quiver control-plane --restore` seeds a
//! fresh node 1, two fresh nodes join it, and without a restart of their
//! own the edges and executors serve again: every key of the backup
//! authenticates through both edges, secrets and the grant still reach
//! their upstreams, and nothing written after the backup is there.

use crate::support;

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use support::{
    EdgeProcess, ExecutorProcess, MockHttpUpstream, add_demo_upstream, call, connect_as, ctl,
    ctl_json, ctl_until, protected_upstream::protected_upstream, start_three_node_cluster_with,
    tenant_with_key, text, until_upstream_lists,
};

use crate::{
    tenant_secrets::{fresh_token, set_token, sha256},
    upstream_oauth_grant::{authorize_link, open_link},
};

/// The mock's tool that reports a request header's SHA-256.
const HEADER_TOOL: &str = "hdr__quiver_test_request_header";

/// A cluster key file (32 random bytes, base64) in `dir`.
fn key_file(dir: &std::path::Path, name: &str) -> String {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).unwrap();
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    let path = support::write_file(dir, name, &format!("{text}\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path.display().to_string()
}

/// The SHA-256 the upstream saw of the `Authorization` of `key`'s call
/// through `url` (passthrough), retried (bounded) while the fleet catches
/// up.
async fn authorization_through(url: &str, key: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let client = connect_as(url, key).await;
        let result = call(&client, HEADER_TOOL, json!({"name": "authorization"})).await;
        let answer = text(&result);
        let _ = client.cancel().await;
        if result.is_error != Some(true) {
            let seen: Value = serde_json::from_str(&answer).expect("the mock answers JSON");
            return seen["sha256"].as_str().unwrap_or_default().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "{url}: the call never reached the upstream: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the grant-backed upstream answers `key`'s `whoami` through `url`,
/// retried (bounded) while the fleet catches up.
async fn whoami_through(url: &str, key: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let client = connect_as(url, key).await;
        let result = call(&client, "tracker__whoami", json!({})).await;
        let _ = client.cancel().await;
        if result.is_error != Some(true) {
            return text(&result);
        }
        assert!(
            Instant::now() < deadline,
            "{url}: whoami never answered: {}",
            text(&result)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The HTTP status an `initialize` with `key` gets at `url`.
async fn initialize_status(url: &str, key: &str) -> u16 {
    support::post_initialize(url, Some(&format!("Bearer {key}")))
        .await
        .status()
        .as_u16()
}

/// Waits (bounded) until an `initialize` with `key` at `url` gets `want`.
async fn until_status(url: &str, key: &str, want: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = initialize_status(url, key).await;
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {url} answers {status}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (bounded) until `key`'s `tools/list` at `url` does (`listed`) or
/// does not list the weather upstream's `get_forecast`.
async fn until_listed(url: &str, key: &str, listed: bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let client = connect_as(url, key).await;
        let names = support::tool_names(&client).await;
        let _ = client.cancel().await;
        if names.iter().any(|n| n == "weather__get_forecast") == listed {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {url} lists {names:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Through `url`, each `(key, token)` of `tenants` reaches the
/// secret-bearing upstream with its token, and `granted`'s call reaches the
/// OAuth upstream as the person who granted it.
async fn serves(url: &str, tenants: &[(&String, &String)], granted: &str) {
    for (key, token) in tenants {
        assert_eq!(
            authorization_through(url, key).await,
            sha256(&format!("Bearer {token}")),
            "the upstream sees the token of the key's tenant"
        );
    }
    assert!(whoami_through(url, granted).await.contains("user alice"));
}

/// `quiver control-plane --restore FILE` on an empty data directory, which
/// must refuse to start; returns what it printed.
fn refused_restore(data: &std::path::Path, backup: &str, key: &str) -> String {
    let output = std::process::Command::new(support::quiver_bin())
        .args(["control-plane", "--node-id", "1", "--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(data)
        .args(["--restore", backup, "--cluster-key-file", key])
        .output()
        .expect("run quiver control-plane");
    assert!(!output.status.success(), "a bad restore must not start");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_restored_from_a_backup_serves_every_key_secret_and_grant_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "cluster.key");
    let key_flag = ["--cluster-key-file", key.as_str()];
    let (mut nodes, endpoints) = start_three_node_cluster_with(dir.path(), &key_flag);

    eprintln!("--- a per-tenant-secret upstream, two tenants with keys and tokens");
    let hdr = MockHttpUpstream::start(&[]);
    let (ok, _, err) = ctl(
        &endpoints,
        &[
            "upstream",
            "add",
            "hdr",
            "--url",
            &hdr.url,
            "--header",
            "Authorization=Bearer ${tenant_secret:API_TOKEN}",
        ],
    );
    assert!(ok, "upstream add hdr: {err}");
    let acme = tenant_with_key(&endpoints, "acme", "passthrough");
    let beta = tenant_with_key(&endpoints, "beta", "passthrough");
    let acme_second = ctl_json(&endpoints, &["key", "issue", "acme"])["key"]
        .as_str()
        .expect("a key")
        .to_string();
    let (acme_token, beta_token) = (fresh_token("acme"), fresh_token("beta"));
    set_token(&endpoints, "acme", &acme_token);
    set_token(&endpoints, "beta", &beta_token);

    eprintln!("--- two executors and two edges follow the cluster");
    let executors: Vec<ExecutorProcess> = (1..=2)
        .map(|i| {
            ExecutorProcess::start(&[
                "--control-plane",
                &endpoints,
                "--node-name",
                &format!("exec-{i}"),
                "--cluster-key-file",
                &key,
            ])
        })
        .collect();
    let edges: Vec<EdgeProcess> = (0..2)
        .map(|_| EdgeProcess::start_with(&endpoints, &["--auth", "required"]))
        .collect();
    let urls: Vec<String> = edges.iter().map(|e| e.url("passthrough")).collect();

    eprintln!("--- acme grants access to an OAuth upstream through the first edge");
    let (tracker_url, seen) = protected_upstream().await;
    *seen.person.lock().unwrap() = "alice".into();
    let callback = format!("http://{}/oauth/callback", edges[0].authority);
    let (ok, _, err) = ctl(
        &endpoints,
        &[
            "upstream",
            "add",
            "tracker",
            "--url",
            &tracker_url,
            "--oauth",
            &callback,
        ],
    );
    assert!(ok, "upstream add tracker: {err}");
    let (status, page) = open_link(&authorize_link(&endpoints, "acme")).await;
    assert_eq!(status, 200, "{page}");
    until_upstream_lists(&endpoints, "tracker", 1);

    eprintln!("--- before: each key through each edge reaches the upstreams with its secret");
    let tenants = [
        (&acme, &acme_token),
        (&acme_second, &acme_token),
        (&beta, &beta_token),
    ];
    for url in &urls {
        serves(url, &tenants, &acme).await;
    }

    eprintln!("--- snapshot save, and inspect the file");
    let backup = dir.path().join("cluster.qbackup").display().to_string();
    let saved = ctl_json(&endpoints, &["snapshot", "save", &backup]);
    assert!(saved["bytes"].as_u64().unwrap_or(0) > 0, "{saved}");
    let inspected = ctl_json(&endpoints, &["snapshot", "inspect", &backup]);
    assert_eq!(inspected["counts"]["tenants"], 2, "{inspected}");
    assert_eq!(inspected["counts"]["api_keys"], 3, "{inspected}");
    // Two tokens set by operators, and the access token of acme's grant.
    assert_eq!(inspected["counts"]["secrets"], 3, "{inspected}");
    assert_eq!(inspected["counts"]["oauth_grants"], 1, "{inspected}");
    assert_eq!(inspected["counts"]["upstreams"], 2, "{inspected}");
    let file = std::fs::read(&backup).unwrap();
    for secret in [&acme_token, &beta_token, &acme, &beta] {
        assert!(
            !file.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the backup holds a plaintext secret or key"
        );
    }

    eprintln!("--- written after the backup: a tenant, a key, a new token");
    let late = tenant_with_key(&endpoints, "late", "passthrough");
    let acme_after = ctl_json(&endpoints, &["key", "issue", "acme"])["key"]
        .as_str()
        .expect("a key")
        .to_string();
    let beta_new_token = fresh_token("beta-new");
    set_token(&endpoints, "beta", &beta_new_token);
    // A manifest change too: edges and executors hold a newer version
    // than the backup's when the cluster is lost.
    add_demo_upstream(&endpoints, "weather", "weather", &[]);
    for url in &urls {
        until_status(url, &late, 200, "the late tenant works before the loss").await;
        until_status(url, &acme_after, 200, "the late key works before the loss").await;
        until_listed(url, &acme, true, "the late upstream's tools reach the edge").await;
    }

    eprintln!("--- every control-plane node is lost with its disk");
    for node in &mut nodes {
        node.kill_and_wipe();
    }
    let (ok, _, _) = ctl(&endpoints, &["cluster", "status"]);
    assert!(!ok, "no node answers");

    eprintln!("--- bad backups and a wrong key are refused, each saying what to do");
    let scratch = dir.path().join("scratch");
    let truncated = support::write_file(dir.path(), "truncated.qbackup", "");
    std::fs::write(&truncated, &file[..file.len() / 2]).unwrap();
    let said = refused_restore(&scratch.join("a"), truncated.to_str().unwrap(), &key);
    assert!(
        said.contains("truncated") && said.contains("another copy"),
        "{said}"
    );
    let mut flipped = file.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x20;
    let damaged = dir.path().join("damaged.qbackup");
    std::fs::write(&damaged, &flipped).unwrap();
    let said = refused_restore(&scratch.join("b"), damaged.to_str().unwrap(), &key);
    assert!(said.contains("damaged"), "{said}");
    let said = refused_restore(&scratch.join("c"), key.as_str(), &key);
    assert!(said.contains("not a Quiver control-plane backup"), "{said}");
    let other_key = key_file(dir.path(), "other.key");
    let said = refused_restore(&scratch.join("d"), &backup, &other_key);
    assert!(
        said.contains("cannot open") && said.contains("the key the backed-up cluster ran with"),
        "{said}"
    );

    eprintln!("--- restore: node 1 from the backup, nodes 2 and 3 fresh, joined as at first");
    nodes[0].restart_with(&["--restore", &backup]);
    for node in &mut nodes[1..] {
        node.restart();
    }
    support::join_the_first(&nodes, &endpoints);
    ctl_until(
        &endpoints,
        &["-o", "json", "cluster", "status"],
        |ok, out| {
            ok && serde_json::from_str::<Value>(out).is_ok_and(|s| {
                s["members"].as_array().is_some_and(|m| {
                    m.iter()
                        .filter(|n| n["role"] == "leader" || n["role"] == "follower")
                        .count()
                        == 3
                })
            })
        },
    );

    eprintln!("--- the edges and executors follow the restored cluster by themselves");
    for url in &urls {
        // Written after the backup: gone.
        until_status(url, &late, 401, "the late tenant's key is refused").await;
        until_status(
            url,
            &acme_after,
            401,
            "the key issued after the backup is refused",
        )
        .await;
        until_listed(url, &acme, false, "the late upstream's tools are gone").await;
        // Every key of the backup authenticates, and its secrets (beta's
        // token of the backup, not the later one) and the grant reach the
        // upstreams.
        for (key, _) in tenants {
            until_status(url, key, 200, "a key of the backup authenticates").await;
        }
        serves(url, &tenants, &acme).await;
    }
    let tenants = ctl_json(&endpoints, &["tenant", "list"]);
    let ids: Vec<&str> = tenants
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"acme") && ids.contains(&"beta") && !ids.contains(&"late"),
        "{ids:?}"
    );
    // The restored manifest version is past any the lost cluster issued.
    let status = ctl_json(&endpoints, &["cluster", "status"]);
    assert!(
        status["manifest_version"].as_u64().unwrap_or(0) >= 1_000_000_000,
        "{status}"
    );
    drop(executors);
}
