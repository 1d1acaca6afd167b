//! `quiver control-plane` processes for tests: one node, restarted, killed,
//! or a three-node cluster formed with `quiver ctl`.

use super::*;

/// A running `quiver control-plane` node (SIGKILLed on drop).
pub struct ControlPlaneProcess {
    child: Option<Child>,
    /// Node id.
    pub id: u64,
    /// gRPC address.
    pub addr: String,
    /// Data directory.
    pub data: PathBuf,
    extra: Vec<String>,
}

impl ControlPlaneProcess {
    /// Starts node `id` with `data` on a port it chooses (`127.0.0.1:0`) and
    /// reads that address back from its startup line; `extra` are more flags
    /// (`--bootstrap`, `--snapshot-every N`).
    pub fn start(id: u64, data: &Path, extra: &[&str]) -> ControlPlaneProcess {
        let mut node = ControlPlaneProcess {
            child: None,
            id,
            addr: "127.0.0.1:0".to_string(),
            data: data.to_path_buf(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        node.restart();
        node
    }

    /// Starts the process again on the same address and data directory (the
    /// cluster's membership names that address, so a restarted node must come
    /// back on it; the port is free only between the kill and this restart).
    pub fn restart(&mut self) {
        self.restart_with(&[]);
    }

    /// [`Self::restart`] with `once` added to this start's arguments only
    /// (`--restore FILE`).
    pub fn restart_with(&mut self, once: &[&str]) {
        let mut command = Command::new(quiver_bin());
        command
            .args(["control-plane", "--node-id", &self.id.to_string()])
            .args(["--listen", &self.addr, "--data"])
            .arg(&self.data)
            .args(["--heartbeat-ms", "50", "--election-timeout-ms", "300"])
            .args(&self.extra)
            .args(once);
        let (child, banner) = spawn_with_banner(&mut command, "quiver control-plane");
        assert!(banner.contains("serving on"), "{banner}");
        self.addr = serving_addr(&banner);
        // Only the first start bootstraps; a restart resumes from disk.
        self.extra.retain(|a| a != "--bootstrap");
        self.child = Some(child);
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGTERM, and waits for it to exit.
    pub fn stop_gracefully(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("the node runs");
        terminate(&mut child, "the control-plane node")
    }

    /// `kill -9`, and its data directory deleted (a node lost with its disk).
    pub fn kill_and_wipe(&mut self) {
        self.kill();
        std::fs::remove_dir_all(&self.data).expect("delete the data directory");
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ControlPlaneProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts three `quiver control-plane` nodes in `dir` (node 1 bootstrapped),
/// adds 2 and 3 as learners and promotes them with `quiver ctl`; returns the
/// nodes and the comma-separated endpoints.
pub fn start_three_node_cluster(dir: &Path) -> (Vec<ControlPlaneProcess>, String) {
    start_three_node_cluster_with(dir, &[])
}

/// [`start_three_node_cluster`] with `extra` arguments for every node
/// (`--cluster-key-file K`).
pub fn start_three_node_cluster_with(
    dir: &Path,
    extra: &[&str],
) -> (Vec<ControlPlaneProcess>, String) {
    let nodes: Vec<ControlPlaneProcess> = (1..=3u64)
        .map(|id| {
            let mut args = extra.to_vec();
            if id == 1 {
                args.push("--bootstrap");
            }
            ControlPlaneProcess::start(id, &dir.join(format!("n{id}")), &args)
        })
        .collect();
    let endpoints = nodes
        .iter()
        .map(|n| n.addr.as_str())
        .collect::<Vec<_>>()
        .join(",");
    join_the_first(&nodes, &endpoints);
    (nodes, endpoints)
}

/// Adds every node but the first to the first's cluster as a learner and
/// promotes it, with `quiver ctl` (as operators form a cluster).
pub fn join_the_first(nodes: &[ControlPlaneProcess], endpoints: &str) {
    for node in &nodes[1..] {
        let id = node.id.to_string();
        let (ok, _, err) = ctl(
            endpoints,
            &[
                "cluster",
                "add-learner",
                "--node-id",
                &id,
                "--addr",
                &node.addr,
            ],
        );
        assert!(ok, "add-learner {id}: {err}");
        let (ok, _, err) = ctl(endpoints, &["cluster", "promote", &id]);
        assert!(ok, "promote {id}: {err}");
    }
}
