//! Draining on shutdown: an edge told to stop finishes the MCP requests it
//! has started before it ends its sessions.
//!
//! Every POST counts as in flight until its response body is done (an SSE
//! response ends when its result was sent). On shutdown the listener stops
//! accepting and connections finish what they carry; only when nothing is
//! in flight (or after [`DRAIN_LIMIT`]) are the sessions cancelled, which
//! also ends long-lived GET streams, so the server can exit.

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
    idle: Notify,
}

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
        self.0.requests.fetch_add(1, Ordering::AcqRel);
        Guard(self.clone())
    }

    /// Requests in flight now.
    pub fn count(&self) -> usize {
        self.0.requests.load(Ordering::Acquire)
    }

    /// Returns when nothing is in flight, or after `limit`; whether it
    /// drained.
    pub async fn drained(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let idle = self.0.idle.notified();
            if self.count() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
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

    #[tokio::test]
    async fn drained_gives_up_at_its_limit() {
        let in_flight = InFlight::default();
        let _stuck = in_flight.enter();
        assert!(!in_flight.drained(Duration::from_millis(20)).await);
    }
}
