//! What a running script can ask of the host, answered per execution by the
//! caller (the edge, over the tenant's view). Every tool call is checked
//! against that view here, at the host, not only when tools were listed.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::ipc::HostError;

/// [`ScriptContext::tool_names`] answered from a `server -> tools` table
/// (for contexts with a handful of tools).
pub fn names_in(
    table: &std::collections::BTreeMap<String, Vec<String>>,
    server: Option<&str>,
) -> Option<Vec<String>> {
    match server {
        None => Some(table.keys().cloned().collect()),
        Some(server) => table.get(server).cloned(),
    }
}

/// One operation on the session stash.
#[derive(Debug, Clone, PartialEq)]
pub enum StashOp {
    /// Read a key (null when absent or expired).
    Get(String),
    /// Write a key, with an optional time to live in seconds.
    Set(String, Value, Option<u64>),
    /// Remove a key.
    Delete(String),
    /// The live keys.
    Keys,
}

/// One request about the upstreams' resources.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceOp {
    /// The resources the script's upstreams list.
    List,
    /// One resource's contents.
    Read(String),
}

/// The host side of one execution.
pub trait ScriptContext: Send + Sync {
    /// The JavaScript names a script finds under `tools` (`server` None:
    /// its servers, sorted) or under `tools.<server>` (that server's tools;
    /// None when the script has no such server). Asked only when a script
    /// lists a namespace, so it may cost what the listing holds.
    fn tool_names(&self, server: Option<&str>) -> Option<Vec<String>>;
    /// Whether `tools.<server>` (with `tool`: `tools.<server>.<tool>`)
    /// exists for the script. Asked for each name a script reaches, so a
    /// context over a large view answers it without scanning the view; the
    /// default lists the server.
    fn has_tool_name(&self, server: &str, tool: Option<&str>) -> bool {
        match (self.tool_names(Some(server)), tool) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(tools), Some(tool)) => tools.iter().any(|t| t == tool),
        }
    }
    /// Calls a tool by exposed name or `server.tool`; the value is what the script receives.
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>>;
    /// Searches the view.
    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Value, HostError>>;
    /// The declaration of one tool.
    fn describe(&self, name: String) -> BoxFuture<'_, Result<Value, HostError>>;
    /// Session stash.
    fn stash(&self, op: StashOp) -> BoxFuture<'_, Result<Value, HostError>>;
    /// The upstreams' resources; a context without upstreams has none.
    fn resources(&self, op: ResourceOp) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            match op {
                ResourceOp::List => Ok(Value::Array(Vec::new())),
                ResourceOp::Read(uri) => {
                    Err(format!("no upstream serves resources; `{uri}` is unknown").into())
                }
            }
        })
    }
}
