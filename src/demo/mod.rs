//! The built-in demo catalog `quiver dev` serves when given no upstreams: a few
//! small servers of our own, enough to try passthrough, search and code mode.

/// The demo catalog (plain catalog format: `{"servers": ...}` is not needed, it is livemcpbench-like).
pub const CATALOG: &str = include_str!("catalog.json");

/// Path-like name used in messages for the embedded catalog.
pub const ORIGIN: &str = "<built-in demo catalog>";
