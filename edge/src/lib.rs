//! Quiver's edge: terminates MCP and serves each tenant's view of the manifest in
//! passthrough, search or code mode, and the same views to internal services
//! over gRPC (`quiver.v1.Gateway`). It holds no upstream connections; calls go
//! to an executor through the `quiver-contract` traits.

pub mod access;
pub mod auth;
pub mod config;
pub mod connections;
pub mod console;
pub mod console_link;
pub mod drain;
pub mod gateway;
pub mod grpc;
mod hosts;
pub mod http;
mod input_required;
pub mod mode;
mod modes;
pub mod oauth_callback;
pub mod peers;
mod relay;
pub mod relay_error;
mod revision;
pub mod serve_error;
pub mod session;
pub mod sessions;
pub mod stdio;
pub mod tasks;
pub mod tls;
mod traced_session;

pub use config::EdgeConfig;
pub use gateway::Gateway;
pub use mode::Mode;
pub use relay_error::RelayError;
pub use serve_error::ServeError;
pub use tls::TlsError;
