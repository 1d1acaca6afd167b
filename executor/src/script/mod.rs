//! Running code-mode scripts: what a script may ask of its host ([`ScriptContext`]),
//! and the [`ScriptRunner`] that validates a script, runs it on a pooled worker
//! and answers the worker's requests against the caller's context.

mod context;
mod runner;
mod scripts;
mod view_context;

pub use context::{ScriptContext, StashOp};
pub use runner::ScriptRunner;
pub use scripts::LocalScripts;
pub use view_context::{ViewScriptContext, script_value};
