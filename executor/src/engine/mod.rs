//! The JavaScript engine: the only module that touches deno_core. It builds a
//! fresh, hardened runtime per execution ([`ScriptRuntime`]) and reaches the
//! host only through a [`HostBridge`]; it never does I/O of its own.

mod engine_error;
mod host_bridge;
mod log_buffer;
mod ops;
mod result_json;
mod script_runtime;
mod startup_snapshot;
mod watchdog;

pub use engine_error::EngineError;
pub use host_bridge::HostBridge;
pub use script_runtime::{MAX_RUNTIMES_PER_THREAD, MIN_HEAP_BYTES, ScriptRuntime};
pub use startup_snapshot::{
    BYTECODE_CACHE_OFF, MAX_SNAPSHOT_BYTES, StartFrom, bytecode_cache_off, startup_snapshot,
    use_startup_snapshot,
};
