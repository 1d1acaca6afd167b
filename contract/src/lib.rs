//! The contract between Quiver's edge and its executors: traits and types
//! only. The edge dispatches prepared calls through [`Dispatch`] and runs
//! scripts through [`Scripts`], in-process or on a remote executor (the
//! `quiver-fleet` crate carries them there), and never links the sandbox
//! (deno_core, oxc) that executors run.
//!
//! Both sides of the gRPC wire convert through [`wire`], so a remote
//! execution ends in the same typed [`ScriptOutcome`] or [`ExecuteError`]
//! (a rejection keeps its violations) as a local one.

mod dispatch;
pub mod encoded_size;
mod execute_error;
pub mod forwarded;
mod limits;
mod outcome;
mod scripts;
mod validation;
pub mod wire;

pub use dispatch::Dispatch;
pub use execute_error::ExecuteError;
pub use limits::Limits;
pub use outcome::{ScriptError, ScriptErrorKind, ScriptOutcome};
pub use quiver_upstream::{CallOptions, CallSink, ResourceUpdate, SinkFuture, UpstreamError};
pub use quiver_view::{CallOrigin, ToolCall};
pub use scripts::{API_DECLARATION, ExecuteRequest, MORE_API_DECLARATION, Scripts};
pub use validation::{MAX_VIOLATIONS, ValidationErrors, Violation};

/// The tenant of an edge that authenticates nobody; it sees every tool.
pub use quiver_proto::tenant::DEFAULT_TENANT;
