//! The wall-clock limit for code that never yields: a thread that terminates
//! the isolate's JavaScript at the deadline unless it is stopped first.

use std::{
    sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicU8, Ordering},
    },
    time::Instant,
};

use deno_core::v8;

/// Why the engine asked the isolate to stop, if it did.
#[derive(Debug, Default)]
pub(crate) struct TerminationCause(AtomicU8);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    Timeout = 1,
    Memory = 2,
}

impl TerminationCause {
    /// Records `cause` unless another one came first.
    pub(crate) fn set(&self, cause: Cause) {
        let _ = self
            .0
            .compare_exchange(0, cause as u8, Ordering::AcqRel, Ordering::Acquire);
    }

    pub(crate) fn get(&self) -> Option<Cause> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(Cause::Timeout),
            2 => Some(Cause::Memory),
            _ => None,
        }
    }
}

/// Terminates the isolate at its deadline unless it is stopped first.
///
/// Its thread can start before the deadline is known ([`Watchdog::waiting`],
/// then [`Watchdog::arm`]): a forked script process starts it while it waits
/// for its job, so the job does not wait for a thread to start. Dropping the
/// watchdog stops it: the thread decides whether to terminate under the same
/// lock the drop takes, so once the drop returns it can never terminate
/// anything, and the drop does not wait for the thread to wake (it ends on
/// its own right after).
pub(crate) struct Watchdog {
    shared: Arc<(Mutex<Countdown>, Condvar)>,
}

/// What the watchdog's thread waits for.
#[derive(Default)]
struct Countdown {
    deadline: Option<Instant>,
    stopped: bool,
}

impl Watchdog {
    /// A watchdog that terminates the isolate at `deadline`.
    pub(crate) fn start(
        isolate: v8::IsolateHandle,
        deadline: Instant,
        cause: Arc<TerminationCause>,
    ) -> std::io::Result<Watchdog> {
        let watchdog = Watchdog::waiting(isolate, cause)?;
        watchdog.arm(deadline);
        Ok(watchdog)
    }

    /// A watchdog whose thread runs but waits for [`Watchdog::arm`]; it
    /// never terminates anything before it is armed.
    pub(crate) fn waiting(
        isolate: v8::IsolateHandle,
        cause: Arc<TerminationCause>,
    ) -> std::io::Result<Watchdog> {
        let shared = Arc::new((Mutex::new(Countdown::default()), Condvar::new()));
        let watched = shared.clone();
        std::thread::Builder::new()
            .name("quiver-js-watchdog".into())
            .spawn(move || {
                let (countdown, changed) = &*watched;
                let mut state = lock(countdown);
                loop {
                    if state.stopped {
                        return;
                    }
                    state = match state.deadline {
                        None => changed.wait(state).unwrap_or_else(|p| p.into_inner()),
                        Some(deadline) => {
                            let now = Instant::now();
                            if now >= deadline {
                                // Under the lock: a drop that returned first
                                // has set `stopped`, checked above.
                                cause.set(Cause::Timeout);
                                isolate.terminate_execution();
                                return;
                            }
                            changed
                                .wait_timeout(state, deadline - now)
                                .unwrap_or_else(|p| p.into_inner())
                                .0
                        }
                    };
                }
            })?;
        Ok(Watchdog { shared })
    }

    /// Starts the countdown to `deadline`.
    pub(crate) fn arm(&self, deadline: Instant) {
        let (countdown, changed) = &*self.shared;
        lock(countdown).deadline = Some(deadline);
        changed.notify_one();
    }
}

fn lock(countdown: &Mutex<Countdown>) -> MutexGuard<'_, Countdown> {
    countdown.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let (countdown, changed) = &*self.shared;
        lock(countdown).stopped = true;
        changed.notify_one();
    }
}
