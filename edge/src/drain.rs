//! Draining on shutdown: an edge told to stop finishes the MCP requests it
//! has started before it ends its sessions.
//!
//! Every POST counts as in flight until its response body is done (an SSE
//! response ends when its result was sent). On shutdown the listener stops
//! accepting and connections finish what they carry; only when nothing is
//! in flight and no request started for [`QUIET`] (or after
//! [`DRAIN_LIMIT`]) are the sessions cancelled, which also ends long-lived
//! GET streams, so the server can exit.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    body::Body,
    extract::{Request, State},
    http::Method,
    middleware::Next,
    response::Response,
};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::Notify;

/// Longest a stopping edge waits for requests in flight before it cancels
/// them (a script's own deadline is usually shorter).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// Requests in flight.
#[derive(Clone, Default)]
pub struct InFlight(Arc<Counter>);

#[derive(Default)]
struct Counter {
    requests: AtomicUsize,
    /// Requests ever started.
    started: std::sync::atomic::AtomicU64,
    idle: Notify,
}

/// How long a draining edge waits, once nothing is in flight, for a request
/// that may still be on its way before it ends its sessions.
pub const QUIET: Duration = Duration::from_millis(250);

/// One request in flight while it lives.
struct Guard(InFlight);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.0.requests.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.0.idle.notify_waiters();
        }
    }
}

impl InFlight {
    fn enter(&self) -> Guard {
        self.0.started.fetch_add(1, Ordering::AcqRel);
        self.0.requests.fetch_add(1, Ordering::AcqRel);
        Guard(self.clone())
    }

    /// Requests in flight now.
    pub fn count(&self) -> usize {
        self.0.requests.load(Ordering::Acquire)
    }

    /// Returns when nothing is in flight and no request started for
    /// [`QUIET`], or after `limit`; whether it drained. The quiet time lets
    /// a request whose bytes were on their way when the listener closed (on
    /// a connection already open) arrive and be counted: ending the
    /// sessions under it would answer it HTTP 500.
    pub async fn drained(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            loop {
                let idle = self.0.idle.notified();
                if self.count() == 0 {
                    break;
                }
                if tokio::time::timeout_at(deadline, idle).await.is_err() {
                    return self.count() == 0;
                }
            }
            let started = self.0.started.load(Ordering::Acquire);
            let quiet_until = (tokio::time::Instant::now() + QUIET).min(deadline);
            tokio::time::sleep_until(quiet_until).await;
            if self.count() == 0 && self.0.started.load(Ordering::Acquire) == started {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return self.count() == 0;
            }
        }
    }
}

/// Middleware: counts a POST in flight until its response body ends.
pub async fn count(State(in_flight): State<InFlight>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let guard = in_flight.enter();
    let (parts, body) = next.run(request).await.into_parts();
    Response::from_parts(
        parts,
        Body::new(Counted {
            inner: body,
            _guard: guard,
        }),
    )
}

/// A response body that holds its request's [`Guard`] until dropped.
struct Counted {
    inner: Body,
    _guard: Guard,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drained_waits_for_the_last_request() {
        let in_flight = InFlight::default();
        let first = in_flight.enter();
        let second = in_flight.enter();
        let waiter = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.drained(Duration::from_secs(30)).await }
        });
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        assert_eq!(in_flight.count(), 1);
        drop(second);
        assert!(waiter.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_starts_in_the_quiet_time_is_waited_for() {
        let in_flight = InFlight::default();
        let waiter = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.drained(Duration::from_secs(30)).await }
        });
        tokio::time::sleep(QUIET / 2).await;
        let late = in_flight.enter();
        tokio::time::sleep(QUIET * 2).await;
        assert!(!waiter.is_finished(), "drained under a request in flight");
        drop(late);
        assert!(waiter.await.unwrap());
    }

    #[tokio::test]
    async fn drained_gives_up_at_its_limit() {
        let in_flight = InFlight::default();
        let _stuck = in_flight.enter();
        assert!(!in_flight.drained(Duration::from_millis(20)).await);
    }
}
