//! The wall-clock limit for code that never yields: a thread that terminates
//! the isolate's JavaScript at the deadline unless it is stopped first.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
        mpsc,
    },
    thread::JoinHandle,
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

/// Terminates the isolate at `deadline`; dropping it first stops the thread
/// (and waits for it, so it can never touch a runtime that is gone).
pub(crate) struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    pub(crate) fn start(
        isolate: v8::IsolateHandle,
        deadline: Instant,
        cause: Arc<TerminationCause>,
    ) -> std::io::Result<Watchdog> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("quiver-js-watchdog".into())
            .spawn(move || {
                let wait = deadline.saturating_duration_since(Instant::now());
                if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
                    cause.set(Cause::Timeout);
                    isolate.terminate_execution();
                }
            })?;
        Ok(Watchdog {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
