//! A tenant's view of a manifest and everything answered from it: which tools
//! are visible ([`view::ToolView`], over the version's shared
//! [`manifest_index::ManifestIndex`]), search over them ([`search`]), argument
//! validation ([`argument_check`]), "did you mean" ([`suggest`]) and redaction of
//! error text ([`redact`]). The edge and the executor both answer from a view,
//! so a hidden tool is absent from every list, search, description and error.

mod app_calls;
pub mod app_tools;
pub mod argument_check;
mod error_chain;
mod live_views;
pub mod manifest_index;
pub mod redact;
pub mod search;
pub mod search_result;
pub mod search_telemetry;
pub mod suggest;
pub mod tenant_views;
#[cfg(test)]
mod test_manifest;
pub mod token_estimate;
pub mod tool_call;
pub mod tool_set;
pub mod view;
pub mod view_names;

pub use app_tools::AppCallRefusal;
pub use live_views::LiveViews;
pub use manifest_index::ManifestIndex;
pub use search_result::{MAX_SEARCH_RESULTS, SearchResult};
pub use tenant_views::TenantViews;
pub use tool_call::{CallOrigin, ToolCall};
pub use tool_set::ToolSet;
pub use view::{ToolView, ViewTool};
pub use view_names::ViewNames;
