//! The wall clock in the unit Quiver's records carry (audit records, leases,
//! token expiries, backups): milliseconds since the Unix epoch. One
//! definition, so every node and crate reads time the same way.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch on this node's clock: 0 for a clock set
/// before the epoch, `u64::MAX` for one past what fits.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_the_epoch_clock_in_milliseconds() {
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let now = now_ms();
        let after = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }
}
