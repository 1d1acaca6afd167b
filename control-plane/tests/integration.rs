//! The integration tests of this package, built as one test binary (one
//! link instead of one per file: a fraction of the disk and of the build
//! time). Each file below is a module; `cargo nextest run -E
//! 'test(/^file_name::/)'` runs one file's tests.

#[path = "../../tests/support/wait.rs"]
#[expect(dead_code, reason = "this crate waits only with the metrics shown")]
mod wait;

/// The settings of a one-node cluster: node 1 on a free loopback port,
/// bootstrapped, its data in `data`.
fn one_node(data: std::path::PathBuf) -> quiver_control_plane::NodeConfig {
    quiver_control_plane::NodeConfig {
        node_id: 1,
        listen: "127.0.0.1:0".parse().expect("an address"),
        advertise: None,
        data,
        bootstrap: true,
        tls: None,
        tuning: quiver_control_plane::RaftTuning::default(),
        cluster_key: None,
        max_keys_per_tenant: quiver_control_plane::node::DEFAULT_MAX_KEYS_PER_TENANT,
        restore: None,
        backups: None,
    }
}

mod discovery_turns;
mod node_metrics;
mod periodic_backups;
mod simulated_network;
