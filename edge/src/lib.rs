//! Quiver's edge: terminates MCP and serves each tenant's view of the manifest in
//! passthrough, search or code mode. It holds no upstream connections; calls go
//! to an executor through [`quiver_executor::Dispatch`].

pub mod config;
pub mod gateway;
pub mod http;
pub mod mode;
pub mod modes;
pub mod redact;
pub mod relay;
pub mod script_context;
pub mod search;
pub mod session;
pub mod stash;
pub mod stdio;
pub mod suggest;
pub mod tls;
pub mod validate;
pub mod view;

pub use config::EdgeConfig;
pub use gateway::Gateway;
pub use mode::Mode;
pub use view::ToolView;
