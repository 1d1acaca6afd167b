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
    sync::Semaphore,
};

use crate::{
    engine::BYTECODE_CACHE_OFF,
    script::{ScriptContext, StashOp},
    worker::{
        ipc::{FrameReader, FrameWriter},
        protocol::{HostMessage, HostRequest, Limits, Outcome, ScriptError, WorkerMessage},
    },
};

/// How long past its wall limit a worker may take to report before it is killed.
const DEADLINE_GRACE: Duration = Duration::from_millis(1500);
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
}

/// A running worker process, killed on drop.
pub struct WorkerProcess {
    child: Child,
    reader: FrameReader<ChildStdout>,
    writer: FrameWriter<ChildStdin>,
    uses: u32,
    idle_since: Instant,
}

impl WorkerProcess {
    /// Starts a worker with an empty environment and waits until it is ready.
    pub async fn spawn(command: &WorkerCommand) -> Result<WorkerProcess, WorkerFault> {
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
        let stdin = child.stdin.take().ok_or(WorkerFault::Died)?;
        let stdout = child.stdout.take().ok_or(WorkerFault::Died)?;
        let mut worker = WorkerProcess {
            child,
            reader: FrameReader::new(stdout),
            writer: FrameWriter::new(stdin),
            uses: 0,
            idle_since: Instant::now(),
        };
        match tokio::time::timeout(START_TIMEOUT, worker.reader.read_message::<WorkerMessage>())
            .await
        {
            Ok(Ok(Some(WorkerMessage::Ready))) => Ok(worker),
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
    /// with the tool-call limits enforced here too.
    pub async fn run(
        &mut self,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
    ) -> Result<Outcome, WorkerFault> {
        self.uses += 1;
        let execute = HostMessage::Execute {
            code: code.to_string(),
            limits,
            tools: context.tool_names(),
        };
        self.writer
            .write_message(&execute)
            .await
            .map_err(|_| WorkerFault::Died)?;
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(limits.wall_ms) + DEADLINE_GRACE;
        let parallel = Arc::new(Semaphore::new(limits.parallel_calls.max(1) as usize));
        let mut tool_calls = 0u32;
        let mut pending = FuturesUnordered::new();
        let result = loop {
            tokio::select! {
                message = self.reader.read_message::<WorkerMessage>() => match message {
                    Ok(Some(WorkerMessage::Request { id, request })) => {
                        if matches!(request, HostRequest::CallTool { .. }) {
                            tool_calls += 1;
                            if tool_calls > limits.tool_calls {
                                let refusal = HostMessage::Reply {
                                    id,
                                    result: Err(format!("tool call limit reached: at most {} calls per execution", limits.tool_calls)),
                                };
                                self.writer.write_message(&refusal).await.map_err(|_| WorkerFault::Died)?;
                                continue;
                            }
                        }
                        let context = context.clone();
                        let parallel = parallel.clone();
                        pending.push(async move {
                            let _permit = parallel.acquire_owned().await;
                            (id, answer(context.as_ref(), request).await)
                        });
                    }
                    Ok(Some(WorkerMessage::Done { outcome })) => break Ok(outcome),
                    Ok(Some(WorkerMessage::Ready | WorkerMessage::Pong)) => {}
                    Ok(None) => break Err(WorkerFault::Died),
                    Err(e) => break Err(WorkerFault::Protocol(e.to_string())),
                },
                Some((id, result)) = pending.next(), if !pending.is_empty() => {
                    self.writer.write_message(&HostMessage::Reply { id, result }).await.map_err(|_| WorkerFault::Died)?;
                }
                () = tokio::time::sleep_until(deadline) => break Err(WorkerFault::Overran),
            }
        };
        self.idle_since = Instant::now();
        if result.is_err() {
            let _ = self.child.start_kill();
        }
        result
    }

    /// Whether the worker should not run anything else after `outcome`.
    pub fn in_doubt_after(outcome: &Outcome) -> bool {
        matches!(&outcome.error, Some(ScriptError { kind, .. }) if kind == "timeout" || kind == "memory" || kind == "internal")
    }
}

async fn answer(context: &dyn ScriptContext, request: HostRequest) -> Result<Value, String> {
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
    }
}
