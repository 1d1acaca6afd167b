//! The contract between Quiver's edge and its executors: traits and types
//! only. The edge dispatches prepared calls through [`Dispatch`] and runs
//! scripts through [`Scripts`], in-process or on a remote executor (the
//! `quiver-fleet` crate carries them there), and never links the sandbox
//! (deno_core, oxc) that executors run.
//!
//! Both sides of the gRPC wire convert through [`wire`], so a remote
//! execution ends in the same typed [`ScriptOutcome`] or [`ExecuteError`]
//! (a rejection keeps its violations) as a local one.

mod call_options;
mod call_sink;
mod dispatch;
pub mod encoded_size;
mod execute_error;
pub mod forwarded;
mod limits;
mod outcome;
mod resource_update;
mod scripts;
mod upstream_error;
mod validation;
pub mod wire;

pub use call_options::CallOptions;
pub use call_sink::{CallSink, SinkFuture, TaskTicket};
pub use dispatch::Dispatch;
pub use execute_error::ExecuteError;
pub use limits::Limits;
pub use outcome::{
    AppView, MAX_APP_VIEW_RESULT_BYTES, MAX_APP_VIEWS, ScriptError, ScriptErrorKind, ScriptOutcome,
};
pub use quiver_view::{CallOrigin, ToolCall};
pub use resource_update::ResourceUpdate;
pub use scripts::{API_DECLARATION, ExecuteRequest, MORE_API_DECLARATION, Scripts};
pub use upstream_error::UpstreamError;
pub use validation::{MAX_VIOLATIONS, ValidationErrors, Violation};

/// The tenant of an edge that authenticates nobody; it sees every tool.
pub use quiver_proto::tenant::DEFAULT_TENANT;
