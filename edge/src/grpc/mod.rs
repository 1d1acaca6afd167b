//! `quiver.v1.Gateway`, the gRPC API for internal services: list, search,
//! describe, call and execute, with the MCP edge's authentication
//! (API key or access token in `authorization` metadata) and views, on a port
//! of its own with TLS or mTLS and gRPC reflection. It adds no rule of its
//! own: what a caller may see and call is its view, as over MCP.

mod auth;
mod execute;
mod listener;
mod service;
mod tls;

pub use execute::ExecuteEvents;
pub use listener::{GrpcListener, GrpcServeError};
pub use service::GatewayService;
pub use tls::{GrpcSecurity, GrpcTlsError};
