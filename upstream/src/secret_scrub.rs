//! What a per-tenant connection hands back never holds the secrets it was
//! made with: an upstream that echoes its credential ("invalid token
//! tok-…") in a result, an error or a tool description has every
//! occurrence replaced before anything leaves the upstream crate. This is
//! by value, beside the pattern-based redaction the edge applies to errors.

use quiver_proto::secret_value::SecretValue;
use serde_json::Value;

use quiver_contract::UpstreamError;

/// What replaces a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not searched for: they would mangle
/// ordinary text and are no credential worth the name.
const MIN_SCRUBBED_LEN: usize = 4;

/// The secrets one or more connections were made with.
#[derive(Default)]
pub(crate) struct SecretScrub {
    values: Vec<SecretValue>,
}

impl SecretScrub {
    /// A scrub for `values`.
    pub(crate) fn new(values: impl IntoIterator<Item = SecretValue>) -> SecretScrub {
        SecretScrub {
            values: values
                .into_iter()
                .filter(|v| v.len() >= MIN_SCRUBBED_LEN)
                .collect(),
        }
    }

    /// Whether there is nothing to look for.
    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret replaced.
    pub(crate) fn text(&self, text: &str) -> String {
        self.values
            .iter()
            .fold(text.to_string(), |t, v| t.replace(v.expose(), REDACTED))
    }

    /// Replaces secrets in every string (and object key) of `value`.
    pub(crate) fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) if self.values.iter().any(|v| s.contains(v.expose())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.value(&mut item);
                    map.insert(self.text(&key), item);
                }
            }
            _ => {}
        }
    }

    /// `item` with secrets replaced in its JSON form (unchanged when it does
    /// not read back, which a serde round trip of these types never causes).
    pub(crate) fn serde<T>(&self, item: T) -> T
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        let Ok(mut value) = serde_json::to_value(&item) else {
            return item;
        };
        self.value(&mut value);
        serde_json::from_value(value).unwrap_or(item)
    }

    /// `error` with secrets replaced in the texts an upstream had a say in.
    pub(crate) fn error(&self, error: UpstreamError) -> UpstreamError {
        match error {
            UpstreamError::Remote {
                id,
                code,
                message,
                data,
            } => UpstreamError::Remote {
                id,
                code,
                message: self.text(&message),
                data: data.map(|d| Box::new(self.serde(*d))),
            },
            UpstreamError::Protocol { id, detail } => UpstreamError::Protocol {
                id,
                detail: self.text(&detail),
            },
            UpstreamError::Unavailable { id, reason } => UpstreamError::Unavailable {
                id,
                reason: self.text(&reason),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_occurrence_goes_and_short_values_are_left_alone() {
        let scrub = SecretScrub::new([
            SecretValue::new("tok-123".into()),
            SecretValue::new("abc".into()),
        ]);
        let mut value = json!({
            "content": [{"type": "text", "text": "invalid token tok-123 (tok-123)"}],
            "tok-123": ["abc tok-1234"],
        });
        scrub.value(&mut value);
        assert_eq!(
            value,
            json!({
                "content": [{"type": "text", "text": "invalid token [redacted] ([redacted])"}],
                "[redacted]": ["abc [redacted]4"],
            })
        );
        let error = scrub.error(UpstreamError::Remote {
            id: "api".into(),
            code: -32000,
            message: "bad credential tok-123".into(),
            data: None,
        });
        assert!(!error.to_string().contains("tok-123"), "{error}");
    }
}
