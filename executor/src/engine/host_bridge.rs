//! The engine's only way out: every script request to the host goes through a
//! [`HostBridge`], so the engine runs the same in a worker process (requests
//! become IPC frames) and in-process under test (a fake bridge).

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::ipc::{HostError, HostRequest};

/// Answers what a running script asks of the host.
///
/// The engine calls `request` once per script call (never retried) and keeps at
/// most `Limits::parallel_calls` of them in flight. An `Err` reaches the script as
/// a thrown `Error` with that message.
///
/// ```
/// use futures::future::{BoxFuture, FutureExt};
/// use quiver_executor::{
///     engine::HostBridge,
///     ipc::{HostError, HostRequest},
/// };
///
/// struct Echo;
///
/// impl HostBridge for Echo {
///     fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<serde_json::Value, HostError>> {
///         async move { serde_json::to_value(request).map_err(|e| HostError::from(e.to_string())) }.boxed()
///     }
/// }
/// ```
pub trait HostBridge: Send + Sync {
    /// Sends `request` to the host and resolves with its reply.
    fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>>;

    /// Sends `request` and waits for the reply on this thread, for at most
    /// `timeout`: the name lookups a script's property reads make (see
    /// [`HostRequest::is_lookup`]), which cannot wait asynchronously. The
    /// default polls [`HostBridge::request`] to completion, which suits
    /// bridges whose replies do not need this thread's event loop.
    fn request_blocking(
        &self,
        request: HostRequest,
        timeout: Duration,
    ) -> Result<Value, HostError> {
        let _ = timeout;
        futures::executor::block_on(self.request(request))
    }
}

impl<T: HostBridge + ?Sized> HostBridge for Arc<T> {
    fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        (**self).request(request)
    }

    fn request_blocking(
        &self,
        request: HostRequest,
        timeout: Duration,
    ) -> Result<Value, HostError> {
        (**self).request_blocking(request, timeout)
    }
}
