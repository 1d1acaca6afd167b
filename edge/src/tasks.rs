//! Tasks (the MCP tasks extension, SEP-2663, `io.modelcontextprotocol/tasks`)
//! of one edge. For a client that declared the extension, a `tools/call`
//! that is still running after a short window, or whose upstream made a task
//! of it, or (in a session) that needs the client's input, becomes a task:
//! the client gets a task handle at once and follows the call with
//! `tasks/get`, answers its questions with `tasks/update`, and stops it with
//! `tasks/cancel`. Tasks of every mode are kept here: a passthrough or
//! search-mode call and a code-mode `execute` alike.
//!
//! A task belongs to the tenant that started it; to any other it does not
//! exist (`-32602`, as an unknown id). Each tenant holds at most
//! [`TaskLimits::per_tenant`] tasks (past that, calls answer directly); a
//! result larger than [`TaskLimits::result_bytes`] fails its task. A task is
//! kept [`TaskLimits::ttl`] from its start (a task still running then is
//! stopped and failed), and at least [`KEPT_AFTER_END`] after it ends.
//!
//! Alone, an edge keeps its tasks in its memory, and they end with it. In a
//! fleet with etcd ([`TaskFleet`], `EdgeTasks::in_fleet`) each task also has
//! a record in etcd written before the client hears of it: the executor keeps
//! the work running when the edge's stream closes and writes how it ended,
//! and any edge answers `tasks/*` from the record once the holder is gone.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use quiver_fleet::task_records::{TaskEnd, TaskRecord, TaskRecords, TaskTicket};
use quiver_proto::audit::{AuditKind, AuditOutcome, AuditRecord};
use quiver_view::CallOrigin;
use rmcp::{
    ErrorData,
    model::{
        CallToolResult, DetailedTask, InputRequest, InputResponses, JsonObject, Task, TaskPayload,
        TaskStatus,
    },
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::input_required::{Ask, CallEvent, RunningCall};

/// The least time an ended task stays readable, whatever its TTL.
pub const KEPT_AFTER_END: Duration = Duration::from_secs(60);
/// How long a cancelled call may take to stop before its task is settled as
/// cancelled all the same.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// What the edge allows tasks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskLimits {
    /// How long a call of a client that takes tasks runs before it becomes one.
    pub after: Duration,
    /// Tasks one tenant may hold (running or ended and still kept).
    pub per_tenant: usize,
    /// The largest result a task keeps, in bytes of JSON.
    pub result_bytes: usize,
    /// Tasks of every tenant together this edge holds (running, or ended
    /// and still kept); past it, calls answer directly.
    pub max_tasks: usize,
    /// Bytes of results this edge keeps for all tasks together; a result
    /// that would go past it fails its task (saying why).
    pub results_total: usize,
    /// How long a task is kept from its start (`ttlMs`).
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            after: Duration::from_millis(500),
            per_tenant: 100,
            result_bytes: 4 * 1024 * 1024,
            max_tasks: 10_000,
            results_total: 256 * 1024 * 1024,
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// Where a task's audit records go (the process's audit log).
pub type TaskAudit = Arc<dyn Fn(AuditRecord) + Send + Sync>;

/// One task.
struct Entry {
    tenant: String,
    /// Who started it, and what it calls: for its audit records.
    origin: CallOrigin,
    tool: String,
    task: Task,
    /// The ended task's outcome; `None` while it runs.
    ended: Option<(TaskPayload, Instant)>,
    /// Questions the client has not answered yet, under the keys it was given.
    pending: BTreeMap<String, InputRequest>,
    /// Where `tasks/update` answers go, to the task's driver.
    answers: mpsc::UnboundedSender<InputResponses>,
    /// Fired by `tasks/cancel`.
    cancel: CancellationToken,
    started: Instant,
    /// Bytes of its kept result (counted in [`EdgeTasks::kept_bytes`]).
    kept: usize,
}

impl Entry {
    fn detailed(&self) -> DetailedTask {
        let payload = match &self.ended {
            Some((payload, _)) => payload.clone(),
            None if !self.pending.is_empty() => TaskPayload::InputRequired {
                input_requests: self
                    .pending
                    .iter()
                    .map(|(key, request)| (key.clone(), request.clone()))
                    .collect(),
            },
            None => TaskPayload::Working,
        };
        DetailedTask::new(self.task.clone(), payload)
    }

    /// Whether it may be forgotten at `now`.
    fn expired(&self, now: Instant, ttl: Duration) -> bool {
        self.ended.as_ref().is_some_and(|(_, at)| {
            now.duration_since(self.started) >= ttl && now.duration_since(*at) >= KEPT_AFTER_END
        })
    }
}

/// What makes an edge's tasks outlive it in a fleet with etcd.
pub struct TaskFleet {
    /// The fleet's task records.
    pub records: Arc<TaskRecords>,
    /// This edge's name in the fleet (a record's holder).
    pub holder: String,
    /// This edge's tag, the prefix of its task ids (see `peers`), so that
    /// another edge hands it the requests about its tasks while it lives.
    pub tag: String,
    /// Whether an executor of that name is in the fleet now.
    pub executor_alive: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Whether an edge of that name is in the fleet now.
    pub edge_alive: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

/// The tasks of one edge.
pub struct EdgeTasks {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    /// Bytes of every kept result together.
    kept_bytes: Arc<std::sync::atomic::AtomicUsize>,
    /// Calls that may still become tasks, by tenant: they hold room.
    reserved: Mutex<HashMap<String, usize>>,
    limits: TaskLimits,
    audit: Option<TaskAudit>,
    fleet: Option<TaskFleet>,
}

impl EdgeTasks {
    /// No tasks yet, under `limits`.
    pub fn new(limits: TaskLimits) -> EdgeTasks {
        let entries: Arc<Mutex<HashMap<String, Entry>>> = Arc::default();
        let kept_bytes: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let counted = Arc::downgrade(&entries);
        quiver_telemetry::tables::watch("edge.tasks", limits.max_tasks, move || {
            Some(counted.upgrade()?.lock().ok()?.len())
        });
        let bytes = Arc::downgrade(&kept_bytes);
        quiver_telemetry::tables::watch(
            "edge.task_result_bytes",
            limits.results_total,
            move || Some(bytes.upgrade()?.load(std::sync::atomic::Ordering::Relaxed)),
        );
        EdgeTasks {
            entries,
            kept_bytes,
            reserved: Mutex::default(),
            limits,
            audit: None,
            fleet: None,
        }
    }

    /// These tasks, recorded in `fleet`'s etcd and named with its tag; they
    /// answer for tasks other edges held.
    pub fn in_fleet(mut self, fleet: TaskFleet) -> EdgeTasks {
        self.fleet = Some(fleet);
        self
    }

    /// Writes `record` in the background (a failure is logged: the task
    /// still lives here, only its edge's death would lose it).
    fn write(&self, record: TaskRecord) {
        let Some(fleet) = self.fleet.as_ref() else {
            return;
        };
        let records = fleet.records.clone();
        tokio::spawn(async move {
            if let Err(e) = records.put(&record).await {
                tracing::warn!(task = %record.task.task_id, "the task's record was not written: {e}");
            }
        });
    }

    /// These tasks, sending an audit record to `audit` when a task is made
    /// and when it ends.
    pub fn audited_by(mut self, audit: TaskAudit) -> EdgeTasks {
        self.audit = Some(audit);
        self
    }

    fn record(&self, entry: &Entry, outcome: AuditOutcome, reason: Option<String>) {
        let Some(audit) = self.audit.as_ref() else {
            return;
        };
        audit(AuditRecord {
            edge: entry.origin.edge.clone(),
            tool: Some(entry.tool.clone()),
            reason,
            latency_us: u64::try_from(entry.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            outcome,
            task_id: Some(entry.task.task_id.clone()),
            ..AuditRecord::new(
                AuditKind::Task,
                &entry.tenant,
                &entry.origin.caller,
                quiver_proto::clock::now_ms(),
            )
        });
    }

    /// What tasks are allowed.
    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Room for one more task of `tenant`, held until the call it is for
    /// ends or becomes a task (then the task holds it); `None` when the
    /// tenant's tasks and the calls that may become ones fill its limit.
    pub(crate) fn reserve(self: &Arc<Self>, tenant: &str) -> Option<TaskRoom> {
        let mut entries = self.entries();
        self.sweep(&mut entries);
        let held = entries.values().filter(|e| e.tenant == tenant).count();
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        let everyone: usize = entries.len() + reserved.values().sum::<usize>();
        if everyone >= self.limits.max_tasks {
            return None;
        }
        let pending = reserved.entry(tenant.to_string()).or_default();
        if held + *pending >= self.limits.per_tenant {
            return None;
        }
        *pending += 1;
        Some(TaskRoom {
            tasks: self.clone(),
            tenant: tenant.to_string(),
        })
    }

    /// Makes `call` (of `tool`, made by `origin`) a task of its tenant (with
    /// `asked`, what it already asked the client) and drives it to its end;
    /// the handle to answer with.
    pub(crate) async fn adopt(
        self: &Arc<Self>,
        call: RunningCall,
        asked: Option<Ask>,
        (origin, tool): (&CallOrigin, &str),
        room: TaskRoom,
    ) -> Task {
        let id = match self.fleet.as_ref() {
            Some(fleet) => format!("{}.{}", fleet.tag, uuid::Uuid::new_v4().simple()),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let now = timestamp();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now);
        task.ttl_ms = Some(millis(self.limits.ttl));
        task.poll_interval_ms = Some(millis(self.limits.poll_interval).max(1));
        let (answers, answered) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let entry = Entry {
            tenant: call.tenant().to_string(),
            origin: origin.clone(),
            tool: tool.to_string(),
            task: task.clone(),
            ended: None,
            pending: BTreeMap::new(),
            answers,
            cancel: cancel.clone(),
            started: Instant::now(),
            kept: 0,
        };
        self.record(&entry, AuditOutcome::TaskCreated, None);
        let ticket = TaskTicket {
            id: id.clone(),
            tenant: entry.tenant.clone(),
        };
        let slot = call.ticket_slot();
        match self.fleet.as_ref() {
            // The record first (before the client hears of the task, so
            // that any edge finds it), then the executor hears of it and
            // names itself in the record.
            Some(fleet) => {
                let record = TaskRecord {
                    tenant: entry.tenant.clone(),
                    tool: entry.tool.clone(),
                    task: task.clone(),
                    holder: fleet.holder.clone(),
                    executor: None,
                    end: None,
                };
                match fleet.records.put(&record).await {
                    Ok(()) => {
                        if let Some(slot) = slot {
                            slot.send_replace(Some(ticket));
                        }
                    }
                    Err(e) => tracing::warn!(
                        task = %ticket.id,
                        "the task's record was not written; it ends with this edge: {e}"
                    ),
                }
            }
            None => {
                if let Some(slot) = slot {
                    slot.send_replace(Some(ticket));
                }
            }
        }
        self.entries().insert(id.clone(), entry);
        // The task holds its tenant's room from now on.
        drop(room);
        let tasks = self.clone();
        tokio::spawn(async move {
            let payload = tasks.drive(&id, call, asked, answered, cancel).await;
            tasks.settle(&id, payload);
        });
        task
    }

    /// `tasks/get` of `id` for `tenant`, held here.
    fn get_held(&self, tenant: &str, id: &str) -> Option<DetailedTask> {
        let mut entries = self.entries();
        self.sweep(&mut entries);
        entries
            .get(id)
            .filter(|e| e.tenant == tenant)
            .map(Entry::detailed)
    }

    /// `tasks/get` of `id` for `tenant`: held here, or (in a fleet) as its
    /// record says, for a task whose edge is gone.
    pub(crate) async fn get(&self, tenant: &str, id: &str) -> Result<DetailedTask, ErrorData> {
        if let Some(task) = self.get_held(tenant, id) {
            return Ok(task);
        }
        let record = self.orphan(tenant, id).await?;
        Ok(self.as_recorded(record))
    }

    /// The record of a task this edge does not hold, when it is `tenant`'s.
    async fn orphan(&self, tenant: &str, id: &str) -> Result<TaskRecord, ErrorData> {
        let Some(fleet) = self.fleet.as_ref() else {
            return Err(unknown(id));
        };
        match fleet.records.get(id).await {
            Ok(Some(record)) if record.tenant == tenant => Ok(record),
            Ok(_) => Err(unknown(id)),
            Err(e) => Err(ErrorData::internal_error(
                format!("the task records cannot be read now ({e}); ask again shortly"),
                None,
            )),
        }
    }

    /// What `tasks/get` says of a task its record describes.
    fn as_recorded(&self, record: TaskRecord) -> DetailedTask {
        let payload = match record.end {
            Some(TaskEnd::Detailed { task }) => return task,
            Some(TaskEnd::Script { outcome }) => {
                self.outcome(Ok(crate::modes::script_result(Ok(*outcome))))
            }
            Some(TaskEnd::ScriptFailed { reason }) => self.outcome(Ok(
                crate::modes::script_result(Err(quiver_contract::ExecuteError::Failed { reason })),
            )),
            Some(TaskEnd::Tool { result }) => match serde_json::from_value(result) {
                Ok(result) => self.outcome(Ok(result)),
                Err(e) => failed(ErrorData::internal_error(
                    format!("unreadable result: {e}"),
                    None,
                )),
            },
            Some(TaskEnd::ToolFailed { code, message }) => {
                failed(ErrorData::new(rmcp::model::ErrorCode(code), message, None))
            }
            // Still running: on the edge that holds it (which answers in
            // full; a session's requests are answered here from the record),
            // or past it on its executor.
            None if self
                .fleet
                .as_ref()
                .is_some_and(|f| (f.edge_alive)(&record.holder)) =>
            {
                TaskPayload::Working
            }
            None => match &record.executor {
                Some(node)
                    if self
                        .fleet
                        .as_ref()
                        .is_some_and(|f| (f.executor_alive)(node)) =>
                {
                    TaskPayload::Working
                }
                Some(node) => failed(ErrorData::internal_error(
                    format!("the executor {node} running this task left before it ended"),
                    None,
                )),
                None => failed(ErrorData::internal_error(
                    "the edge holding this task left before its work was handed on; it is lost",
                    None,
                )),
            },
        };
        DetailedTask::new(record.task, payload)
    }

    /// `tasks/update`: answers to what task `id` asked; keys it did not ask
    /// (or asked and had answered) are ignored.
    pub(crate) async fn update(
        &self,
        tenant: &str,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let held = {
            let mut entries = self.entries();
            entries
                .get_mut(id)
                .filter(|e| e.tenant == tenant)
                .map(|entry| {
                    let given: InputResponses = responses
                        .into_iter()
                        .filter(|(key, _)| entry.pending.remove(key).is_some())
                        .collect();
                    if !given.is_empty() {
                        entry.task.last_updated_at = timestamp();
                        let _ = entry.answers.send(given);
                    }
                })
        };
        match held {
            Some(()) => Ok(()),
            None => self.orphan_refusal(tenant, id, "answered").await,
        }
    }

    /// `tasks/cancel`: stops task `id` (it settles as `cancelled` once its
    /// call has stopped); an ended task stays as it ended.
    pub(crate) async fn cancel(&self, tenant: &str, id: &str) -> Result<(), ErrorData> {
        let held = self
            .entries()
            .get(id)
            .filter(|e| e.tenant == tenant)
            .map(|e| e.cancel.clone());
        match held {
            Some(cancel) => {
                cancel.cancel();
                Ok(())
            }
            None => self.orphan_refusal(tenant, id, "cancelled").await,
        }
    }

    /// The answer to answering or cancelling a task this edge does not
    /// hold: an ended one takes it as done; a running one's questions and
    /// stop belong to the edge that held it, which is gone.
    async fn orphan_refusal(&self, tenant: &str, id: &str, what: &str) -> Result<(), ErrorData> {
        let record = self.orphan(tenant, id).await?;
        let holder = record.holder.clone();
        if self.as_recorded(record).status().is_terminal() {
            return Ok(());
        }
        let holder_alive = self.fleet.as_ref().is_some_and(|f| (f.edge_alive)(&holder));
        Err(ErrorData::internal_error(
            if holder_alive {
                format!(
                    "this task is held by another edge; it can be {what} there, or through any edge by a client of MCP 2026-07-28 (whose requests are handed to it)"
                )
            } else {
                format!(
                    "the edge holding this task left; it runs on, but can no longer be {what}: poll it with tasks/get"
                )
            },
            None,
        ))
    }

    /// Runs the task's call to its end: its questions become the task's
    /// `inputRequests`, answered by `tasks/update`; `cancel` stops it.
    async fn drive(
        &self,
        id: &str,
        mut call: RunningCall,
        first: Option<Ask>,
        mut answered: mpsc::UnboundedReceiver<InputResponses>,
        cancel: CancellationToken,
    ) -> TaskPayload {
        // Each question still open: the keys the client was given for it
        // (to its own keys), and the answers so far.
        let mut open: Vec<(Ask, BTreeMap<String, String>, InputResponses)> = Vec::new();
        if let Some(ask) = first {
            open.push(self.ask(id, ask));
        }
        let expires = tokio::time::sleep(self.limits.ttl);
        tokio::pin!(expires);
        loop {
            tokio::select! {
                event = call.next() => match event {
                    CallEvent::Done(result) => return self.outcome(result),
                    CallEvent::Asked(ask) => open.push(self.ask(id, ask)),
                    CallEvent::UpstreamTask => {}
                },
                Some(given) = answered.recv() => {
                    for (_, keys, answers) in &mut open {
                        for (key, value) in &given {
                            if let Some(own) = keys.get(key) {
                                answers.insert(own.clone(), value.clone());
                            }
                        }
                    }
                    // A question answered in full goes back to the call.
                    let (done, waiting): (Vec<_>, Vec<_>) = open
                        .into_iter()
                        .partition(|(_, keys, answers)| answers.len() == keys.len());
                    open = waiting;
                    for (ask, _, answers) in done {
                        let _ = ask.answer.send(Ok(answers));
                    }
                }
                () = cancel.cancelled() => {
                    call.stop();
                    // Its open questions go unanswered: the call stops waiting.
                    open.clear();
                    self.clear_pending(id);
                    // The call ends promptly once stopped; its result no longer counts.
                    let _ = tokio::time::timeout(STOP_GRACE, async {
                        while !matches!(call.next().await, CallEvent::Done(_)) {}
                    })
                    .await;
                    return TaskPayload::Cancelled;
                }
                () = &mut expires => {
                    call.stop();
                    return failed(ErrorData::internal_error(
                        format!("the task ran past its time to live of {} s and was stopped", self.limits.ttl.as_secs()),
                        None,
                    ));
                }
            }
        }
    }

    /// Shows `ask`'s questions to the client under keys of this task.
    fn ask(&self, id: &str, ask: Ask) -> (Ask, BTreeMap<String, String>, InputResponses) {
        let mut keys = BTreeMap::new();
        let mut entries = self.entries();
        if let Some(entry) = entries.get_mut(id) {
            for (own, request) in &ask.requests {
                // Keys stay the call's own unless another question of the
                // task holds one already.
                let mut key = own.clone();
                let mut n = 1;
                while entry.pending.contains_key(&key) || keys.contains_key(&key) {
                    n += 1;
                    key = format!("{own}-{n}");
                }
                entry.pending.insert(key.clone(), request.clone());
                keys.insert(key, own.clone());
            }
            entry.task.last_updated_at = timestamp();
        }
        (ask, keys, InputResponses::new())
    }

    fn clear_pending(&self, id: &str) {
        if let Some(entry) = self.entries().get_mut(id) {
            entry.pending.clear();
        }
    }

    /// How a call's end reads as a task's.
    fn outcome(&self, result: Result<CallToolResult, ErrorData>) -> TaskPayload {
        match result {
            // The script's executor failed it (lost, or could not run it):
            // the work did not end by itself.
            Ok(result) if executor_failed(&result) => failed(ErrorData::internal_error(
                result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect::<Vec<_>>()
                    .join("\n"),
                None,
            )),
            Ok(result) => match serde_json::to_value(&result) {
                Ok(serde_json::Value::Object(object)) => {
                    let size = serde_json::to_vec(&object).map_or(usize::MAX, |b| b.len());
                    if size > self.limits.result_bytes {
                        failed(ErrorData::internal_error(
                            format!(
                                "the result is {size} bytes; a task keeps at most {} bytes",
                                self.limits.result_bytes
                            ),
                            None,
                        ))
                    } else {
                        TaskPayload::Completed { result: object }
                    }
                }
                _ => failed(ErrorData::internal_error(
                    "the result could not be kept",
                    None,
                )),
            },
            Err(error) => failed(error),
        }
    }

    fn settle(&self, id: &str, payload: TaskPayload) {
        let mut entries = self.entries();
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        let payload = self.keep(entry, payload);
        entry.pending.clear();
        entry.task.status = payload.status();
        entry.task.last_updated_at = timestamp();
        let (outcome, reason) = match &payload {
            TaskPayload::Completed { .. } => (AuditOutcome::TaskCompleted, None),
            TaskPayload::Failed { error } => (
                AuditOutcome::TaskFailed,
                error
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string),
            ),
            _ => (AuditOutcome::TaskCancelled, None),
        };
        entry.ended = Some((payload, Instant::now()));
        self.record(entry, outcome, reason);
        if let Some(fleet) = self.fleet.as_ref() {
            let record = TaskRecord {
                tenant: entry.tenant.clone(),
                tool: entry.tool.clone(),
                task: entry.task.clone(),
                holder: fleet.holder.clone(),
                executor: None,
                end: Some(TaskEnd::Detailed {
                    task: entry.detailed(),
                }),
            };
            drop(entries);
            self.write(record);
        }
    }

    /// `payload`, kept by `entry` if the edge's room for results takes
    /// it; else the failure that says so.
    fn keep(&self, entry: &mut Entry, payload: TaskPayload) -> TaskPayload {
        use std::sync::atomic::Ordering;
        let TaskPayload::Completed { result } = &payload else {
            return payload;
        };
        let size = serde_json::to_vec(result).map_or(usize::MAX, |b| b.len());
        let total = self.limits.results_total;
        let taken = self
            .kept_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| {
                kept.checked_add(size).filter(|&after| after <= total)
            });
        if taken.is_err() {
            return failed(ErrorData::internal_error(
                format!(
                    "the result ({size} bytes) was not kept: this edge holds its most task results ({total} bytes in all); fetch or let earlier tasks' results expire, or call without a task"
                ),
                None,
            ));
        }
        entry.kept = size;
        payload
    }

    /// Forgets tasks past their keeping (and the room their results took).
    fn sweep(&self, entries: &mut HashMap<String, Entry>) {
        let now = Instant::now();
        let mut freed = 0;
        entries.retain(|_, entry| {
            let expired = entry.expired(now, self.limits.ttl);
            if expired {
                freed += entry.kept;
            }
            !expired
        });
        self.kept_bytes
            .fetch_sub(freed, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether `result` is code mode's answer for a script its executor could
/// not run or lost (`executor_error`), rather than the script's own end.
fn executor_failed(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
        && result
            .structured_content
            .as_ref()
            .is_some_and(|s| s["error"]["code"] == "executor_error")
}

/// Room for one task of a tenant, held by a call that may become one.
pub(crate) struct TaskRoom {
    tasks: Arc<EdgeTasks>,
    tenant: String,
}

impl Drop for TaskRoom {
    fn drop(&mut self) {
        let mut reserved = self
            .tasks
            .reserved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(pending) = reserved.get_mut(&self.tenant) {
            *pending = pending.saturating_sub(1);
            if *pending == 0 {
                reserved.remove(&self.tenant);
            }
        }
    }
}

fn failed(error: ErrorData) -> TaskPayload {
    let mut object = JsonObject::new();
    object.insert("code".into(), error.code.0.into());
    object.insert("message".into(), error.message.to_string().into());
    if let Some(data) = error.data {
        object.insert("data".into(), data);
    }
    TaskPayload::Failed { error: object }
}

fn unknown(id: &str) -> ErrorData {
    let shown: String = id.chars().take(64).collect();
    ErrorData::invalid_params(
        format!("no task `{shown}` (unknown, expired, or another tenant's)"),
        None,
    )
}

fn timestamp() -> String {
    rmcp::task_manager::current_timestamp()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
