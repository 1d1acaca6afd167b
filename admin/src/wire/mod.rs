//! The operator API on the wire: [`AdminRequest`](super::AdminRequest) and
//! [`AdminAnswer`](super::AdminAnswer) as the typed protobuf messages of
//! `quiver.v1.AdminRequest` and `quiver.v1.AdminAnswer` (admin.proto).
//! Every conversion is written once, field for field, and a field that one
//! side lacks does not compile.

mod answer;
mod field;
mod request;

pub use field::{Message, WireError};

#[cfg(test)]
mod tests;
