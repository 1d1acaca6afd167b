//! Running code-mode scripts: what a script may ask of its host ([`ScriptContext`]),
//! and the [`ScriptRunner`] that validates a script, runs it on a pooled worker
//! and answers the worker's requests against the caller's context.

mod context;
mod runner;
mod scripts;
mod view_context;

pub use context::{ScriptContext, StashOp};
pub use runner::{ExecuteError, ScriptRunner};
pub use scripts::{LocalScripts, Scripts};
pub use view_context::{ViewScriptContext, script_value};

/// The script API as TypeScript declarations: shown in `execute`'s description
/// and by `describe("api")`, and implemented by the worker's bootstrap.
pub const API_DECLARATION: &str = "\
declare const tools: { [server: string]: { [tool: string]: (args?: object) => Promise<any> }; call(name: string, args?: object): Promise<any> };
declare function search(query: string, limit?: number): Promise<{ name: string; signature: string; summary: string; score: number }[]>;
declare function describe(name: string): Promise<string>;
declare const stash: { get(key: string): Promise<any>; set(key: string, value: any, ttlSecs?: number): Promise<boolean>; delete(key: string): Promise<boolean>; keys(): Promise<string[]> };
declare const console: { log(...values: any[]): void };";
