//! A tenant's view of a manifest and everything answered from it: which tools
//! are visible ([`view::ToolView`]), search over them ([`search`]), argument
//! validation ([`validate`]), "did you mean" ([`suggest`]) and redaction of
//! error text ([`redact`]). The edge and the executor both answer from a view,
//! so a hidden tool is absent from every list, search, description and error.

pub mod redact;
pub mod search;
pub mod suggest;
pub mod validate;
pub mod view;

pub use view::{ToolView, ViewTool};
