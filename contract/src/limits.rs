//! The limits of one execution. The worker enforces them, the host backs
//! them up, and a caller may only tighten the executor's own (see
//! [`Limits::tightened_by`]).

use serde::{Deserialize, Serialize};

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

impl Limits {
    /// These limits, each lowered to `other`'s where `other` is tighter:
    /// what a caller asks for can narrow an executor's limits, never widen them.
    pub fn tightened_by(self, other: &Limits) -> Limits {
        Limits {
            wall_ms: self.wall_ms.min(other.wall_ms),
            heap_bytes: self.heap_bytes.min(other.heap_bytes),
            code_bytes: self.code_bytes.min(other.code_bytes),
            output_bytes: self.output_bytes.min(other.output_bytes),
            log_bytes: self.log_bytes.min(other.log_bytes),
            tool_calls: self.tool_calls.min(other.tool_calls),
            parallel_calls: self.parallel_calls.min(other.parallel_calls),
            host_calls: self.host_calls.min(other.host_calls),
            request_bytes: self.request_bytes.min(other.request_bytes),
            reply_bytes: self.reply_bytes.min(other.reply_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_can_tighten_limits_but_never_widen_them() {
        let executor = Limits::default();
        let asked = Limits {
            wall_ms: 100,
            tool_calls: 1_000,
            ..Limits::default()
        };
        let applied = executor.tightened_by(&asked);
        assert_eq!(applied.wall_ms, 100);
        assert_eq!(applied.tool_calls, executor.tool_calls);
        assert_eq!(applied.heap_bytes, executor.heap_bytes);
    }
}
