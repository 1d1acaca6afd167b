//! MCP over stdin/stdout for local use (`quiver dev --stdio`).

use std::sync::Arc;

use anyhow::Context as _;
use rmcp::ServiceExt;

use crate::{gateway::Gateway, mode::Mode, session::GatewaySession};

/// Serves one session in `mode` on stdin/stdout until the client closes it.
pub async fn serve_stdio(gateway: Arc<Gateway>, mode: Mode) -> anyhow::Result<()> {
    let session = GatewaySession::new(gateway, mode);
    let running = session
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the stdio session")?;
    let ended = running.waiting().await.context("stdio session");
    quiver_view::search::signals::flush_installed();
    ended?;
    Ok(())
}
