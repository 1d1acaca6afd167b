//! Connections from Quiver to downstream MCP servers ("upstreams").
//!
//! Owns the rmcp clients (a spawned stdio child or Streamable HTTP), their
//! reconnection with backoff, tool listing with pagination, tool calls, and the
//! routing of what an upstream sends back during a call (progress, logging,
//! sampling and elicitation requests) to the caller that started it. It never
//! retries a tool call: a call is dispatched at most once.

mod breaker;
mod client;
mod config;
mod connection;
mod error;
mod set;

pub use breaker::{BreakerConfig, CircuitBreaker};
pub use client::{CallSink, SinkFuture};
pub use config::{ConfigError, Transport, UpstreamConfig};
pub use connection::{CallOptions, Upstream, UpstreamEvent, UpstreamStatus};
pub use error::UpstreamError;
pub use set::UpstreamSet;
