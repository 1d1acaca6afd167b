//! The rmcp client handler of one upstream connection: routes what the upstream
//! sends during a call (progress, logging, sampling, elicitation) back to the
//! caller that started the call, and reports `tools/list_changed`.
//!
//! Sampling and logging are deprecated after protocol 2025-11-25 but current in the
//! versions Quiver serves, so they are relayed; under MCP 2026-07-28 an upstream
//! asks for them in an `input_required` result instead (see [`CallSink::input`]).
#![allow(deprecated)]

use std::{collections::HashMap, sync::Arc};

use quiver_contract::CallSink;
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequestParams, ElicitResult, Implementation, LoggingMessageNotificationParam,
        ProgressNotificationParam, ProgressToken,
    },
    service::{NotificationContext, RequestContext},
};
use tokio::sync::mpsc;

/// The calls in flight on one connection, keyed by the progress token rmcp put
/// on the request. Registration happens under the lock that the handler also
/// takes, so a notification racing the registration waits for it.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: tokio::sync::Mutex<HashMap<ProgressToken, Arc<dyn CallSink>>>,
    /// Calls that just finished, still reachable by their token for
    /// [`LINGER`]: rmcp hands each notification to a task of its own and the
    /// response straight to the caller, so the last progress notifications of
    /// a call can be handled after its response. They still reach the caller
    /// (after the response); a log message reaches one only when no call is
    /// live and it is the only one that just finished; sampling and
    /// elicitation never do.
    finished: std::sync::Mutex<HashMap<ProgressToken, Lingering>>,
    /// Log messages and progress notifications read from the connection, and
    /// handed on by the handler: a call that ends waits until every one read
    /// before its response was handed on (see [`InFlight::relayed_settled`]).
    relayed_read: std::sync::atomic::AtomicU64,
    relayed_handled: std::sync::atomic::AtomicU64,
    relayed_one: tokio::sync::Notify,
}

/// The longest a finished call waits for its log messages and progress
/// notifications to be handed on.
const RELAYED_SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_millis(250);

/// A finished call's sink and until when it is still reachable.
type Lingering = (Arc<dyn CallSink>, std::time::Instant);

/// How long a finished call's progress notifications are still relayed.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

impl InFlight {
    /// Locks the registry; hold it while sending a call and registering its token.
    pub(crate) async fn lock(
        &self,
    ) -> tokio::sync::MutexGuard<'_, HashMap<ProgressToken, Arc<dyn CallSink>>> {
        self.calls.lock().await
    }

    async fn by_token(&self, token: &ProgressToken) -> Option<Arc<dyn CallSink>> {
        self.calls.lock().await.get(token).cloned()
    }

    /// The call a progress notification belongs to: a live one, or one that
    /// finished within [`LINGER`] (only progress may trail a response).
    async fn for_progress(&self, token: &ProgressToken) -> Option<Arc<dyn CallSink>> {
        if let Some(sink) = self.by_token(token).await {
            return Some(sink);
        }
        let finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        finished
            .get(token)
            .filter(|(_, until)| *until > std::time::Instant::now())
            .map(|(sink, _)| sink.clone())
    }

    /// A log message or a progress notification was read from the
    /// connection (before rmcp hands it to a task of its own).
    /// Counts one more log message or progress notification read; its
    /// place in the order they were read.
    pub(crate) fn relayed_read(&self) -> RelayedSeq {
        RelayedSeq(
            self.relayed_read
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst),
        )
    }

    /// Waits until every log message and progress notification read before
    /// the one at `seq` was handed on (bounded by [`RELAYED_SETTLE_LIMIT`],
    /// in case one never reaches the handler): rmcp hands each to a task of
    /// its own, and they would otherwise reach the caller in any order.
    async fn turn_of(&self, seq: Option<&RelayedSeq>) {
        if let Some(RelayedSeq(seq)) = seq.copied()
            && !self.handed_on(seq).await
        {
            tracing::debug!("an earlier upstream notification was not handed on in time");
        }
    }

    /// Waits until `target` log messages and progress notifications were
    /// handed on, for at most [`RELAYED_SETTLE_LIMIT`]; whether they were.
    async fn handed_on(&self, target: u64) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let handed = async {
            loop {
                let handled = self.relayed_one.notified();
                tokio::pin!(handled);
                handled.as_mut().enable();
                if self.relayed_handled.load(SeqCst) >= target {
                    return;
                }
                handled.await;
            }
        };
        tokio::time::timeout(RELAYED_SETTLE_LIMIT, handed)
            .await
            .is_ok()
    }

    fn relayed_handed_on(&self) {
        self.relayed_handled
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.relayed_one.notify_waiters();
    }

    /// Returns once every log message and progress notification read so far
    /// was handed on (bounded by [`RELAYED_SETTLE_LIMIT`]). rmcp reads a
    /// call's notifications before its response but hands each to a task of
    /// its own, while the response goes straight to the caller: a caller
    /// waits here first, or its client would get the last progress after
    /// the result (when a 2025-11-25 client's stream for the request has
    /// closed) and its script would miss the last log lines.
    pub(crate) async fn relayed_settled(&self) {
        let target = self.relayed_read.load(std::sync::atomic::Ordering::SeqCst);
        if !self.handed_on(target).await {
            tracing::debug!("an upstream's notifications were not all handed on in time");
        }
    }

    /// Moves a finished call from the live calls to the lingering ones.
    fn finish(&self, calls: &mut HashMap<ProgressToken, Arc<dyn CallSink>>, token: &ProgressToken) {
        let Some(sink) = calls.remove(token) else {
            return;
        };
        let now = std::time::Instant::now();
        let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        finished.retain(|_, (_, until)| *until > now);
        finished.insert(token.clone(), (sink, now + LINGER));
    }

    /// The single caller a message without a token can be attributed to. With
    /// several calls in flight the message cannot be attributed safely (it could
    /// leak one caller's data to another), so there is none.
    async fn sole(&self) -> Option<Arc<dyn CallSink>> {
        only_one(self.calls.lock().await.values().collect())
    }

    /// The caller a log message belongs to: the sole caller in flight, or,
    /// when none is, the sole call that finished within [`LINGER`] (a call's
    /// last log lines can be handled after its response, like its progress).
    async fn for_log(&self) -> Option<Arc<dyn CallSink>> {
        let calls = self.calls.lock().await;
        let now = std::time::Instant::now();
        let finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        let candidates: Vec<&Arc<dyn CallSink>> = if calls.is_empty() {
            finished
                .values()
                .filter(|(_, until)| *until > now)
                .map(|(sink, _)| sink)
                .collect()
        } else {
            calls.values().collect()
        };
        only_one(candidates)
    }

    /// The caller an upstream's request (sampling, elicitation) belongs to:
    /// the sole caller in flight, or none. A progress token on such a request
    /// is the upstream's own numbering, not one of the tokens of our calls,
    /// so it can name another caller's call: it is never used to attribute.
    async fn attribute(&self) -> Option<Arc<dyn CallSink>> {
        self.sole().await
    }
}

/// The one sink behind all of `sinks`, if there is exactly one.
fn only_one(sinks: Vec<&Arc<dyn CallSink>>) -> Option<Arc<dyn CallSink>> {
    let (first, rest) = sinks.split_first()?;
    rest.iter()
        .all(|s| Arc::ptr_eq(s, first))
        .then(|| Arc::clone(first))
}

/// Removes a call from the registry when dropped.
pub(crate) struct InFlightGuard {
    pub(crate) token: ProgressToken,
    pub(crate) in_flight: Arc<InFlight>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        // Removal needs the async lock; take it now if free, else finish on the runtime.
        if let Ok(mut calls) = self.in_flight.calls.try_lock() {
            self.in_flight.finish(&mut calls, &self.token);
            return;
        }
        let in_flight = self.in_flight.clone();
        let token = self.token.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let mut calls = in_flight.calls.lock().await;
                in_flight.finish(&mut calls, &token);
            });
        }
    }
}

/// The place of a log message or progress notification in the order the
/// connection read them (carried in the notification's extensions).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RelayedSeq(u64);

/// What the handler tells the connection owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientSignal {
    /// The upstream said its tool list changed.
    ToolsChanged,
    /// The upstream said the resource with this URI changed.
    ResourceUpdated(String),
}

/// The rmcp client handler for one upstream connection.
#[derive(Clone)]
pub(crate) struct UpstreamClient {
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) signals: mpsc::UnboundedSender<ClientSignal>,
}

fn unattributable(kind: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "{kind} can only be relayed while exactly one caller has a call in flight on this connection"
        ),
        None,
    )
}

impl ClientHandler for UpstreamClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        capabilities.elicitation = Some(Default::default());
        // Quiver's clients may render MCP Apps: a server that offers its
        // app-enhanced tools only to such clients offers them here.
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                quiver_proto::apps::UI_EXTENSION.into(),
                quiver_proto::apps::extension_settings(),
            );
        let mut info = ClientConfig::default();
        info.capabilities = capabilities;
        info.client_info = Implementation::new("quiver", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let sink = self
            .in_flight
            .attribute()
            .await
            .ok_or_else(|| unattributable("sampling/createMessage"))?;
        sink.create_message(params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let sink = self
            .in_flight
            .attribute()
            .await
            .ok_or_else(|| unattributable("elicitation/create"))?;
        sink.elicit(params).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.in_flight
            .turn_of(context.extensions.get::<RelayedSeq>())
            .await;
        if let Some(sink) = self.in_flight.for_progress(&params.progress_token).await {
            sink.progress(params.progress, params.total, params.message)
                .await;
        }
        self.in_flight.relayed_handed_on();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        // In the order the upstream sent them.
        self.in_flight
            .turn_of(context.extensions.get::<RelayedSeq>())
            .await;
        match self.in_flight.for_log().await {
            Some(sink) => sink.log(params).await,
            None => {
                tracing::debug!(logger = ?params.logger, "upstream log message not attributable to one caller")
            }
        }
        self.in_flight.relayed_handed_on();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.signals.send(ClientSignal::ToolsChanged);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.signals.send(ClientSignal::ResourceUpdated(params.uri));
    }
}

/// An upstream connection's transport that counts the log messages and
/// progress notifications it reads (see [`InFlight::relayed_settled`]).
pub(crate) struct CountingLogs<T> {
    inner: T,
    in_flight: Arc<InFlight>,
}

impl<T> CountingLogs<T> {
    /// `inner`, counting into `in_flight`.
    pub(crate) fn new(inner: T, in_flight: Arc<InFlight>) -> CountingLogs<T> {
        CountingLogs { inner, in_flight }
    }
}

impl<T: rmcp::transport::Transport<RoleClient>> rmcp::transport::Transport<RoleClient>
    for CountingLogs<T>
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<rmcp::service::RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await;
        if let Some(rmcp::model::JsonRpcMessage::Notification(notification)) = &mut message
            && matches!(
                notification.notification,
                rmcp::model::ServerNotification::LoggingMessageNotification(_)
                    | rmcp::model::ServerNotification::ProgressNotification(_)
            )
        {
            use rmcp::model::GetExtensions as _;
            let seq = self.in_flight.relayed_read();
            notification.notification.extensions_mut().insert(seq);
        }
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
