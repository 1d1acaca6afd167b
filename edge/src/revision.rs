//! Which generation of MCP a request speaks.

use rmcp::{RoleServer, model::ProtocolVersion, service::RequestContext};

/// Whether a request speaks the stateless protocol (2026-07-28 or later):
/// no session, everything about the client in the request's `_meta`.
pub(crate) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
