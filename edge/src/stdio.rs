//! MCP over stdin/stdout for local use (`quiver dev --stdio`): one session,
//! served until the client closes stdin.

use std::sync::Arc;

use rmcp::ServiceExt;

use crate::{gateway::Gateway, mode::Mode, serve_error::ServeError, session::GatewaySession};

/// Serves one session in `mode` on stdin/stdout until the client closes it.
pub async fn serve_stdio(gateway: Arc<Gateway>, mode: Mode) -> Result<(), ServeError> {
    let session = GatewaySession::new(gateway, mode);
    let running = session
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::StdioStart(Box::new(e)))?;
    let ended = running.waiting().await;
    // What searches learned in this session, whichever way it ended.
    quiver_view::search::signals::flush_installed();
    ended.map_err(ServeError::StdioSession)?;
    Ok(())
}
