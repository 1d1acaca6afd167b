//! How a Rust value becomes a protobuf field and back: [`Message`] for the
//! types that travel as a message of their own, [`Field`] for every field
//! type, and the macros that write both for a struct whose protobuf message
//! has the same field names (a field missing on either side does not compile).

use std::collections::{BTreeMap, HashMap};

use quiver_proto::registry::UnknownEnumValue;

/// Why a protobuf operator message was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A message field that must be present is absent.
    #[error("`{0}` is missing")]
    Missing(&'static str),
    /// An enum value this release does not know.
    #[error(transparent)]
    UnknownEnum(#[from] UnknownEnumValue),
    /// A upstream's settings that do not read.
    #[error(transparent)]
    Upstream(#[from] quiver_proto::upstream_config::UpstreamMessageError),
    /// A field that holds JSON by nature (a tool definition, a call's
    /// arguments) holds something else.
    #[error("`{field}` is not the JSON it should be: {source}")]
    Json {
        /// The field.
        field: &'static str,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A count larger than this machine's `usize`.
    #[error("`{0}` is too large for this machine")]
    TooLarge(&'static str),
}

/// A type that travels as a protobuf message of its own.
pub trait Message: Sized {
    /// The generated message.
    type Pb;
    /// The message.
    fn to_pb(&self) -> Self::Pb;
    /// From the message.
    fn from_pb(pb: Self::Pb) -> Result<Self, WireError>;
}

/// A type that travels as one field of a message.
pub trait Field: Sized {
    /// The generated field's type.
    type Pb;
    /// The field.
    fn to_field(&self) -> Self::Pb;
    /// From the field named `name`.
    fn from_field(pb: Self::Pb, name: &'static str) -> Result<Self, WireError>;
}

/// Types whose field is themselves.
macro_rules! same {
    ($($t:ty),* $(,)?) => {$(
        impl Field for $t {
            type Pb = $t;
            fn to_field(&self) -> $t {
                self.clone()
            }
            fn from_field(pb: $t, _: &'static str) -> Result<$t, WireError> {
                Ok(pb)
            }
        }
    )*};
}

same!(
    String,
    u64,
    u32,
    bool,
    f64,
    Option<String>,
    Option<u64>,
    Option<u32>,
    Option<bool>,
    Option<f64>,
    Vec<String>,
);

/// Maps of plain values: protobuf's are unordered, ours sorted.
macro_rules! plain_map {
    ($($v:ty),* $(,)?) => {$(
        impl Field for BTreeMap<String, $v> {
            type Pb = HashMap<String, $v>;
            fn to_field(&self) -> HashMap<String, $v> {
                self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            }
            fn from_field(pb: HashMap<String, $v>, _: &'static str) -> Result<Self, WireError> {
                Ok(pb.into_iter().collect())
            }
        }
    )*};
}

plain_map!(String, u32, f64);

impl Field for usize {
    type Pb = u64;
    fn to_field(&self) -> u64 {
        *self as u64
    }
    fn from_field(pb: u64, name: &'static str) -> Result<usize, WireError> {
        usize::try_from(pb).map_err(|_| WireError::TooLarge(name))
    }
}

impl<M: Message> Field for Option<M> {
    type Pb = Option<M::Pb>;
    fn to_field(&self) -> Option<M::Pb> {
        self.as_ref().map(M::to_pb)
    }
    fn from_field(pb: Option<M::Pb>, _: &'static str) -> Result<Self, WireError> {
        pb.map(M::from_pb).transpose()
    }
}

impl<M: Message> Field for Vec<M> {
    type Pb = Vec<M::Pb>;
    fn to_field(&self) -> Vec<M::Pb> {
        self.iter().map(M::to_pb).collect()
    }
    fn from_field(pb: Vec<M::Pb>, _: &'static str) -> Result<Self, WireError> {
        pb.into_iter().map(M::from_pb).collect()
    }
}

impl<M: Message> Field for BTreeMap<String, M> {
    type Pb = HashMap<String, M::Pb>;
    fn to_field(&self) -> HashMap<String, M::Pb> {
        self.iter().map(|(k, v)| (k.clone(), v.to_pb())).collect()
    }
    fn from_field(pb: HashMap<String, M::Pb>, _: &'static str) -> Result<Self, WireError> {
        pb.into_iter()
            .map(|(k, v)| Ok((k, M::from_pb(v)?)))
            .collect()
    }
}

/// The message of a field that must be present.
pub fn required<M: Message>(pb: Option<M::Pb>, name: &'static str) -> Result<M, WireError> {
    M::from_pb(pb.ok_or(WireError::Missing(name))?)
}

/// A message-typed field that must be present: `Field` for `$t: Message`.
macro_rules! required_field {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::wire::field::Field for $t {
            type Pb = Option<<$t as $crate::wire::field::Message>::Pb>;
            fn to_field(&self) -> Self::Pb {
                Some($crate::wire::field::Message::to_pb(self))
            }
            fn from_field(
                pb: Self::Pb,
                name: &'static str,
            ) -> Result<Self, $crate::wire::field::WireError> {
                $crate::wire::field::required(pb, name)
            }
        }
    )*};
}
pub(crate) use required_field;

/// `Message` (and `Field`, as a field that must be present) for a struct and
/// its protobuf message, field for field by name.
macro_rules! message {
    ($rust:ident => $pb:path { $($field:ident),* $(,)? }) => {
        impl $crate::wire::field::Message for $rust {
            type Pb = $pb;
            fn to_pb(&self) -> $pb {
                $pb {
                    $($field: $crate::wire::field::Field::to_field(&self.$field),)*
                }
            }
            fn from_pb(pb: $pb) -> Result<Self, $crate::wire::field::WireError> {
                Ok($rust {
                    $($field: $crate::wire::field::Field::from_field(
                        pb.$field,
                        concat!(stringify!($rust), ".", stringify!($field)),
                    )?,)*
                })
            }
        }
        $crate::wire::field::required_field!($rust);
    };
}
pub(crate) use message;

/// `Field` for a Rust enum and its protobuf enum, variant for variant; the
/// protobuf's unspecified value (and any value this release does not know)
/// is refused.
macro_rules! enumeration {
    ($rust:ident => $pb:ident { $($variant:ident),* $(,)? }) => {
        impl $crate::wire::field::Field for $rust {
            type Pb = i32;
            fn to_field(&self) -> i32 {
                match self {
                    $($rust::$variant => quiver_proto::pb::$pb::$variant as i32,)*
                }
            }
            fn from_field(
                pb: i32,
                name: &'static str,
            ) -> Result<Self, $crate::wire::field::WireError> {
                match quiver_proto::pb::$pb::try_from(pb) {
                    $(Ok(quiver_proto::pb::$pb::$variant) => Ok($rust::$variant),)*
                    _ => Err(quiver_proto::registry::UnknownEnumValue { field: name, value: pb }.into()),
                }
            }
        }
    };
}
pub(crate) use enumeration;
