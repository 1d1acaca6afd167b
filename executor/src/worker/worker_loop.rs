//! The worker process's main loop: frames in on stdin, frames out on stdout,
//! and nothing else ever written to stdout. JavaScript runs on engine threads
//! (a JS runtime is `!Send`), one per execution, so `Ping`s and replies are
//! handled even while a script is busy.

use std::sync::{Arc, mpsc as std_mpsc};

use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{mpsc, oneshot},
};

use super::{
    host_link::HostLink,
    isolation::{self, ForbiddenProbe},
};
use crate::ipc::{FrameError, FrameReader, FrameWriter, HostMessage, ToolNames, WorkerMessage};
use quiver_contract::{Limits, ScriptError, ScriptErrorKind, ScriptOutcome};

use crate::engine::{EngineError, ScriptRuntime};

/// Native stack of an engine thread: well above the 1 MiB the QuickJS backend
/// lets JavaScript recursion use, so a runaway recursion is a script error,
/// never a stack overflow of the worker.
pub(super) const ENGINE_STACK_BYTES: usize = 8 * 1024 * 1024;

/// One `Execute` handed to the engine thread.
pub(super) struct Job {
    pub(super) code: String,
    pub(super) limits: Limits,
    pub(super) names: ToolNames,
}

/// Runs the worker on this process's stdin/stdout until the host closes
/// stdin, locked down (see [`isolation::lock_down`]) once its first runtime
/// is built and before it says `Ready`.
///
/// Call it from the hidden `__worker` subcommand, in a process whose logs go to
/// stderr (or nowhere): stdout carries frames only. Call
/// [`isolation::enter_before_threads`] first, while the process has one thread.
pub async fn run_worker() -> Result<(), WorkerError> {
    run_worker_probing(None).await
}

/// [`run_worker`], attempting `probe` right after the lock-down (the test of
/// the seccomp filter; the probe comes only from the worker's command line).
pub async fn run_worker_probing(probe: Option<ForbiddenProbe>) -> Result<(), WorkerError> {
    run_worker_with(probe, true).await
}

/// [`run_worker_probing`], or without the lock-down at all when `lock_down`
/// is false: only for measuring what it costs (the executor checks every
/// worker from outside and refuses one that is not locked down).
pub async fn run_worker_with(
    probe: Option<ForbiddenProbe>,
    lock_down: bool,
) -> Result<(), WorkerError> {
    serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        lock_down.then_some(LockDown { probe }),
    )
    .await
}

/// [`run_worker`] over any pipe pair, without the OS lock-down (tests run it
/// in-process over in-memory duplex pipes).
///
/// Returns `Ok` when `input` ends cleanly between frames, and an error on a
/// malformed frame or a dead engine thread; the host then replaces the worker.
/// A script still running when `input` ends is abandoned with its thread.
pub async fn run_worker_on<R, W>(input: R, output: W) -> Result<(), WorkerError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    serve(input, output, None).await
}

/// Why a worker stopped serving (the host then replaces it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The thread that runs the engine could not be started.
    #[error("starting the engine supervisor")]
    Supervisor(#[source] std::io::Error),
    /// A frame from the host could not be read (malformed, too large, or the pipe failed).
    #[error("reading a frame from the host: {0}")]
    Read(#[source] FrameError),
    /// A frame could not be written to the host.
    #[error("writing a frame to the host: {0}")]
    Write(#[source] FrameError),
    /// The engine thread is gone: nothing more can run here.
    #[error("the script engine has stopped")]
    EngineStopped,
}

/// The OS lock-down a worker process applies before it says `Ready`.
struct LockDown {
    probe: Option<ForbiddenProbe>,
}

impl LockDown {
    /// Applies it; a worker that cannot lock down says `Ready` anyway and the
    /// host, which checks the process from outside, refuses it with the reason.
    fn apply(&self) {
        if let Err(e) = isolation::lock_down() {
            tracing::error!(error = %e, "the worker could not lock itself down");
            return;
        }
        if let Some(probe) = self.probe {
            let succeeded = probe.attempt();
            std::process::exit(if succeeded {
                isolation::PROBE_SUCCEEDED_EXIT
            } else {
                isolation::PROBE_REFUSED_EXIT
            });
        }
    }
}

async fn serve<R, W>(input: R, output: W, lock_down: Option<LockDown>) -> Result<(), WorkerError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    let mut writer = FrameWriter::new(output);
    let (outgoing, mut to_host) = mpsc::unbounded_channel();
    let link = HostLink::new(outgoing);
    let (jobs, queued) = mpsc::unbounded_channel();
    let (supervisor_gone, mut engine_stopped) = oneshot::channel::<()>();
    {
        let link = link.clone();
        std::thread::Builder::new()
            .name("quiver-js-supervisor".into())
            .spawn(move || {
                supervise(queued, link, lock_down);
                drop(supervisor_gone);
            })
            .map_err(WorkerError::Supervisor)?;
    }
    let host = link;

    // Reading and writing never wait for each other: a large frame being
    // written to the host (a request, an outcome) never stops this worker from
    // reading the host's replies, and the other way round, so two full pipes
    // can never hold each other up.
    let reading = async {
        loop {
            match reader
                .read_message::<HostMessage>()
                .await
                .map_err(WorkerError::Read)?
            {
                None => return Ok(()),
                Some(HostMessage::Ping) => {
                    host.send(WorkerMessage::Pong);
                }
                Some(HostMessage::Reply { id, result }) => {
                    if !host.resolve(id, result) {
                        tracing::debug!(id, "reply to a request nobody waits for");
                    }
                }
                Some(HostMessage::Execute {
                    code,
                    limits,
                    names,
                }) => {
                    jobs.send(Job {
                        code,
                        limits,
                        names,
                    })
                    .map_err(|_| WorkerError::EngineStopped)?;
                }
            }
        }
    };
    let writing = async {
        loop {
            tokio::select! {
                biased;
                message = to_host.recv() => match message {
                    Some(message) => send_to_host(&mut writer, &host, message).await?,
                    None => return Ok(()),
                },
                _ = &mut engine_stopped => {
                    // Flush what it said last (a `Done`, say), then give up:
                    // the host replaces a worker whose engine is gone.
                    while let Ok(message) = to_host.try_recv() {
                        send_to_host(&mut writer, &host, message).await?;
                    }
                    return Err(WorkerError::EngineStopped);
                }
            }
        }
    };
    tokio::select! {
        read = reading => read,
        written = writing => written,
    }
}

/// Writes one message; a message too large for a frame is replaced by an
/// error the host can act on instead of killing the worker.
async fn send_to_host<W: AsyncWrite + Unpin>(
    writer: &mut FrameWriter<W>,
    host: &HostLink,
    message: WorkerMessage,
) -> Result<(), WorkerError> {
    match writer.write_message(&message).await {
        Ok(()) => Ok(()),
        Err(FrameError::TooLarge { len, max }) => match too_large(host, message, len, max)? {
            Some(replacement) => writer
                .write_message(&replacement)
                .await
                .map_err(WorkerError::Write),
            None => Ok(()),
        },
        Err(e) => Err(WorkerError::Write(e)),
    }
}

/// What replaces `message` when it is `len` bytes and a frame holds `max`: a
/// request fails in the script (nothing to send), an outcome becomes an
/// output error; anything else cannot be sent at all.
pub(super) fn too_large(
    host: &HostLink,
    message: WorkerMessage,
    len: usize,
    max: usize,
) -> Result<Option<WorkerMessage>, WorkerError> {
    match message {
        WorkerMessage::Request { id, .. } => {
            host.resolve(
                id,
                Err(format!("the request is {len} bytes; the limit is {max} bytes").into()),
            );
            Ok(None)
        }
        WorkerMessage::Done { outcome } => Ok(Some(WorkerMessage::Done {
            outcome: ScriptOutcome {
                app_views: Vec::new(),
                result: None,
                error: Some(ScriptError {
                    kind: ScriptErrorKind::Output,
                    message: format!(
                        "the outcome is {len} bytes; the worker can send at most {max} bytes"
                    ),
                    line: None,
                }),
                logs: Vec::new(),
                truncated: outcome.truncated,
            },
        })),
        _ => Err(WorkerError::Write(FrameError::TooLarge { len, max })),
    }
}

/// Why an engine thread has no runtime for the next execution. Cloned: a
/// prepared engine remembers what its build said.
#[derive(Debug, Clone, thiserror::Error)]
enum BuildError {
    /// No thread to build it on.
    #[error("could not start an engine thread: {0}")]
    Thread(Arc<std::io::Error>),
    /// The thread went away before saying.
    #[error("the engine thread stopped while building a runtime")]
    ThreadStopped,
    /// No event loop for the engine.
    #[error("could not start the engine's event loop: {0}")]
    EventLoop(Arc<std::io::Error>),
    /// The engine could not build the runtime.
    #[error("could not build a script runtime: {0}")]
    Runtime(Arc<EngineError>),
}

/// An engine thread that has built (or is building) the runtime for the next
/// execution and waits for it. Each execution gets its own thread: the QuickJS
/// backend's per-thread tables only grow, so a thread serves one runtime and
/// exits (see `engine::MAX_RUNTIMES_PER_THREAD`).
struct PreparedEngine {
    heap_bytes: u64,
    built: std_mpsc::Receiver<Result<(), BuildError>>,
    /// What `built` said, once it has.
    outcome_of_build: Option<Result<(), BuildError>>,
    job: std_mpsc::Sender<(Job, std_mpsc::Sender<ScriptOutcome>)>,
    thread: std::thread::JoinHandle<()>,
}

impl PreparedEngine {
    fn spawn(heap_bytes: u64, link: &HostLink) -> Result<PreparedEngine, BuildError> {
        let (built_tx, built) = std_mpsc::channel();
        let (job, job_rx) = std_mpsc::channel();
        let link = link.clone();
        let thread = std::thread::Builder::new()
            .name("quiver-js".into())
            .stack_size(ENGINE_STACK_BYTES)
            .spawn(move || run_engine_thread(heap_bytes, built_tx, job_rx, link))
            .map_err(|e| BuildError::Thread(Arc::new(e)))?;
        Ok(PreparedEngine {
            heap_bytes,
            built,
            outcome_of_build: None,
            job,
            thread,
        })
    }

    /// Waits until its runtime exists (or failed to).
    fn ready(&mut self) -> Result<(), BuildError> {
        let built = &self.built;
        self.outcome_of_build
            .get_or_insert_with(|| built.recv().unwrap_or(Err(BuildError::ThreadStopped)))
            .clone()
    }

    /// Spawns one and waits for its runtime.
    fn spawn_ready(heap_bytes: u64, link: &HostLink) -> Result<PreparedEngine, BuildError> {
        let mut engine = PreparedEngine::spawn(heap_bytes, link)?;
        engine.ready()?;
        Ok(engine)
    }

    /// Runs `job` and waits for its outcome.
    fn run(self, job: Job) -> ScriptOutcome {
        let (outcome_tx, outcome_rx) = std_mpsc::channel();
        let outcome = match self.job.send((job, outcome_tx)) {
            Ok(()) => outcome_rx
                .recv()
                .unwrap_or_else(|_| internal_outcome("the script engine failed".into())),
            Err(_) => {
                internal_outcome("the engine thread stopped before the script started".into())
            }
        };
        // The thread drops its runtime after handing over the outcome; that
        // overlaps with sending `Done`.
        drop(self.job);
        let _ = self.thread;
        outcome
    }
}

pub(super) fn internal_outcome(message: String) -> ScriptOutcome {
    ScriptOutcome {
        app_views: Vec::new(),
        result: None,
        error: Some(ScriptError {
            kind: ScriptErrorKind::Internal,
            message,
            line: None,
        }),
        logs: Vec::new(),
        truncated: false,
    }
}

/// One engine thread: build a runtime, report it built, run at most one job.
fn run_engine_thread(
    heap_bytes: u64,
    built: std_mpsc::Sender<Result<(), BuildError>>,
    jobs: std_mpsc::Receiver<(Job, std_mpsc::Sender<ScriptOutcome>)>,
    link: HostLink,
) {
    let tokio = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(tokio) => tokio,
        Err(e) => {
            let _ = built.send(Err(BuildError::EventLoop(Arc::new(e))));
            return;
        }
    };
    let mut runtime = match ScriptRuntime::new(heap_bytes) {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = built.send(Err(BuildError::Runtime(Arc::new(e))));
            return;
        }
    };
    let _ = built.send(Ok(()));
    let Ok((job, reply)) = jobs.recv() else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(
        &tokio,
        runtime.execute(&job.code, &job.limits, &job.names, Arc::new(link)),
    );
    let _ = reply.send(outcome);
    // The outcome is on its way; what the script allocated goes back to the
    // system, so an idle worker holds only its next runtime.
    drop(runtime);
    drop(local);
    drop(tokio);
    return_freed_memory();
}

/// Hands memory the allocator holds but no longer uses back to the system.
pub(super) fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the C allocator's heaps.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// Builds the first runtime and says `Ready`; then for each job: run it on the
/// prepared engine thread, report `Done`, and start preparing the next runtime
/// right away, so no script waits for one to be built.
fn supervise(mut jobs: mpsc::UnboundedReceiver<Job>, link: HostLink, lock_down: Option<LockDown>) {
    let mut prepared = match PreparedEngine::spawn_ready(Limits::default().heap_bytes, &link) {
        Ok(engine) => Some(Ok(engine)),
        Err(e) => {
            // No `Ready`: the host sees the worker exit and does not use it.
            tracing::error!(error = %e, "could not build the first script runtime");
            return;
        }
    };
    if let Some(lock_down) = lock_down {
        lock_down.apply();
    }
    if !link.send(WorkerMessage::Ready { forks: false }) {
        return;
    }
    while let Some(job) = jobs.blocking_recv() {
        let heap_bytes = job.limits.heap_bytes;
        let reusable = prepared
            .take()
            .and_then(Result::ok)
            .filter(|engine| engine.heap_bytes == heap_bytes)
            .and_then(|mut engine| engine.ready().is_ok().then_some(engine));
        // Wrong heap cap, or it failed: build one for this job now.
        let engine = reusable.map_or_else(|| PreparedEngine::spawn_ready(heap_bytes, &link), Ok);
        let outcome = match engine {
            Ok(engine) => engine.run(job),
            Err(e) => internal_outcome(format!("the worker could not build a script runtime: {e}")),
        };
        // Requests of this execution can no longer be answered usefully.
        link.abandon_all();
        if !link.send(WorkerMessage::Done { outcome }) {
            return;
        }
        prepared = Some(PreparedEngine::spawn(heap_bytes, &link));
    }
}
