//! What happens to an upstream's connection, broadcast to whoever watches it
//! (discovery re-lists tools on these). Sending never waits for a watcher.

/// What happened to an upstream, for whoever watches it (discovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamEvent {
    /// A connection was (re-)established.
    Connected,
    /// The connection ended (process exit, network failure).
    Disconnected,
    /// The upstream sent `notifications/tools/list_changed`.
    ToolsChanged,
    /// The tenant secrets its connection uses changed (per-tenant upstreams):
    /// the next use reconnects with the new ones.
    CredentialsChanged,
}
