//! How often the console takes a sign-in: per credential presented (so one
//! key cannot mint sessions in a loop) and per client address (so one
//! client cannot try credentials in a loop), each a token bucket. Both tables
//! are bounded; at the bound the bucket that has refilled the most goes
//! first (a full bucket says no more than an absent one). Credentials are
//! kept as a hash prefix, never in clear.

use std::{
    collections::HashMap,
    hash::Hash,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// Sign-ins one credential may make in a burst, and per minute after it.
pub(crate) const PER_CREDENTIAL_PER_MINUTE: f64 = 10.0;
/// Sign-ins (good or bad) one client address may attempt, likewise.
pub(crate) const PER_ADDRESS_PER_MINUTE: f64 = 30.0;
/// Buckets each table holds at most.
pub(crate) const MAX_TRACKED: usize = 10_000;

/// The sign-in buckets of one console.
pub(crate) struct SignInLimits {
    credentials: Arc<Mutex<Buckets<u64>>>,
    addresses: Arc<Mutex<Buckets<IpAddr>>>,
}

impl SignInLimits {
    /// Empty tables, counted on `/metrics` as `console.sign_in.credentials`
    /// and `console.sign_in.addresses`.
    pub(crate) fn new() -> SignInLimits {
        let limits = SignInLimits {
            credentials: Arc::new(Mutex::new(Buckets::new(PER_CREDENTIAL_PER_MINUTE))),
            addresses: Arc::new(Mutex::new(Buckets::new(PER_ADDRESS_PER_MINUTE))),
        };
        let credentials = Arc::downgrade(&limits.credentials);
        quiver_telemetry::tables::watch("console.sign_in.credentials", MAX_TRACKED, move || {
            Some(credentials.upgrade()?.lock().ok()?.len())
        });
        let addresses = Arc::downgrade(&limits.addresses);
        quiver_telemetry::tables::watch("console.sign_in.addresses", MAX_TRACKED, move || {
            Some(addresses.upgrade()?.lock().ok()?.len())
        });
        limits
    }

    /// Takes one sign-in of `credential` from `address` (unknown: not
    /// limited by address), or says how long to wait.
    pub(crate) fn take(&self, address: Option<IpAddr>, credential: &str) -> Result<(), Duration> {
        let now = Instant::now();
        if let Some(address) = address {
            self.addresses
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(address, now)?;
        }
        self.credentials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(credential_key(credential), now)
    }
}

/// A credential's key in the table: a prefix of its SHA-256.
fn credential_key(credential: &str) -> u64 {
    let digest = quiver_proto::hash::sha256(credential.as_bytes());
    let mut prefix = [0u8; 8];
    prefix.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(prefix)
}

/// Token buckets by key, at most [`MAX_TRACKED`].
struct Buckets<K> {
    per_minute: f64,
    by_key: HashMap<K, Bucket>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl<K: Hash + Eq + Copy> Buckets<K> {
    fn new(per_minute: f64) -> Buckets<K> {
        Buckets {
            per_minute,
            by_key: HashMap::new(),
        }
    }

    fn len(&self) -> usize {
        self.by_key.len()
    }

    fn refilled(&self, bucket: Bucket, now: Instant) -> f64 {
        let minutes = now.duration_since(bucket.at).as_secs_f64() / 60.0;
        (bucket.tokens + minutes * self.per_minute).min(self.per_minute)
    }

    fn take(&mut self, key: K, now: Instant) -> Result<(), Duration> {
        if !self.by_key.contains_key(&key) && self.by_key.len() >= MAX_TRACKED {
            self.make_room(now);
        }
        let full = Bucket {
            tokens: self.per_minute,
            at: now,
        };
        let bucket = self.by_key.get(&key).copied().unwrap_or(full);
        let tokens = self.refilled(bucket, now);
        if tokens < 1.0 {
            let wait = (1.0 - tokens) / self.per_minute * 60.0;
            return Err(Duration::from_secs_f64(wait.max(1.0)));
        }
        self.by_key.insert(
            key,
            Bucket {
                tokens: tokens - 1.0,
                at: now,
            },
        );
        Ok(())
    }

    /// Forgets the buckets that refilled (no different from none); if none
    /// did, the one closest to it.
    fn make_room(&mut self, now: Instant) {
        let per_minute = self.per_minute;
        let refilled = |b: &Bucket| {
            let minutes = now.duration_since(b.at).as_secs_f64() / 60.0;
            (b.tokens + minutes * per_minute).min(per_minute)
        };
        self.by_key.retain(|_, b| refilled(b) < per_minute);
        if self.by_key.len() >= MAX_TRACKED
            && let Some(key) = self
                .by_key
                .iter()
                .max_by(|a, b| refilled(a.1).total_cmp(&refilled(b.1)))
                .map(|(k, _)| *k)
        {
            self.by_key.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_signs_in_a_burst_then_waits() {
        let limits = SignInLimits::new();
        for _ in 0..PER_CREDENTIAL_PER_MINUTE as usize {
            assert!(limits.take(None, "qk_a").is_ok());
        }
        let wait = limits.take(None, "qk_a").expect_err("over the limit");
        assert!(wait >= Duration::from_secs(1), "{wait:?}");
        // Another credential is not held back by it.
        assert!(limits.take(None, "qk_b").is_ok());
    }

    #[test]
    fn an_address_tries_a_burst_of_credentials_then_waits() {
        let limits = SignInLimits::new();
        let address: IpAddr = "192.0.2.7".parse().unwrap();
        for n in 0..PER_ADDRESS_PER_MINUTE as usize {
            assert!(limits.take(Some(address), &format!("guess-{n}")).is_ok());
        }
        assert!(limits.take(Some(address), "one-more-guess").is_err());
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        assert!(limits.take(Some(other), "one-more-guess").is_ok());
    }

    #[test]
    fn the_tables_hold_at_most_their_bound() {
        let mut buckets: Buckets<u64> = Buckets::new(1.0);
        let now = Instant::now();
        for key in 0..(MAX_TRACKED as u64 + 500) {
            let _ = buckets.take(key, now);
        }
        assert_eq!(buckets.len(), MAX_TRACKED);
    }
}
