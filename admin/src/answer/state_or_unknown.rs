//! An upstream's connection state as answers carry it: its name, or
//! `unknown` when the answering node holds no connection to it.

use quiver_proto::upstream_state::UpstreamState;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::IntoDeserializer};

const UNKNOWN: &str = "unknown";

pub(crate) fn serialize<S: Serializer>(
    state: &Option<UpstreamState>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match state {
        Some(state) => state.serialize(serializer),
        None => serializer.serialize_str(UNKNOWN),
    }
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<UpstreamState>, D::Error> {
    let name = String::deserialize(deserializer)?;
    if name == UNKNOWN {
        return Ok(None);
    }
    UpstreamState::deserialize(name.into_deserializer()).map(Some)
}

#[cfg(test)]
mod tests {
    use quiver_proto::upstream_state::UpstreamState;
    use serde_json::json;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Row {
        #[serde(with = "super")]
        state: Option<UpstreamState>,
    }

    #[test]
    fn states_keep_their_names_and_none_is_unknown() {
        for (state, name) in [
            (Some(UpstreamState::Connected), "connected"),
            (Some(UpstreamState::Down), "down"),
            (None, "unknown"),
        ] {
            let row = Row { state };
            let value = serde_json::to_value(&row).unwrap();
            assert_eq!(value, json!({ "state": name }));
            assert_eq!(serde_json::from_value::<Row>(value).unwrap(), row);
        }
        assert!(serde_json::from_value::<Row>(json!({ "state": "sideways" })).is_err());
    }
}
