//! The messages between the executor host and a worker process. Frames are
//! length-prefixed JSON (see `ipc`); one execution is in flight per worker.

use quiver_contract::{Limits, ScriptOutcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ToolNames;

/// Host → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostMessage {
    /// Run `code` (the body of an async function) in a fresh runtime.
    Execute {
        /// Script source, already validated by the host.
        code: String,
        /// Limits for this run.
        limits: Limits,
        /// What is known up front of the names under `tools` (those the
        /// script's source mentions); the rest is asked with
        /// [`HostRequest::HasName`] and [`HostRequest::Names`].
        names: ToolNames,
    },
    /// The answer to a [`WorkerMessage::Request`].
    Reply {
        /// The request's id.
        id: u64,
        /// Its outcome: a JSON value, or an error message the script sees as a thrown `Error`.
        result: Result<Value, HostError>,
    },
    /// Health check; the worker answers [`WorkerMessage::Pong`].
    Ping,
}

/// What a script asks of the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HostRequest {
    /// Call a tool by its exposed (namespaced) name, or by `server` + `tool` JS names.
    CallTool {
        /// Exposed name (`<server>__<tool>`) or `server.tool`.
        name: String,
        /// Arguments object.
        args: Value,
    },
    /// Search the tenant's view.
    Search {
        /// Query text.
        query: String,
        /// Max results.
        limit: u32,
    },
    /// The TypeScript declaration of a tool.
    Describe {
        /// Tool name.
        name: String,
    },
    /// Session stash: read.
    StashGet {
        /// Key.
        key: String,
    },
    /// Session stash: write (JSON value, optional TTL in seconds).
    StashSet {
        /// Key.
        key: String,
        /// Value.
        value: Value,
        /// Time to live, seconds.
        ttl_secs: Option<u64>,
    },
    /// Session stash: delete.
    StashDelete {
        /// Key.
        key: String,
    },
    /// Session stash: list keys.
    StashKeys,
    /// The resources of the tenant's upstreams (`resources/list`).
    ListResources,
    /// One resource's contents (`resources/read`).
    ReadResource {
        /// Its URI.
        uri: String,
    },
    /// Whether `tools.<server>` (with `tool`: `tools.<server>.<tool>`)
    /// exists for this script: answered with a boolean. The script waits
    /// for it (a property read cannot), so the host answers it at once.
    HasName {
        /// JavaScript server name.
        server: String,
        /// JavaScript tool name, for a tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// The names under `tools` (no `server`: the servers) or under
    /// `tools.<server>`: answered with an array of strings, or null when
    /// there is no such server.
    Names {
        /// JavaScript server name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
    },
}

impl HostRequest {
    /// Whether the script waits synchronously for the answer (a name
    /// lookup): the host answers these at once, never behind tool calls.
    pub fn is_lookup(&self) -> bool {
        matches!(
            self,
            HostRequest::HasName { .. } | HostRequest::Names { .. }
        )
    }
}

/// Worker → host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerMessage {
    /// Started and ready for an `Execute` (a runtime is built ahead of time).
    Ready {
        /// Whether every execution runs in a process of its own, forked from
        /// a runtime no script has run in (see `worker::forking`): a script
        /// that times out, runs out of memory or crashes then leaves nothing
        /// behind in the worker. Absent means false.
        #[serde(default)]
        forks: bool,
    },
    /// The running script needs the host.
    Request {
        /// Id to answer with [`HostMessage::Reply`].
        id: u64,
        /// What it needs.
        request: HostRequest,
    },
    /// The execution finished.
    Done {
        /// Its outcome.
        outcome: ScriptOutcome,
    },
    /// Answer to [`HostMessage::Ping`].
    Pong,
}

/// A script's request over its execution's limits; the script sees it as a
/// [`HostError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallLimitReached {
    /// More host calls of any kind than allowed.
    #[error(
        "host call limit reached: at most {0} calls (tools, search, describe, stash) per execution"
    )]
    Host(u32),
    /// More tool calls than allowed.
    #[error("tool call limit reached: at most {0} calls per execution")]
    Tool(u32),
}

impl From<CallLimitReached> for HostError {
    fn from(limit: CallLimitReached) -> HostError {
        HostError {
            message: limit.to_string(),
        }
    }
}

/// Why the host did not answer a script's request with a value: the message
/// the script sees as a thrown `Error` (unknown tool, invalid arguments, an
/// upstream's redacted error, a stash refusal, a budget spent). On the wire it
/// is the bare message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{message}")]
pub struct HostError {
    /// What the script is told.
    pub message: String,
}

impl From<String> for HostError {
    fn from(message: String) -> HostError {
        HostError { message }
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> HostError {
        HostError {
            message: message.to_string(),
        }
    }
}
