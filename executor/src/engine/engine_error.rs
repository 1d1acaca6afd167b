//! Why the engine could not give a runtime: its own error type, shared by
//! the runtime and the startup snapshot.

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The JavaScript engine refused to start.
    #[error("could not create a JavaScript runtime: {0}")]
    Create(String),
    /// The bootstrap (script API and hardening) failed; the runtime is unsafe to use.
    #[error("the script runtime bootstrap failed: {0}")]
    Bootstrap(String),
    /// This thread has created [`MAX_RUNTIMES_PER_THREAD`](crate::engine::MAX_RUNTIMES_PER_THREAD) runtimes already.
    #[error(
        "this thread has created {0} script runtimes, the most one thread may; use a fresh thread"
    )]
    ThreadExhausted(u32),
    /// The process has the engine's on-disk bytecode cache on: scripts would
    /// be written to disk and bytecode read back from a shared directory.
    #[error(
        "the JavaScript engine's on-disk bytecode cache is on in this process; start it with V82JSC_NO_BC_CACHE=1 (the quiver binary and the executor's workers set it themselves)"
    )]
    BytecodeCacheOn,
    /// The in-memory startup snapshot could not be made.
    #[error("could not make the engine's startup snapshot: {0}")]
    Snapshot(String),
}
