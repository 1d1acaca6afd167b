//! Quiver's executor: the only role that talks to upstream MCP servers on a
//! client's behalf. It implements the `quiver-contract` traits: single tool
//! calls ([`LocalExecutor`]) and code-mode scripts in sandboxed worker
//! processes ([`script::LocalScripts`], a [`script::ScriptRunner`] over a
//! [`pool::WorkerPool`]), and serves both over gRPC ([`service`]). Workers
//! hold no credentials and no connections.

pub mod audit;
pub mod engine;
pub mod ipc;
mod local_executor;
pub mod metering;
pub mod pool;
pub mod sandbox;
pub mod script;
pub mod service;
pub mod stash;
pub mod stash_etcd;
pub mod stash_ledger;
pub mod worker;

pub use local_executor::LocalExecutor;
