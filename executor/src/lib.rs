//! Quiver's executor: the only role that talks to upstream MCP servers on a
//! client's behalf. Today it dispatches single tool calls in-process
//! ([`LocalExecutor`]); sandboxed scripts and the gRPC service grow here.

mod dispatch;
pub mod engine;
pub mod sandbox;
pub mod worker;

pub use dispatch::{Dispatch, LocalExecutor, ToolCall};
pub use quiver_upstream::{CallOptions, CallSink, SinkFuture, UpstreamError};
