//! What a client observes when it calls a tool: for comparing what two
//! gateways tell the same client.

use rmcp::{RoleClient, model::CallToolRequestParams, service::RunningService};
use serde_json::Value;

/// Calls `name` with `args` and returns everything the client can read from
/// the answer: text and structured content, or the protocol error's message.
pub async fn answer(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> String {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    match client.call_tool(params).await {
        Ok(result) => format!(
            "{} {}",
            super::text(&result),
            result
                .structured_content
                .map(|v| v.to_string())
                .unwrap_or_default()
        ),
        Err(e) => e.to_string(),
    }
}
