//! The three ways the edge presents a tool view (the type lives in
//! `quiver-proto`: a tenant names its mode in the replicated state).

pub use quiver_proto::mode::{Mode, UnknownMode};
