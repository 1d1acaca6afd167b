//! The three ways the edge presents a view, each a [`ModeHandler`]: what it
//! lists and how it answers calls. Every answer is built from the session's
//! view, so nothing outside it can appear.

mod code;
mod forward;
mod handler;
mod passthrough;
mod reply_cap;
mod search;
mod tool_result;

use std::sync::Arc;

pub use quiver_contract::forwarded;

use code::CodeMode;
pub(crate) use code::script_result;
pub(crate) use forward::{call_checked, forward_app_call, is_app_call};
pub use handler::{Backends, ModeHandler, ToolRequest};
use passthrough::PassthroughMode;
pub(crate) use passthrough::listed_tool;
use search::SearchMode;

use crate::mode::Mode;

/// The handler for `mode` over `backends`.
pub fn handler(mode: Mode, backends: Backends) -> Arc<dyn ModeHandler> {
    match mode {
        Mode::Passthrough => Arc::new(PassthroughMode::new(backends)),
        Mode::Search => Arc::new(SearchMode::new(backends)),
        Mode::Code => Arc::new(CodeMode::new(backends)),
    }
}
