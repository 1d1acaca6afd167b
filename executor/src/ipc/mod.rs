//! The worker protocol: the messages between the executor host and a worker
//! process ([`HostMessage`], [`WorkerMessage`]) and the length-prefixed
//! frames that carry them ([`FrameReader`], [`FrameWriter`]). The engine, the
//! worker and the pool all speak it; it depends on none of them.

mod frames;
mod messages;
mod tool_names;

pub use frames::{FrameDecoder, FrameError, FrameReader, FrameWriter, MAX_FRAME_BYTES};
pub(crate) use messages::CallLimitReached;
pub use messages::{HostError, HostMessage, HostRequest, WorkerMessage};
pub use tool_names::{MAX_MENTIONED_NAMES, ToolNames};
