//! One `quiver control-plane` process of the cluster under test, advertising
//! its proxy's address to the other nodes: started, `kill -9`ed and restarted
//! from its data directory, paused (SIGSTOP) and resumed (SIGCONT).

use std::{
    path::PathBuf,
    process::{Child, Command},
};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use quiver_control_plane::raft::NodeId;

use crate::support::{quiver_bin, serving_addr, spawn_with_banner};

/// A node process (SIGKILLed on drop).
pub struct NodeProcess {
    /// Node id.
    pub id: NodeId,
    /// Its own listener: for a client that must reach this node and no other.
    pub direct: String,
    /// Its proxy: the address the other nodes (and redirects) use.
    pub advertised: String,
    data: PathBuf,
    env: Vec<(String, String)>,
    bootstrap: bool,
    child: Option<Child>,
    paused: bool,
}

impl NodeProcess {
    /// Starts node `id` on a port it chooses, advertising `advertised`, with
    /// `env` set for the process; `bootstrap` makes it a one-node cluster.
    pub fn start(
        id: NodeId,
        data: PathBuf,
        advertised: String,
        bootstrap: bool,
        env: &[(&str, &str)],
    ) -> NodeProcess {
        let mut node = NodeProcess {
            id,
            direct: "127.0.0.1:0".into(),
            advertised,
            data,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            bootstrap,
            child: None,
            paused: false,
        };
        node.restart();
        node
    }

    /// Starts the process again on the same address and data directory.
    pub fn restart(&mut self) {
        let mut command = Command::new(quiver_bin());
        command
            .args(["control-plane", "--node-id", &self.id.to_string()])
            .args(["--listen", &self.direct, "--advertise", &self.advertised])
            .arg("--data")
            .arg(&self.data)
            .args(["--heartbeat-ms", "50", "--election-timeout-ms", "300"])
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if self.bootstrap {
            command.arg("--bootstrap");
        }
        let (child, banner) = spawn_with_banner(&mut command, "quiver control-plane");
        assert!(banner.contains("serving on"), "{banner}");
        self.direct = serving_addr(&banner);
        // Only the first start bootstraps; a restart resumes from disk.
        self.bootstrap = false;
        self.paused = false;
        self.child = Some(child);
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Running and not paused: it can answer.
    pub fn answers(&self) -> bool {
        self.child.is_some() && !self.paused
    }

    /// Whether the process exists (paused or not).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.paused = false;
    }

    /// SIGSTOP: the process keeps its sockets but does nothing.
    pub fn pause(&mut self) {
        self.signal(Signal::SIGSTOP);
        self.paused = true;
    }

    /// SIGCONT.
    pub fn resume(&mut self) {
        if self.paused {
            self.signal(Signal::SIGCONT);
            self.paused = false;
        }
    }

    fn signal(&self, signal: Signal) {
        let pid = self.pid().expect("a running node to signal");
        let pid = i32::try_from(pid).expect("a pid fits in i32");
        kill(Pid::from_raw(pid), signal)
            .unwrap_or_else(|e| panic!("{signal} to node {}: {e}", self.id));
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
