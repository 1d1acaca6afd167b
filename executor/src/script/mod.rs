//! Running code-mode scripts: what a script may ask of its host ([`ScriptContext`]),
//! and the [`ScriptRunner`] that validates a script, runs it on a pooled worker
//! and answers the worker's requests against the caller's context.

mod execution_end;
mod script_runner;
mod scripts;
mod view_context;

// What a script asks of its host is answered by the pool's workers' host side.
pub use crate::pool::{ResourceOp, ScriptContext, StashOp, names_in};
pub use execution_end::ExecutionEnd;
pub use script_runner::ScriptRunner;
pub use scripts::LocalScripts;
pub use view_context::{ViewScriptContext, script_value};
