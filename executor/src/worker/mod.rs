//! Worker processes: the sandboxed side of the executor. A worker runs one
//! script at a time in a fresh JS runtime and talks to the host only through
//! length-prefixed frames on stdin/stdout.

pub mod ipc;
pub mod protocol;
