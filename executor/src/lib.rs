//! Quiver's executor: the only role that talks to upstream MCP servers on a
//! client's behalf. It dispatches single tool calls ([`LocalExecutor`]) and runs
//! code-mode scripts in sandboxed worker processes ([`script::ScriptRunner`] over
//! a [`pool::WorkerPool`]); workers hold no credentials and no connections.

mod dispatch;
pub mod engine;
pub mod pool;
pub mod remote;
pub mod sandbox;
pub mod script;
pub mod service;
pub mod stash;
pub mod worker;

pub use dispatch::{Dispatch, LocalExecutor, ToolCall};
pub use quiver_upstream::{CallOptions, CallSink, SinkFuture, UpstreamError};
