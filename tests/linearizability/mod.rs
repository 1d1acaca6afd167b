//! The linearizability suite of the control plane: a checker for grow-only set
//! histories, and the cluster, network, clients and faults that produce them.

pub mod checker;
pub mod fault;
pub mod history;
pub mod id_set;
pub mod node_process;
pub mod partitionable_network;
pub mod proxied_cluster;
pub mod scenario;
pub mod seeded_rng;
pub mod socket_owner;
pub mod workload;
