//! The fleet behind Quiver's contract: how an edge reaches executors and the
//! other edges, and what the nodes share through etcd.
//!
//! - [`remote`]: the gRPC client that carries [`quiver_contract::Dispatch`]
//!   and [`quiver_contract::Scripts`] to one executor ([`RemoteExecutor`]),
//!   and [`relay`]: what an upstream sends back during a call, relayed over
//!   the same streams.
//! - [`fleet`]: routing across executors ([`ExecutorFleet`]) with session
//!   affinity, breakers and membership from a registry or etcd
//!   ([`membership`]).
//! - [`session_records`] and [`task_records`]: sessions and tasks recorded in
//!   etcd, so that they outlive the edge or executor that holds them.

pub mod fleet;
pub mod membership;
pub mod relay;
pub mod remote;
pub mod session_records;
pub mod task_records;

pub use fleet::{ExecutorFleet, ExecutorInfo};
pub use remote::RemoteExecutor;
