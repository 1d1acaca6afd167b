//! The messages between the executor host and a worker process. Frames are
//! length-prefixed JSON (see `ipc`); one execution is in flight per worker.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Limits of one execution (enforced by the worker, and by the host as a backstop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall time, milliseconds (default 5 000).
    pub wall_ms: u64,
    /// JS heap, bytes (default 64 MiB).
    pub heap_bytes: u64,
    /// Script source, bytes (default 64 KiB).
    pub code_bytes: u64,
    /// Serialized result, bytes (default 1 MiB); larger results are cut with a marker.
    pub output_bytes: u64,
    /// Captured `console.log` output, bytes (default 64 KiB).
    pub log_bytes: u64,
    /// Tool calls per execution (default 50).
    pub tool_calls: u32,
    /// Tool calls in flight at once (default 8).
    pub parallel_calls: u32,
    /// Host calls of any kind (tool calls, `search`, `describe`, stash
    /// operations) per execution (default 500).
    #[serde(default = "default_host_calls")]
    pub host_calls: u32,
    /// Largest request a script may send to the host (serialized), bytes
    /// (default 1 MiB); larger ones are refused before they are parsed.
    #[serde(default = "default_request_bytes")]
    pub request_bytes: u64,
    /// Largest answer the host hands back to a script (serialized), bytes
    /// (default 4 MiB); a larger tool result reaches the script as an error.
    #[serde(default = "default_reply_bytes")]
    pub reply_bytes: u64,
}

fn default_host_calls() -> u32 {
    Limits::default().host_calls
}

fn default_request_bytes() -> u64 {
    Limits::default().request_bytes
}

fn default_reply_bytes() -> u64 {
    Limits::default().reply_bytes
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_ms: 5_000,
            heap_bytes: 64 * 1024 * 1024,
            code_bytes: 64 * 1024,
            output_bytes: 1024 * 1024,
            log_bytes: 64 * 1024,
            tool_calls: 50,
            parallel_calls: 8,
            host_calls: 500,
            request_bytes: 1024 * 1024,
            reply_bytes: 4 * 1024 * 1024,
        }
    }
}

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
        /// `server -> [tool names]` visible to the script, for `tools.<server>.<tool>(…)`.
        tools: std::collections::BTreeMap<String, Vec<String>>,
    },
    /// The answer to a [`WorkerMessage::Request`].
    Reply {
        /// The request's id.
        id: u64,
        /// Its outcome: a JSON value, or an error message the script sees as a thrown `Error`.
        result: Result<Value, String>,
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
}

/// Worker → host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerMessage {
    /// Started and ready for an `Execute` (a runtime is built ahead of time).
    Ready,
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
        outcome: Outcome,
    },
    /// Answer to [`HostMessage::Ping`].
    Pong,
}

/// The end of one execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The script's return value (JSON), when it succeeded.
    pub result: Option<Value>,
    /// Why it failed, when it did.
    pub error: Option<ScriptError>,
    /// Captured console output, in order.
    pub logs: Vec<String>,
    /// True when the result or the logs were cut to their limits.
    pub truncated: bool,
}

/// Why a script failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptError {
    /// `timeout`, `memory`, `output`, `tool_calls`, `runtime` (an uncaught exception) or `internal`.
    pub kind: String,
    /// Message (already free of host paths).
    pub message: String,
    /// Line in the script, when known.
    pub line: Option<u32>,
}
