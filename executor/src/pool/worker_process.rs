//! One worker child process and the host side of its IPC: sends an execution,
//! answers the worker's requests through the caller's context, and enforces the
//! limits again from outside (a worker that overruns its deadline is killed).

use std::{
    path::PathBuf,
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{StreamExt, stream::FuturesUnordered};
use serde_json::Value;
use tokio::{
    process::{Child, ChildStdin, ChildStdout, Command},
    sync::{Semaphore, mpsc},
};
use tokio_util::sync::CancellationToken;

use tokio::io::AsyncWriteExt;

use quiver_contract::{Limits, ScriptOutcome};

use crate::{
    engine::{BYTECODE_CACHE_OFF, startup_snapshot},
    ipc::{
        CallLimitReached, FrameError, FrameReader, FrameWriter, HostError, HostMessage,
        HostRequest, ToolNames, WorkerMessage,
    },
    pool::script_context::{ResourceOp, ScriptContext, StashOp},
};

/// How long past its wall limit a worker may take to report before it is
/// killed: the backstop for native code in the engine that never checks the
/// interrupt the watchdog raises.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(250);
/// How long a new worker may take to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// How to start a worker: an absolute program path and its arguments.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    /// Absolute path of the binary (normally the `quiver` executable itself).
    pub program: PathBuf,
    /// Arguments (normally `["__worker"]`).
    pub args: Vec<String>,
}

/// The worker flag that makes it take its startup snapshot from the host.
pub const SNAPSHOT_FROM_HOST_FLAG: &str = "--snapshot-from-stdin";

impl WorkerCommand {
    /// `program __worker`, handed this host's startup snapshot at start (a
    /// worker then starts in milliseconds instead of making its own).
    /// `program` must be this same binary.
    pub fn quiver(program: impl Into<PathBuf>) -> WorkerCommand {
        WorkerCommand {
            program: program.into(),
            args: vec!["__worker".into(), SNAPSHOT_FROM_HOST_FLAG.into()],
        }
    }

    fn wants_snapshot(&self) -> bool {
        self.args.iter().any(|a| a == SNAPSHOT_FROM_HOST_FLAG)
    }
}

/// What went wrong with a worker (the worker is not reused after any of these).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerFault {
    /// It could not be started.
    #[error("cannot start a worker: {0}")]
    Spawn(String),
    /// It exited or closed its pipes.
    #[error("the worker process died")]
    Died,
    /// It was gone before the execution could be handed to it (nothing ran).
    #[error("the worker process was gone before the script was sent")]
    NotStarted,
    /// It sent something that is not a valid frame or message.
    #[error("the worker broke the IPC protocol: {0}")]
    Protocol(String),
    /// It did not finish within its wall limit plus grace and was killed.
    #[error("the script exceeded its time limit and its worker was stopped")]
    Overran,
    /// The caller cancelled (or went away) and the worker was stopped.
    #[error("the script was cancelled and its worker was stopped")]
    Cancelled,
}

/// A running worker process, killed on drop.
pub struct WorkerProcess {
    child: Child,
    reader: FrameReader<ChildStdout>,
    writer: FrameWriter<ChildStdin>,
    uses: u32,
    idle_since: Instant,
    poisoned: bool,
    /// Runs each execution in a process of its own (said in its `Ready`).
    forks: bool,
}

impl WorkerProcess {
    /// Starts a worker with an empty environment, waits until it is ready
    /// and checks from outside that it locked itself down.
    pub async fn spawn(command: &WorkerCommand) -> Result<WorkerProcess, WorkerFault> {
        let worker = WorkerProcess::spawn_unchecked(command).await?;
        check_isolation(worker.pid())?;
        Ok(worker)
    }

    /// [`WorkerProcess::spawn`] without the isolation check: only for
    /// `quiver bench executor`, to measure what the lock-down costs.
    #[doc(hidden)]
    pub async fn spawn_unchecked(command: &WorkerCommand) -> Result<WorkerProcess, WorkerFault> {
        if !command.program.is_absolute() {
            return Err(WorkerFault::Spawn(format!(
                "{} is not an absolute path",
                command.program.display()
            )));
        }
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .env_clear()
            // The engine must never cache scripts (or load bytecode) on disk.
            .env(BYTECODE_CACHE_OFF.0, BYTECODE_CACHE_OFF.1)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| WorkerFault::Spawn(e.to_string()))?;
        let mut stdin = child.stdin.take().ok_or(WorkerFault::Died)?;
        let stdout = child.stdout.take().ok_or(WorkerFault::Died)?;
        if command.wants_snapshot() {
            // Made once per host process (off the async threads), then only copied.
            let snapshot = tokio::task::spawn_blocking(startup_snapshot)
                .await
                .map_err(|_| WorkerFault::Spawn("making the startup snapshot failed".into()))?
                .map_err(|e| WorkerFault::Spawn(e.to_string()))?;
            let len = u32::try_from(snapshot.len())
                .map_err(|_| WorkerFault::Spawn("the startup snapshot is too large".into()))?;
            let sent = async {
                stdin.write_all(&len.to_be_bytes()).await?;
                stdin.write_all(snapshot).await?;
                stdin.flush().await
            };
            sent.await.map_err(|_| WorkerFault::Died)?;
        }
        let mut worker = WorkerProcess {
            child,
            reader: FrameReader::new(stdout),
            writer: FrameWriter::new(stdin),
            uses: 0,
            idle_since: Instant::now(),
            poisoned: false,
            forks: false,
        };
        match tokio::time::timeout(START_TIMEOUT, worker.reader.read_message::<WorkerMessage>())
            .await
        {
            Ok(Ok(Some(WorkerMessage::Ready { forks }))) => {
                worker.forks = forks;
                Ok(worker)
            }
            Ok(Ok(Some(other))) => Err(WorkerFault::Protocol(format!(
                "expected Ready, got {other:?}"
            ))),
            Ok(Ok(None)) => Err(WorkerFault::Died),
            Ok(Err(e)) => Err(WorkerFault::Protocol(e.to_string())),
            Err(_) => Err(WorkerFault::Spawn(
                "the worker did not become ready in time".into(),
            )),
        }
    }

    /// Executions run so far.
    pub fn uses(&self) -> u32 {
        self.uses
    }

    /// When it last finished an execution.
    pub fn idle_since(&self) -> Instant {
        self.idle_since
    }

    /// The OS process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Pings the worker; false if it does not answer promptly.
    pub async fn healthy(&mut self) -> bool {
        if self.writer.write_message(&HostMessage::Ping).await.is_err() {
            return false;
        }
        matches!(
            tokio::time::timeout(
                Duration::from_secs(2),
                self.reader.read_message::<WorkerMessage>()
            )
            .await,
            Ok(Ok(Some(WorkerMessage::Pong)))
        )
    }

    /// Runs one script. Requests from the worker are answered through `context`,
    /// with the host-call limits enforced here too. Reading the worker's
    /// frames and writing replies to it run independently, and the deadline
    /// (the wall limit plus [`DEADLINE_GRACE`]) and `cancel` are watched
    /// whatever either is doing: a worker past its deadline, or whose caller
    /// gave up, is killed.
    pub async fn run(
        &mut self,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, WorkerFault> {
        if !matches!(self.child.try_wait(), Ok(None)) {
            // Gone while idle: nothing was sent, so nothing ran.
            return Err(WorkerFault::NotStarted);
        }
        self.uses += 1;
        let execute = HostMessage::Execute {
            code: code.to_string(),
            limits,
            names: ToolNames::mentioned_in(code, |server, tool| {
                context.has_tool_name(server, tool)
            }),
        };
        // What a worker may send: its largest request, or its outcome.
        self.reader.set_max_frame(worker_frame_limit(&limits));
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(limits.wall_ms) + DEADLINE_GRACE;
        let (replies, mut to_worker) = mpsc::unbounded_channel::<HostMessage>();
        let writer = &mut self.writer;
        // Replies queue here (at most one per admitted request) and are written
        // while frames keep being read.
        let writing = async move {
            writer.write_message(&execute).await?;
            while let Some(message) = to_worker.recv().await {
                writer.write_message(&message).await?;
            }
            Ok::<_, FrameError>(())
        };
        tokio::pin!(writing);
        let parallel = Arc::new(Semaphore::new(limits.parallel_calls.max(1) as usize));
        let mut budget = HostCallBudget::new(&limits);
        let mut pending = FuturesUnordered::new();
        let mut written = false;
        let result = loop {
            tokio::select! {
                message = self.reader.read_message::<WorkerMessage>() => match message {
                    Ok(Some(WorkerMessage::Request { id, request })) => {
                        if let Err(refusal) = budget.admit(&request) {
                            let _ = replies.send(HostMessage::Reply { id, result: Err(refusal.into()) });
                            continue;
                        }
                        if request.is_lookup() {
                            // The script is blocked on it: answer now, never
                            // behind tool calls waiting for a parallel slot.
                            let result = lookup(context.as_ref(), request);
                            let _ = replies.send(HostMessage::Reply { id, result });
                            continue;
                        }
                        let context = context.clone();
                        let parallel = parallel.clone();
                        let reply_bytes = limits.reply_bytes;
                        pending.push(async move {
                            let _permit = parallel.acquire_owned().await;
                            let result = answer(context.as_ref(), request).await;
                            (id, bounded_reply(result, reply_bytes))
                        });
                    }
                    Ok(Some(WorkerMessage::Done { outcome })) => break Ok(outcome),
                    Ok(Some(WorkerMessage::Ready { .. } | WorkerMessage::Pong)) => {}
                    Ok(None) => break Err(WorkerFault::Died),
                    Err(e) => break Err(WorkerFault::Protocol(e.to_string())),
                },
                Some((id, result)) = pending.next(), if !pending.is_empty() => {
                    let _ = replies.send(HostMessage::Reply { id, result });
                }
                done = &mut writing, if !written => {
                    written = true;
                    if done.is_err() {
                        break Err(WorkerFault::Died);
                    }
                }
                () = tokio::time::sleep_until(deadline) => break Err(WorkerFault::Overran),
                () = cancel.cancelled() => break Err(WorkerFault::Cancelled),
            }
        };
        // Calls still running belong to a finished script: stop them, and let
        // the replies already queued reach the worker (which ignores them) so
        // the next frame starts on a frame boundary.
        drop(pending);
        drop(replies);
        let result = match result {
            Ok(outcome) if !written => {
                match tokio::time::timeout(DEADLINE_GRACE, &mut writing).await {
                    Ok(Ok(())) => Ok(outcome),
                    _ => {
                        // The stream may be cut mid-frame: this worker cannot be reused.
                        self.poisoned = true;
                        Ok(outcome)
                    }
                }
            }
            other => other,
        };
        self.idle_since = Instant::now();
        if result.is_err() {
            let _ = self.child.start_kill();
        }
        result
    }

    /// Whether the worker's pipe may be mid-frame, so it must not be reused.
    pub fn poisoned(&self) -> bool {
        self.poisoned
    }

    /// Whether each execution runs in a process of its own, forked from a
    /// runtime no script has run in.
    pub fn forks(&self) -> bool {
        self.forks
    }

    /// Whether the worker should not run anything else after `outcome`.
    /// A forking worker ran the script in a process that is gone: a timeout,
    /// the memory cap or a crash there leaves the worker itself as it was
    /// (it exits by itself if it cannot start script processes).
    pub fn in_doubt_after(&self, outcome: &ScriptOutcome) -> bool {
        !self.forks
            && outcome
                .error
                .as_ref()
                .is_some_and(|e| e.kind.leaves_worker_in_doubt())
    }
}

async fn answer(context: &dyn ScriptContext, request: HostRequest) -> Result<Value, HostError> {
    match request {
        HostRequest::CallTool { name, args } => context.call_tool(name, args).await,
        HostRequest::Search { query, limit } => context.search(query, limit).await,
        HostRequest::Describe { name } => context.describe(name).await,
        HostRequest::StashGet { key } => context.stash(StashOp::Get(key)).await,
        HostRequest::StashSet {
            key,
            value,
            ttl_secs,
        } => context.stash(StashOp::Set(key, value, ttl_secs)).await,
        HostRequest::StashDelete { key } => context.stash(StashOp::Delete(key)).await,
        HostRequest::StashKeys => context.stash(StashOp::Keys).await,
        HostRequest::ListResources => context.resources(ResourceOp::List).await,
        HostRequest::ReadResource { uri } => context.resources(ResourceOp::Read(uri)).await,
        lookup_request @ (HostRequest::HasName { .. } | HostRequest::Names { .. }) => {
            lookup(context, lookup_request)
        }
    }
}

/// A name lookup, answered from the context without waiting.
fn lookup(context: &dyn ScriptContext, request: HostRequest) -> Result<Value, HostError> {
    match request {
        HostRequest::HasName { server, tool } => {
            Ok(Value::Bool(context.has_tool_name(&server, tool.as_deref())))
        }
        HostRequest::Names { server } => Ok(context
            .tool_names(server.as_deref())
            .map_or(Value::Null, |names| {
                Value::Array(names.into_iter().map(Value::String).collect())
            })),
        _ => Err("not a name lookup".into()),
    }
}

/// The largest frame a worker may send during an execution under `limits`:
/// its outcome (result and logs) or one request, with room for framing.
fn worker_frame_limit(limits: &Limits) -> usize {
    let outcome = limits.output_bytes.saturating_add(limits.log_bytes);
    let largest = outcome.max(limits.request_bytes).saturating_add(64 * 1024);
    usize::try_from(largest).unwrap_or(usize::MAX)
}

/// A reply too large for the script becomes an error saying so.
fn bounded_reply(result: Result<Value, HostError>, max: u64) -> Result<Value, HostError> {
    /// Counts what is written, keeping nothing.
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let value = result?;
    let mut counter = Counter(0);
    // The frame writer serialises it again; measuring builds no copy.
    let size = serde_json::to_writer(&mut counter, &value).map_or(0, |()| counter.0);
    if size > max {
        return Err(format!(
            "the answer is {size} bytes; a script may receive at most {max} bytes at once (ask for less, e.g. a page or a summary)"
        )
        .into());
    }
    Ok(value)
}

/// The per-execution budgets the host enforces itself, whatever the worker
/// claims: tool calls, and host calls of every kind.
struct HostCallBudget {
    tool_calls: u32,
    host_calls: u32,
    limits: Limits,
}

impl HostCallBudget {
    fn new(limits: &Limits) -> Self {
        HostCallBudget {
            tool_calls: 0,
            host_calls: 0,
            limits: *limits,
        }
    }

    fn admit(&mut self, request: &HostRequest) -> Result<(), CallLimitReached> {
        self.host_calls += 1;
        if self.host_calls > self.limits.host_calls {
            return Err(CallLimitReached::Host(self.limits.host_calls));
        }
        if matches!(request, HostRequest::CallTool { .. }) {
            self.tool_calls += 1;
            if self.tool_calls > self.limits.tool_calls {
                return Err(CallLimitReached::Tool(self.limits.tool_calls));
            }
        }
        Ok(())
    }
}

/// Checks from outside that a ready worker locked itself down (seccomp filter
/// and `no_new_privs`, read from `/proc`), and says once in the log when the
/// kernel gave it no namespaces of its own.
#[cfg(target_os = "linux")]
fn check_isolation(pid: Option<u32>) -> Result<(), WorkerFault> {
    let Some(pid) = pid else {
        return Err(WorkerFault::Died);
    };
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| WorkerFault::Died)?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
            .unwrap_or("")
            .to_string()
    };
    let (seccomp, no_new_privs) = (field("Seccomp:"), field("NoNewPrivs:"));
    if seccomp != "2" || no_new_privs != "1" {
        return Err(WorkerFault::Spawn(format!(
            "the worker could not lock itself down (seccomp mode {seccomp:?}, no_new_privs {no_new_privs:?}); scripts are not run without the seccomp filter: check that the kernel supports seccomp-bpf"
        )));
    }
    static NAMESPACES_REPORTED: std::sync::Once = std::sync::Once::new();
    let ns = |who: &str| std::fs::read_link(format!("/proc/{who}/ns/net")).ok();
    let separate = ns(&pid.to_string()).is_some_and(|theirs| Some(theirs) != ns("self"));
    NAMESPACES_REPORTED.call_once(|| {
        if separate {
            tracing::info!("sandbox workers run in namespaces of their own (user, mount, network, ipc, uts), under seccomp and resource limits");
        } else {
            tracing::warn!("sandbox workers could not get namespaces of their own (unprivileged user namespaces are off here); they run under seccomp and resource limits only");
        }
    });
    Ok(())
}

/// Elsewhere there is nothing to check.
#[cfg(not(target_os = "linux"))]
fn check_isolation(_pid: Option<u32>) -> Result<(), WorkerFault> {
    Ok(())
}
