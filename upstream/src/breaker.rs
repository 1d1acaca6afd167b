//! A circuit breaker per upstream: after `failures` consecutive failures it
//! opens and refuses calls at once for `open_for`; then one probe call is let
//! through (half-open) — its success closes the breaker, its failure reopens it.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

/// Breaker settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Consecutive failures that open the breaker (0 disables it).
    pub failures: u32,
    /// How long it stays open before one probe is allowed.
    pub open_for: Duration,
}

impl BreakerConfig {
    /// The breaker settings of `upstream`.
    pub fn of(upstream: &quiver_proto::upstream_config::UpstreamConfig) -> BreakerConfig {
        BreakerConfig {
            failures: upstream.breaker_failures,
            open_for: Duration::from_secs(upstream.breaker_open_secs),
        }
    }
}

/// Whether calls get through, as shown in an upstream's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerState {
    /// Calls get through; failures are being counted.
    Closed,
    /// Calls are refused at once until `open_for` has passed.
    Open,
    /// One probe call decides whether it closes or opens again.
    HalfOpen,
}

impl BreakerState {
    /// `closed`, `open` or `half-open`, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }

    /// How closed it is, as the `quiver.upstream.breaker.state` gauge says
    /// it: 0 closed, 1 half-open, 2 open.
    pub fn level(self) -> u64 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Open => 2,
        }
    }
}

impl std::fmt::Display for BreakerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

/// The breaker.
#[derive(Debug)]
pub struct CircuitBreaker {
    config: BreakerConfig,
    state: Mutex<State>,
}

/// Permission to make one call; report how it went with [`CircuitBreaker::record`].
#[derive(Debug)]
#[must_use]
pub struct Admission {
    probe: bool,
}

impl CircuitBreaker {
    /// A closed breaker.
    pub fn new(config: BreakerConfig) -> CircuitBreaker {
        CircuitBreaker {
            config,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a call, or says how long until the next probe.
    pub fn admit(&self) -> Result<Admission, Duration> {
        if self.config.failures == 0 {
            return Ok(Admission { probe: false });
        }
        let mut state = self.lock();
        match *state {
            State::Closed { .. } => Ok(Admission { probe: false }),
            State::Open { until } => {
                let now = Instant::now();
                if now < until {
                    Err(until - now)
                } else {
                    *state = State::HalfOpen { probing: true };
                    Ok(Admission { probe: true })
                }
            }
            State::HalfOpen { probing: true } => Err(Duration::ZERO),
            State::HalfOpen { probing: false } => {
                *state = State::HalfOpen { probing: true };
                Ok(Admission { probe: true })
            }
        }
    }

    /// Records the outcome of an admitted call (`healthy`: the upstream answered).
    pub fn record(&self, admission: Admission, healthy: bool) {
        if self.config.failures == 0 {
            return;
        }
        let mut state = self.lock();
        *state = match (*state, healthy) {
            (_, true) => State::Closed { failures: 0 },
            (State::Closed { failures }, false)
                if failures + 1 < self.config.failures && !admission.probe =>
            {
                State::Closed {
                    failures: failures + 1,
                }
            }
            (_, false) => State::Open {
                until: Instant::now() + self.config.open_for,
            },
        };
    }

    /// Its state now.
    pub fn state(&self) -> BreakerState {
        match *self.lock() {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { .. } => BreakerState::Open,
            State::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// `closed`, `open` or `half-open`.
    pub fn state_name(&self) -> &'static str {
        self.state().as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(open_for: Duration) -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig {
            failures: 3,
            open_for,
        })
    }

    #[test]
    fn opens_after_consecutive_failures() {
        let b = breaker(Duration::from_secs(60));
        for _ in 0..2 {
            let a = b.admit().unwrap();
            b.record(a, false);
            assert_eq!(b.state_name(), "closed");
        }
        let a = b.admit().unwrap();
        b.record(a, false);
        assert_eq!(b.state_name(), "open");
        assert!(b.admit().is_err());
    }

    #[test]
    fn a_success_resets_the_count() {
        let b = breaker(Duration::from_secs(60));
        for healthy in [false, false, true, false, false] {
            let a = b.admit().unwrap();
            b.record(a, healthy);
        }
        assert_eq!(b.state_name(), "closed");
    }

    #[test]
    fn half_open_lets_one_probe_through() {
        let b = breaker(Duration::ZERO);
        for _ in 0..3 {
            let a = b.admit().unwrap();
            b.record(a, false);
        }
        let probe = b.admit().expect("probe admitted once open_for has passed");
        assert_eq!(b.state_name(), "half-open");
        assert!(b.admit().is_err(), "only one probe at a time");
        b.record(probe, false);
        assert_eq!(b.state_name(), "open");
        let probe = b.admit().unwrap();
        b.record(probe, true);
        assert_eq!(b.state_name(), "closed");
        assert!(b.admit().is_ok());
    }

    #[test]
    fn zero_failures_disables_it() {
        let b = CircuitBreaker::new(BreakerConfig {
            failures: 0,
            open_for: Duration::from_secs(60),
        });
        for _ in 0..10 {
            let a = b.admit().unwrap();
            b.record(a, false);
        }
        assert!(b.admit().is_ok());
    }
}
