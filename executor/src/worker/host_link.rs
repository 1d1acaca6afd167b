//! [`HostLink`]: the worker's [`HostBridge`]. A script request becomes a
//! `WorkerMessage::Request` frame and resolves when the host's `Reply` with the
//! same id comes back through [`HostLink::resolve`].

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
        mpsc as std_mpsc,
    },
    time::Duration,
};

use futures::future::{BoxFuture, FutureExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::engine::HostBridge;
use crate::ipc::{HostError, HostRequest, WorkerMessage};

type Reply = Result<Value, HostError>;

/// Requests waiting for the host, shared by the engine thread (which sends
/// them) and the I/O loop (which delivers the replies).
#[derive(Clone)]
pub(crate) struct HostLink {
    inner: Arc<Inner>,
}

struct Inner {
    /// Ids are never reused, so a late reply to an earlier execution finds
    /// nothing to resolve.
    next_id: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiter>>,
    outgoing: mpsc::UnboundedSender<WorkerMessage>,
}

/// Who waits for a reply: a script's promise, or the engine thread itself
/// (a name lookup, blocked in a property read).
enum Waiter {
    Promise(oneshot::Sender<Reply>),
    Thread(std_mpsc::SyncSender<Reply>),
}

impl HostLink {
    pub(crate) fn new(outgoing: mpsc::UnboundedSender<WorkerMessage>) -> Self {
        HostLink::numbering_from(outgoing, 1)
    }

    /// A link whose request ids start at `first_id`: each execution of a
    /// forking worker numbers its requests in a range of its own, so a reply
    /// meant for an earlier execution can never be taken for one of its own.
    pub(crate) fn numbering_from(
        outgoing: mpsc::UnboundedSender<WorkerMessage>,
        first_id: u64,
    ) -> Self {
        HostLink {
            inner: Arc::new(Inner {
                next_id: AtomicU64::new(first_id),
                waiting: Mutex::new(HashMap::new()),
                outgoing,
            }),
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<u64, Waiter>> {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Delivers the host's reply to request `id`; false if nothing waits for it.
    pub(crate) fn resolve(&self, id: u64, reply: Reply) -> bool {
        match self.waiting().remove(&id) {
            Some(Waiter::Promise(waiter)) => waiter.send(reply).is_ok(),
            Some(Waiter::Thread(waiter)) => waiter.send(reply).is_ok(),
            None => false,
        }
    }

    /// Fails every request still waiting (the execution they belong to ended).
    pub(crate) fn abandon_all(&self) {
        self.waiting().clear();
    }

    /// Queues a message to the host.
    pub(crate) fn send(&self, message: WorkerMessage) -> bool {
        self.inner.outgoing.send(message).is_ok()
    }
}

impl HostBridge for HostLink {
    fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (waiter, reply) = oneshot::channel();
        self.waiting().insert(id, Waiter::Promise(waiter));
        let sent = self.send(WorkerMessage::Request { id, request });
        if !sent {
            self.waiting().remove(&id);
        }
        async move {
            if !sent {
                return Err("the connection to the host is closed".into());
            }
            reply
                .await
                .unwrap_or_else(|_| Err("the host did not answer this request".into()))
        }
        .boxed()
    }

    fn request_blocking(
        &self,
        request: HostRequest,
        timeout: Duration,
    ) -> Result<Value, HostError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (waiter, reply) = std_mpsc::sync_channel(1);
        self.waiting().insert(id, Waiter::Thread(waiter));
        if !self.send(WorkerMessage::Request { id, request }) {
            self.waiting().remove(&id);
            return Err("the connection to the host is closed".into());
        }
        match reply.recv_timeout(timeout) {
            Ok(reply) => reply,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                self.waiting().remove(&id);
                Err("the host did not answer a name lookup in time".into())
            }
            Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                Err("the host did not answer this request".into())
            }
        }
    }
}
