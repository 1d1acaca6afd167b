//! The per-session stash scripts use to keep values across `execute` calls of
//! one MCP session: bounded keys, values, entry counts and TTLs; sessions that
//! go quiet are dropped.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde_json::Value;

/// Stash limits.
#[derive(Debug, Clone, Copy)]
pub struct StashLimits {
    /// Longest key, bytes.
    pub max_key_bytes: usize,
    /// Largest value (serialized JSON), bytes.
    pub max_value_bytes: usize,
    /// Total serialized size per session, bytes.
    pub max_session_bytes: usize,
    /// Keys per session.
    pub max_keys: usize,
    /// TTL when none is given.
    pub default_ttl: Duration,
    /// Longest TTL accepted.
    pub max_ttl: Duration,
    /// Sessions with no stash activity for this long are dropped.
    pub session_idle: Duration,
}

impl Default for StashLimits {
    fn default() -> Self {
        StashLimits {
            max_key_bytes: 256,
            max_value_bytes: 256 * 1024,
            max_session_bytes: 4 * 1024 * 1024,
            max_keys: 1_000,
            default_ttl: Duration::from_secs(3_600),
            max_ttl: Duration::from_secs(24 * 3_600),
            session_idle: Duration::from_secs(24 * 3_600),
        }
    }
}

struct Entry {
    value: Value,
    bytes: usize,
    expires: Instant,
}

#[derive(Default)]
struct SessionStash {
    entries: HashMap<String, Entry>,
    bytes: usize,
    touched: Option<Instant>,
}

impl SessionStash {
    fn purge_expired(&mut self, now: Instant) {
        let mut freed = 0;
        self.entries.retain(|_, e| {
            let live = e.expires > now;
            if !live {
                freed += e.bytes;
            }
            live
        });
        self.bytes -= freed;
    }
}

/// Every session's stash.
#[derive(Default)]
pub struct StashStore {
    limits: StashLimits,
    sessions: Mutex<HashMap<String, SessionStash>>,
}

impl StashStore {
    /// A store with `limits`.
    pub fn new(limits: StashLimits) -> StashStore {
        StashStore {
            limits,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn with_session<T>(
        &self,
        session: &str,
        f: impl FnOnce(&mut SessionStash, &StashLimits) -> T,
    ) -> T {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|id, s| {
            id == session
                || s.touched
                    .is_none_or(|t| now.duration_since(t) < self.limits.session_idle)
        });
        let stash = sessions.entry(session.to_string()).or_default();
        stash.touched = Some(now);
        stash.purge_expired(now);
        f(stash, &self.limits)
    }

    fn check_key(&self, key: &str) -> Result<(), String> {
        if key.is_empty() || key.len() > self.limits.max_key_bytes {
            return Err(format!(
                "stash keys must be 1 to {} bytes",
                self.limits.max_key_bytes
            ));
        }
        if key.chars().any(|c| c.is_control()) {
            return Err("stash keys cannot contain control characters".into());
        }
        Ok(())
    }

    /// The value under `key`, or null.
    pub fn get(&self, session: &str, key: &str) -> Result<Value, String> {
        self.check_key(key)?;
        Ok(self.with_session(session, |s, _| {
            s.entries
                .get(key)
                .map(|e| e.value.clone())
                .unwrap_or(Value::Null)
        }))
    }

    /// Stores `value` under `key` for `ttl_secs` (default and maximum from the limits).
    pub fn set(
        &self,
        session: &str,
        key: &str,
        value: Value,
        ttl_secs: Option<u64>,
    ) -> Result<Value, String> {
        self.check_key(key)?;
        let bytes = key.len()
            + serde_json::to_string(&value)
                .map_err(|e| e.to_string())?
                .len();
        if bytes > self.limits.max_value_bytes {
            return Err(format!(
                "stash value too large: {bytes} bytes (limit {})",
                self.limits.max_value_bytes
            ));
        }
        let ttl = ttl_secs
            .map_or(self.limits.default_ttl, Duration::from_secs)
            .min(self.limits.max_ttl);
        self.with_session(session, |s, limits| {
            let old = s.entries.get(key).map_or(0, |e| e.bytes);
            if s.bytes - old + bytes > limits.max_session_bytes {
                return Err(format!(
                    "stash full: this session may keep {} bytes; delete keys first",
                    limits.max_session_bytes
                ));
            }
            if old == 0 && s.entries.len() >= limits.max_keys {
                return Err(format!(
                    "stash full: at most {} keys per session",
                    limits.max_keys
                ));
            }
            s.bytes = s.bytes - old + bytes;
            s.entries.insert(
                key.to_string(),
                Entry {
                    value,
                    bytes,
                    expires: Instant::now() + ttl,
                },
            );
            Ok(Value::Bool(true))
        })
    }

    /// Removes `key`; true if it existed.
    pub fn delete(&self, session: &str, key: &str) -> Result<Value, String> {
        self.check_key(key)?;
        Ok(
            self.with_session(session, |s, _| match s.entries.remove(key) {
                Some(e) => {
                    s.bytes -= e.bytes;
                    Value::Bool(true)
                }
                None => Value::Bool(false),
            }),
        )
    }

    /// Live keys, sorted.
    pub fn keys(&self, session: &str) -> Value {
        self.with_session(session, |s, _| {
            let mut keys: Vec<&String> = s.entries.keys().collect();
            keys.sort();
            Value::from(keys.into_iter().cloned().collect::<Vec<_>>())
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_scoped_to_their_session() {
        let store = StashStore::default();
        store.set("a", "k", json!(1), None).unwrap();
        assert_eq!(store.get("a", "k").unwrap(), json!(1));
        assert_eq!(store.get("b", "k").unwrap(), Value::Null);
        assert_eq!(store.keys("b"), json!([]));
    }

    #[test]
    fn quotas_are_enforced_and_named() {
        let limits = StashLimits {
            max_value_bytes: 100,
            max_session_bytes: 150,
            max_keys: 2,
            ..StashLimits::default()
        };
        let store = StashStore::new(limits);
        assert!(
            store
                .set("s", "big", json!("x".repeat(200)), None)
                .unwrap_err()
                .contains("too large")
        );
        store.set("s", "a", json!("x".repeat(80)), None).unwrap();
        assert!(
            store
                .set("s", "b", json!("x".repeat(80)), None)
                .unwrap_err()
                .contains("stash full")
        );
        store.set("s", "b", json!(1), None).unwrap();
        assert!(
            store
                .set("s", "c", json!(1), None)
                .unwrap_err()
                .contains("at most 2 keys")
        );
        assert_eq!(store.delete("s", "a").unwrap(), json!(true));
        store.set("s", "c", json!(1), None).unwrap();
    }

    #[test]
    fn expired_values_disappear() {
        let store = StashStore::default();
        store.set("s", "k", json!(1), Some(0)).unwrap();
        assert_eq!(store.get("s", "k").unwrap(), Value::Null);
    }

    #[test]
    fn odd_keys_are_plain_keys_or_refused() {
        let store = StashStore::default();
        store.set("s", "../../etc/passwd", json!(1), None).unwrap();
        assert_eq!(store.get("other", "../../etc/passwd").unwrap(), Value::Null);
        assert!(store.set("s", "", json!(1), None).is_err());
        assert!(store.set("s", &"k".repeat(300), json!(1), None).is_err());
        assert!(store.set("s", "a\u{0}b", json!(1), None).is_err());
    }
}
