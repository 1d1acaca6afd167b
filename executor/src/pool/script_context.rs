//! What a running script can ask of the host, answered per execution by the
//! caller (the edge, over the tenant's view). Every tool call is checked
//! against that view here, at the host, not only when tools were listed.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::ipc::HostError;

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

/// The host side of one execution.
pub trait ScriptContext: Send + Sync {
    /// `server -> [tool]` JavaScript names the script may call as `tools.<server>.<tool>`.
    fn tool_names(&self) -> BTreeMap<String, Vec<String>>;
    /// Calls a tool by exposed name or `server.tool`; the value is what the script receives.
    fn call_tool(&self, name: String, args: Value) -> BoxFuture<'_, Result<Value, HostError>>;
    /// Searches the view.
    fn search(&self, query: String, limit: u32) -> BoxFuture<'_, Result<Value, HostError>>;
    /// The declaration of one tool.
    fn describe(&self, name: String) -> BoxFuture<'_, Result<Value, HostError>>;
    /// Session stash.
    fn stash(&self, op: StashOp) -> BoxFuture<'_, Result<Value, HostError>>;
}
