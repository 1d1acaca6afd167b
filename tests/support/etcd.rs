//! A real etcd (Debian's `etcd-server`) on loopback for the membership
//! tests, read through its JSON gateway.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use base64::Engine as _;
use serde_json::{Value, json};

/// A running etcd (killed on drop).
pub struct Etcd {
    child: Option<Child>,
    binary: PathBuf,
    data: PathBuf,
    client_port: u16,
    peer_port: u16,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Etcd {
    /// The `etcd` binary; `None` (skip) only in a partial run, else the test
    /// fails saying how to install it.
    pub fn binary() -> Option<PathBuf> {
        let found = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("etcd"))
                .find(|p| p.is_file())
        });
        let path = found.unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"));
        super::partial_run::required_input(
            &path,
            "etcd is missing: run scripts/install-deps.sh (Debian's etcd-server)",
        )
    }

    /// Starts etcd with its data in `data` and waits until it is healthy.
    pub async fn start(binary: &Path, data: &Path) -> Etcd {
        let mut etcd = Etcd {
            child: None,
            binary: binary.to_path_buf(),
            data: data.to_path_buf(),
            client_port: free_port(),
            peer_port: free_port(),
        };
        etcd.run().await;
        etcd
    }

    async fn run(&mut self) {
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data.with_extension("log"))
            .expect("etcd log file");
        let child = Command::new(&self.binary)
            .args(["--name", "quiver-test", "--data-dir"])
            .arg(&self.data)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("quiver-test={peer}")])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let http = super::http();
        for _ in 0..300 {
            if let Ok(answer) = http.get(format!("{client}/health")).send().await
                && let Ok(health) = answer.json::<Value>().await
                && health["health"] == "true"
            {
                return;
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
            assert!(
                !exited,
                "etcd exited; see {}",
                self.data.with_extension("log").display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("etcd not healthy within 30 s");
    }

    /// `host:port` clients use.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same ports and data.
    pub async fn restart(&mut self) {
        self.kill();
        self.run().await;
    }

    /// The keys under `prefix`, sorted.
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        keys(&self.endpoint(), prefix).await
    }

    /// The values under `prefix`, by key.
    pub async fn read_prefix(&self, prefix: &str) -> Vec<(String, Value)> {
        read_prefix(&self.endpoint(), prefix).await
    }
}

/// The keys under `prefix` in the etcd at `endpoint` (`host:port`), sorted.
pub async fn keys(endpoint: &str, prefix: &str) -> Vec<String> {
    read_prefix(endpoint, prefix)
        .await
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

/// The values under `prefix` in the etcd at `endpoint` (`host:port`), by key.
pub async fn read_prefix(endpoint: &str, prefix: &str) -> Vec<(String, Value)> {
    {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().expect("a prefix") += 1;
        let answer: Value = super::http()
            .post(format!("http://{endpoint}/v3/kv/range"))
            .json(&json!({"key": b64.encode(prefix), "range_end": b64.encode(&end)}))
            .send()
            .await
            .expect("etcd range")
            .json()
            .await
            .expect("etcd answers JSON");
        answer["kvs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|kv| {
                let key = b64.decode(kv["key"].as_str().unwrap_or_default()).unwrap();
                let value = b64
                    .decode(kv["value"].as_str().unwrap_or_default())
                    .unwrap();
                (
                    String::from_utf8_lossy(&key).into_owned(),
                    serde_json::from_slice(&value).unwrap_or(Value::Null),
                )
            })
            .collect()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `quiver executor` named `name`, following `dev`'s control plane (its
/// cluster key in `data`) and registering in `etcd`.
pub fn executor(
    dev: &super::QuiverDev,
    data: &Path,
    etcd: &Etcd,
    name: &str,
) -> super::ExecutorProcess {
    let key = data.join("cluster.key");
    super::ExecutorProcess::start(&[
        "--control-plane",
        &dev.control_plane,
        "--etcd",
        &etcd.endpoint(),
        "--node-name",
        name,
        "--cluster-key-file",
        key.to_str().unwrap(),
    ])
}

/// The sorted names of the executors an edge's `/status` lists as `ok`.
pub fn ok_nodes(executors: &[Value]) -> Vec<String> {
    let mut nodes: Vec<String> = executors
        .iter()
        .filter(|e| e["state"] == "ok")
        .filter_map(|e| e["node"].as_str().map(str::to_string))
        .collect();
    nodes.sort();
    nodes
}
