//! Where a runtime starts from, and what the engine may keep on disk: nothing.
//!
//! The QuickJS backend (`v8x`) keeps an on-disk bytecode cache unless the
//! process environment turns it off, and loads unverified bytecode back from
//! it. Quiver never lets it: every process that builds a runtime must have
//! [`BYTECODE_CACHE_OFF`] set (the binary sets it first thing in `main`, the
//! executor sets it on every worker it spawns, `.cargo/config.toml` sets it for
//! tests), and [`ScriptRuntime`](super::ScriptRuntime) refuses to build a
//! runtime otherwise.
//!
//! The speed the cache bought comes back from a startup snapshot instead: the
//! process makes it itself, once, from deno_core's own modules (before any
//! hardening, which a snapshot cannot carry), and keeps it in memory only. No
//! compiled form of any script is ever read from or written to a file.

use std::sync::{Arc, OnceLock};

use deno_core::{JsRuntimeForSnapshot, RuntimeOptions};

use super::{engine_error::EngineError, ops::quiver_script};

/// The environment variable (and value) that turns the QuickJS backend's
/// on-disk bytecode cache off. The backend reads it once per process, before
/// its first runtime.
pub const BYTECODE_CACHE_OFF: (&str, &str) = ("V82JSC_NO_BC_CACHE", "1");

/// Whether this process runs with the on-disk bytecode cache off.
pub fn bytecode_cache_off() -> bool {
    cfg!(feature = "v8") || std::env::var_os(BYTECODE_CACHE_OFF.0).is_some()
}

/// Fails unless the on-disk bytecode cache is off for this process.
pub(crate) fn require_bytecode_cache_off() -> Result<(), EngineError> {
    if bytecode_cache_off() {
        Ok(())
    } else {
        Err(EngineError::BytecodeCacheOn)
    }
}

/// Where a new runtime starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// This process's in-memory startup snapshot of deno_core's own modules
    /// (made on first use); the hardening bootstrap runs after the restore.
    Snapshot,
    /// Nothing: deno_core's modules are compiled from source every time
    /// (slower; kept for comparison in `quiver bench executor`).
    Scratch,
}

/// The snapshot runtimes of this process restore: made here on first use, or
/// handed over by the executor host that started this worker.
static SNAPSHOT: OnceLock<Result<&'static [u8], Arc<SnapshotError>>> = OnceLock::new();

/// Why the startup snapshot could not be made.
#[derive(Debug, thiserror::Error)]
enum SnapshotError {
    /// No thread to make it on.
    #[error("could not start a thread: {0}")]
    Thread(std::io::Error),
    /// The engine panicked.
    #[error("the engine panicked while making it")]
    Panicked,
    /// The engine refuses to build a runtime here.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// No event loop for the engine's delayed tasks.
    #[error("could not start an event loop: {0}")]
    EventLoop(std::io::Error),
    /// deno_core could not build the runtime.
    #[error("{0}")]
    Runtime(deno_core::error::CoreError),
}

/// Largest snapshot a worker accepts from its host.
pub const MAX_SNAPSHOT_BYTES: usize = 64 * 1024 * 1024;

/// Uses `bytes`, a snapshot made by [`startup_snapshot`] in the executor host
/// (the same binary), for every runtime of this process. The worker receives
/// it on its stdin from the host that started it, before anything else; it
/// never comes from a file. Fails if this process already has one.
pub fn use_startup_snapshot(bytes: Vec<u8>) -> Result<(), EngineError> {
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    SNAPSHOT
        .set(Ok(bytes))
        .map_err(|_| EngineError::Snapshot("this process already has a startup snapshot".into()))
}

/// This process's startup snapshot, made on first use on a thread of its own
/// (a runtime counts against its thread's budget) and kept in memory for the
/// life of the process. Takes a few hundred milliseconds the first time: the
/// executor host makes it once and hands it to every worker it starts.
pub fn startup_snapshot() -> Result<&'static [u8], EngineError> {
    SNAPSHOT
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("quiver-js-snapshot".into())
                .spawn(make_snapshot)
                .map_err(SnapshotError::Thread)?
                .join()
                .unwrap_or(Err(SnapshotError::Panicked))
                .map(|bytes| &*Box::leak(bytes))
                .map_err(Arc::new)
        })
        .clone()
        .map_err(|e| EngineError::Snapshot(e.to_string()))
}

fn make_snapshot() -> Result<Box<[u8]>, SnapshotError> {
    require_bytecode_cache_off()?;
    // deno_core schedules delayed engine tasks on the current tokio runtime.
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(SnapshotError::EventLoop)?;
    let _entered = tokio.enter();
    let runtime = JsRuntimeForSnapshot::try_new(RuntimeOptions {
        extensions: vec![quiver_script::init()],
        ..Default::default()
    })
    .map_err(SnapshotError::Runtime)?;
    Ok(runtime.snapshot())
}
