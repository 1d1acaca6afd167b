//! The edge's accept loop, plain or TLS, with the limits a slow or greedy
//! client meets before any route runs: at most [`ConnectionLimits::max`]
//! connections in all and [`ConnectionLimits::per_address`] from one
//! address (past them a new connection is closed at once); a request head
//! must arrive within [`ConnectionLimits::header_timeout`], which also ends
//! a connection idle between requests. Request bodies have their own
//! deadline (`crate::http`). It knows nothing of MCP.

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpListener,
    sync::Semaphore,
    time::Sleep,
};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// What one edge listener lets its clients hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once.
    pub max: usize,
    /// Connections open at once from one client address.
    pub per_address: usize,
    /// How long a request's head may take to arrive, and how long a
    /// connection may sit idle waiting for its next request.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive (enforced by the
    /// router's body layer).
    pub body_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max: 10_000,
            per_address: 512,
            header_timeout: Duration::from_secs(20),
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// Open connections by client address.
#[derive(Default)]
struct PerAddress(Mutex<HashMap<IpAddr, usize>>);

impl PerAddress {
    /// Counts one more from `address`, unless it holds `most` already.
    fn enter(self: &Arc<Self>, address: IpAddr, most: usize) -> Option<AddressSlot> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(address).or_default();
        if *count >= most {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            table: self.clone(),
            address,
        })
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// One counted connection; uncounted when dropped.
struct AddressSlot {
    table: Arc<PerAddress>,
    address: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.table.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// Serves `app` on `listener` (through `tls` when given) until `shutdown`;
/// then each connection finishes what it carries, and a stream still open
/// when `sessions` is cancelled is cut.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    sessions: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max.max(1)));
    let per_address = Arc::new(PerAddress::default());
    let counted_slots = Arc::downgrade(&slots);
    let max = limits.max.max(1);
    quiver_telemetry::tables::watch("edge.connections", max, move || {
        counted_slots
            .upgrade()
            .map(|s| max.saturating_sub(s.available_permits()))
    });
    let counted_addresses = Arc::downgrade(&per_address);
    quiver_telemetry::tables::watch("edge.connection_addresses", max, move || {
        counted_addresses.upgrade().map(|t| t.len())
    });
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        // A full edge accepts nothing more: new connections wait in the
        // kernel's backlog until one ends (idle ones end at the header timeout).
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let Some(address_slot) = per_address.enter(peer.ip(), limits.per_address) else {
            tracing::debug!(%peer, "too many connections from one address: closed");
            continue;
        };
        // No Nagle delay between a response's writes (headers, SSE events):
        // with it, each later write waits for the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        let app = app.clone();
        let shutdown = shutdown.clone();
        let sessions = sessions.clone();
        connections.spawn(async move {
            let _held = (slot, address_slot);
            match tls {
                None => serve_connection(stream, peer, app, limits, shutdown, sessions).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await;
                    match handshake {
                        Ok(Ok(stream)) => {
                            serve_connection(stream, peer, app, limits, shutdown, sessions).await
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    connections.close();
    connections.wait().await;
}

async fn serve_connection<S>(
    stream: S,
    peer: SocketAddr,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    sessions: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The peer, as axum's `ConnectInfo` (operator-only routes read it).
    let app = app.layer(axum::Extension(axum::extract::ConnectInfo(peer)));
    let service = TowerToHyperService::new(app);
    // Before its first byte a connection is hyper's to classify (HTTP/1 or
    // 2), with no timer of its own: it gets the header timeout here.
    let stream = FirstByteDeadline::new(stream, limits.header_timeout);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // HTTP/2: a peer that stops answering pings is dropped.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_timeout))
        .keep_alive_timeout(limits.header_timeout);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            return;
        }
        () = shutdown.cancelled() => conn.as_mut().graceful_shutdown(),
    }
    // Finish what it carries; a stream still open when the sessions end is cut.
    tokio::select! {
        _ = conn => {}
        () = sessions.cancelled() => {}
    }
}

/// A stream that fails its reads if no byte arrives within its deadline,
/// then passes everything through (hyper's own timers take over).
struct FirstByteDeadline<S> {
    inner: S,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> FirstByteDeadline<S> {
    fn new(inner: S, within: Duration) -> FirstByteDeadline<S> {
        FirstByteDeadline {
            inner,
            deadline: Some(Box::pin(tokio::time::sleep(within))),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstByteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        match read {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                self.deadline = None;
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = self
                    .deadline
                    .as_mut()
                    .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready());
                if expired {
                    Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no request within the header timeout",
                    )))
                } else {
                    Poll::Pending
                }
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstByteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
