//! The forking worker: one prepared, hardened runtime that no script ever
//! runs in, and a fresh process forked from it for every execution.
//!
//! Building a hardened runtime costs milliseconds of CPU (restoring the
//! startup snapshot, then the hardening bootstrap); forking a process that
//! holds one costs a fraction of that. So the worker builds its runtime once,
//! locks itself down, and for each `Execute` forks: the child is a copy of a
//! runtime no script has touched, runs the one script, reports and exits; the
//! parent's copy stays pristine for the next fork. While idle, the worker
//! forks the next execution's process ahead: it locks itself down,
//! starts its threads and does the part of the runtime's set-up that does not
//! depend on the job ([`ScriptRuntime::prepare`]: the random seed, the
//! `tools` namespace, the frozen global scope), then waits for its job (the
//! first frame on its pipe). So an execution waits for none of that, and one
//! that died waiting is replaced by a fresh fork.
//! Nothing a script does
//! (globals, prototypes, timers, pending promises, memory, the engine's own
//! hidden state) can outlive its process, and an engine crash costs one
//! execution, not the worker.
//!
//! The parent owns stdin and stdout (the worker protocol, [`crate::ipc`]):
//! it answers `Ping`s itself and relays frames between the host and the
//! running child over a pipe pair of the child's own. Each child numbers its
//! requests in a range of its own, and only replies in that range reach it.
//! The parent kills a child that runs past its wall limit (plus a grace the
//! child's own watchdog should never need) and reports a child that ends
//! without an outcome.
//!
//! Forking is only safe from a single-threaded process, so the parent never
//! starts a thread; where the engine keeps threads of its own (V8) or the
//! platform is not Linux, [`serve_forking`] declines before saying `Ready`
//! and the caller runs the threaded worker instead.

use std::{
    collections::VecDeque,
    fs::File,
    io::{Read, Write},
    mem::ManuallyDrop,
    ops::Range,
    os::fd::{AsRawFd, FromRawFd},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::{Bytes, BytesMut};
use nix::libc;
use quiver_contract::{Limits, ScriptError, ScriptErrorKind, ScriptOutcome};

use super::{
    host_link::HostLink,
    isolation::{self, ForbiddenProbe},
    worker_loop::{Job, internal_outcome, too_large},
};
use crate::{
    engine::{MIN_HEAP_BYTES, ScriptRuntime},
    ipc::{FrameDecoder, FrameError, HostMessage, WorkerMessage},
};

/// How long past its wall limit a script's process may run before the
/// worker kills it: its own watchdog ends it at the limit, so this is the
/// backstop for native code that never checks the watchdog's interrupt. It
/// is shorter than the host's grace, so the worker survives the kill.
const KILL_GRACE: Duration = Duration::from_millis(150);

/// How long a child that has reported may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// How often exited children are looked for while any is left to reap.
const REAP_INTERVAL: Duration = Duration::from_millis(50);

/// Request ids of one execution: execution `n` numbers its requests from
/// `n * IDS_PER_EXECUTION + 1`.
const IDS_PER_EXECUTION: u64 = 1 << 32;

/// How much is read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// The body of every `Done` frame starts with this (the message's tag is
/// its first field).
const DONE_PREFIX: &[u8] = br#"{"type":"done""#;

/// Just enough of a host frame to route it: a reply goes to the child
/// whose request it answers without its result being built here (the child
/// parses it), which matters for large tool results.
#[derive(serde::Deserialize)]
struct Route {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<u64>,
}

impl Route {
    fn reply_id(&self) -> Option<u64> {
        (self.kind == "reply").then_some(self.id).flatten()
    }
}

/// Why the forking worker stopped, or declined to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkingError {
    /// Forking is not safe or not possible here; nothing was said to the
    /// host, and the threaded worker can serve instead.
    #[error("a forking worker cannot run here: {0}")]
    Unavailable(String),
    /// The runtime every execution starts from could not be built.
    #[error("building the prepared runtime: {0}")]
    Build(String),
    /// The host's pipe failed or sent something that is not a frame.
    #[error("talking to the host: {0}")]
    Host(#[source] FrameError),
    /// A process for an execution could not be started.
    #[error("starting a script process: {0}")]
    Fork(#[source] std::io::Error),
}

/// Runs the forking worker on this process's stdin/stdout until the host
/// closes stdin. Call it on the main thread of a process that has no other
/// thread, after [`isolation::enter_before_threads`]. With `lock_down`, the
/// worker applies [`isolation::lock_down_forking`] before `Ready` and every
/// script process [`isolation::lock_down_script_process`] before its script;
/// `probe` is then attempted in a script process, and the worker ends as
/// that process did (the test of the filter).
///
/// Returns [`ForkingError::Unavailable`] (having said nothing to the host)
/// when the process is not single-threaded or the platform cannot fork.
pub fn serve_forking(probe: Option<ForbiddenProbe>, lock_down: bool) -> Result<(), ForkingError> {
    if !cfg!(target_os = "linux") {
        return Err(ForkingError::Unavailable("only on Linux".into()));
    }
    // Time only: an I/O driver would hold an epoll instance every child shares.
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| ForkingError::Build(format!("an event loop: {e}")))?;
    let heap_bytes = Limits::default().heap_bytes.max(MIN_HEAP_BYTES);
    let runtime = ScriptRuntime::new(heap_bytes).map_err(|e| ForkingError::Build(e.to_string()))?;
    match thread_count() {
        Some(1) => {}
        Some(n) => {
            return Err(ForkingError::Unavailable(format!(
                "the engine left {n} threads running"
            )));
        }
        None => return Err(ForkingError::Unavailable("cannot count threads".into())),
    }
    super::worker_loop::return_freed_memory();
    let mut worker = Forking {
        tokio,
        runtime,
        lock_down,
        decoder: FrameDecoder::default(),
        // SAFETY: fds 0 and 1 are this process's stdin and stdout for its
        // whole life; ManuallyDrop never closes them.
        stdin: ManuallyDrop::new(unsafe { File::from_raw_fd(0) }),
        // SAFETY: as above, for fd 1.
        stdout: ManuallyDrop::new(unsafe { File::from_raw_fd(1) }),
        executions: 0,
        finished: Vec::new(),
        spare: None,
    };
    if lock_down {
        if let Err(e) = isolation::lock_down_forking() {
            // Say `Ready` anyway: the host checks from outside and refuses us.
            tracing::error!(error = %e, "the worker could not lock itself down");
        } else if let Some(probe) = probe {
            worker.probe(probe);
        }
    }
    worker.send(&WorkerMessage::Ready { forks: true })?;
    worker.serve()
}

/// Threads of this process, from `/proc` (read before the lock-down).
fn thread_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/task")
        .ok()
        .map(|tasks| tasks.count())
}

/// An execution running in a child process.
struct Running {
    pid: libc::pid_t,
    /// Replies from the host go here.
    to_child: File,
    /// Frames from the child come from here.
    from_child: File,
    /// Bytes from the child not yet forwarded as whole frames.
    buffered: BytesMut,
    /// The ids its requests use.
    ids: Range<u64>,
    wall_ms: u64,
    kill_at: Instant,
}

struct Forking {
    tokio: tokio::runtime::Runtime,
    /// Never runs a script here: each child runs its own copy.
    runtime: ScriptRuntime,
    lock_down: bool,
    decoder: FrameDecoder,
    stdin: ManuallyDrop<File>,
    stdout: ManuallyDrop<File>,
    executions: u64,
    /// Children that have reported and are exiting, to be reaped, and when
    /// they reported.
    finished: Vec<(libc::pid_t, Instant)>,
    /// A process forked (and locked down) while the worker was idle, waiting
    /// for its job, so an execution does not wait for a fork.
    spare: Option<Spare>,
}

/// An `Execute` waiting for the running child to finish.
struct Queued {
    wall_ms: u64,
    /// The host's frame body, which the child parses.
    body: Bytes,
}

/// A forked process that has not been given its job yet.
struct Spare {
    pid: libc::pid_t,
    to_child: File,
    from_child: File,
    ids: Range<u64>,
}

/// What one pass of the loop saw.
enum Event {
    HostBytes(Bytes),
    HostClosed,
    ChildBytes(Bytes),
    ChildClosed,
    Deadline,
    /// Nothing to act on (an interrupted wait, a spurious wake-up).
    Idle,
}

impl Forking {
    fn send(&mut self, message: &WorkerMessage) -> Result<(), ForkingError> {
        let frame = self.decoder.encode(message).map_err(ForkingError::Host)?;
        self.stdout
            .write_all(&frame)
            .map_err(|e| ForkingError::Host(FrameError::Io(e)))
    }

    fn serve(mut self) -> Result<(), ForkingError> {
        let mut from_host = BytesMut::new();
        let mut queued: VecDeque<Queued> = VecDeque::new();
        let mut running: Option<Running> = None;
        let mut host_open = true;
        loop {
            self.reap();
            if running.is_none() {
                if let Some(job) = queued.pop_front() {
                    running = Some(self.start(job)?);
                } else if host_open && self.spare.is_none() {
                    // Idle: have the next execution's process ready. Not
                    // while a script runs: on a machine of few cores its
                    // set-up would take the running script's time.
                    self.spare = self.fork_spare().ok();
                }
            }
            if !host_open {
                // The host is gone: what still runs can report to nobody.
                if let Some(child) = running.take() {
                    stop(child.pid);
                }
                if let Some(spare) = self.spare.take() {
                    stop(spare.pid);
                }
                return Ok(());
            }
            match self.wait(running.as_mut())? {
                Event::HostClosed => host_open = false,
                Event::HostBytes(bytes) => {
                    from_host.extend_from_slice(&bytes);
                    while let Some(body) = self
                        .decoder
                        .decode(&mut from_host)
                        .map_err(ForkingError::Host)?
                    {
                        let route: Route = serde_json::from_slice(&body)
                            .map_err(|e| ForkingError::Host(FrameError::Json(e)))?;
                        if let Some(id) = route.reply_id() {
                            match running.as_mut() {
                                Some(child) if child.ids.contains(&id) => {
                                    // A child that stopped reading is dying:
                                    // its end shows up as `ChildClosed`.
                                    let _ = child.to_child.write_all(&frame_of(&body));
                                }
                                _ => tracing::debug!(id, "reply to a request nobody waits for"),
                            }
                            continue;
                        }
                        let message: HostMessage = serde_json::from_slice(&body)
                            .map_err(|e| ForkingError::Host(FrameError::Json(e)))?;
                        match message {
                            HostMessage::Ping => self.send(&WorkerMessage::Pong)?,
                            HostMessage::Execute { limits, .. } => queued.push_back(Queued {
                                wall_ms: limits.wall_ms,
                                body,
                            }),
                            // Routed above; the child parses it.
                            HostMessage::Reply { .. } => {}
                        }
                    }
                }
                Event::Idle => {}
                Event::ChildBytes(bytes) => {
                    let Some(child) = running.as_mut() else {
                        continue;
                    };
                    child.buffered.extend_from_slice(&bytes);
                    let mut done = false;
                    while let Some(body) = self
                        .decoder
                        .decode(&mut child.buffered)
                        .map_err(ForkingError::Host)?
                    {
                        done |= body.starts_with(DONE_PREFIX);
                        self.stdout
                            .write_all(&frame_of(&body))
                            .map_err(|e| ForkingError::Host(FrameError::Io(e)))?;
                        if done {
                            break;
                        }
                    }
                    if done && let Some(child) = running.take() {
                        self.finished.push((child.pid, Instant::now()));
                    }
                }
                Event::ChildClosed => {
                    if let Some(child) = running.take() {
                        let outcome = ended_without_outcome(stop(child.pid));
                        self.send(&WorkerMessage::Done { outcome })?;
                    }
                }
                Event::Deadline => {
                    if let Some(child) = running.take() {
                        stop(child.pid);
                        let outcome = timed_out(child.wall_ms);
                        self.send(&WorkerMessage::Done { outcome })?;
                    }
                }
            }
        }
    }

    /// Waits for bytes from the host or the child, or the child's deadline.
    fn wait(&mut self, child: Option<&mut Running>) -> Result<Event, ForkingError> {
        let mut timeout_ms = child.as_ref().map_or(-1, |child| {
            let left = child.kill_at.saturating_duration_since(Instant::now());
            i32::try_from(left.as_millis().saturating_add(1)).unwrap_or(i32::MAX)
        });
        if !self.finished.is_empty() {
            // Come back to reap them.
            let reap_ms = REAP_INTERVAL.as_millis() as i32;
            timeout_ms = if timeout_ms < 0 {
                reap_ms
            } else {
                timeout_ms.min(reap_ms)
            };
        }
        let mut fds = [
            libc::pollfd {
                fd: self.stdin.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: child.as_ref().map_or(-1, |c| c.from_child.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd; a negative fd is ignored.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                return Ok(Event::Idle);
            }
            return Err(ForkingError::Host(FrameError::Io(error)));
        }
        let readable =
            |fd: &libc::pollfd| fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        // The child first: its `Done` should not wait behind host frames.
        if let Some(child) = child {
            if readable(&fds[1]) {
                return Ok(match read_some(&mut child.from_child) {
                    Ok(bytes) if !bytes.is_empty() => Event::ChildBytes(bytes),
                    _ => Event::ChildClosed,
                });
            }
            if readable(&fds[0]) {
                return host_event(&mut self.stdin);
            }
            if Instant::now() >= child.kill_at {
                return Ok(Event::Deadline);
            }
            return Ok(Event::Idle);
        }
        if readable(&fds[0]) {
            return host_event(&mut self.stdin);
        }
        Ok(Event::Idle)
    }

    /// Hands `job` to the spare process, or to one forked now when there is
    /// none or it died waiting.
    fn start(&mut self, job: Queued) -> Result<Running, ForkingError> {
        let frame = frame_of(&job.body);
        let mut spare = self.spare.take();
        for _ in 0..2 {
            let mut child = match spare.take() {
                Some(child) => child,
                None => match self.fork_spare() {
                    Ok(child) => child,
                    Err(e) => return self.cannot_start(e),
                },
            };
            if child.to_child.write_all(&frame).is_ok() {
                return Ok(Running {
                    pid: child.pid,
                    to_child: child.to_child,
                    from_child: child.from_child,
                    buffered: BytesMut::new(),
                    ids: child.ids,
                    wall_ms: job.wall_ms,
                    kill_at: Instant::now() + Duration::from_millis(job.wall_ms) + KILL_GRACE,
                });
            }
            // It died before its job arrived (killed from outside): the
            // next attempt forks a fresh one.
            stop(child.pid);
        }
        self.cannot_start(std::io::Error::other(
            "two script processes in a row died before their job reached them",
        ))
    }

    /// Forks a process that locks itself down and waits for its job (the
    /// first frame on its replies pipe).
    fn fork_spare(&mut self) -> std::io::Result<Spare> {
        self.executions += 1;
        let first_id = self.executions.saturating_mul(IDS_PER_EXECUTION) + 1;
        let ids = first_id..first_id.saturating_add(IDS_PER_EXECUTION - 1);
        let (replies_read, replies_write) = pipe()?;
        let (frames_read, frames_write) = pipe()?;
        // SAFETY: this process has one thread (checked before `Ready`, and it
        // never starts one), so the child inherits a consistent state.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            drop(replies_write);
            drop(frames_read);
            // SAFETY: the child must not touch the host's pipes: only its
            // parent speaks to the host.
            unsafe {
                libc::close(0);
                libc::close(1);
            }
            run_child(
                &mut self.runtime,
                &self.tokio,
                replies_read,
                frames_write,
                first_id,
                self.lock_down,
            );
        }
        Ok(Spare {
            pid,
            to_child: replies_write,
            from_child: frames_read,
            ids,
        })
    }

    /// Reports that the job's process could not be started, then stops: the
    /// host replaces a worker that cannot start processes.
    fn cannot_start(&mut self, e: std::io::Error) -> Result<Running, ForkingError> {
        let outcome = internal_outcome(format!(
            "the worker could not start the script's process: {e}"
        ));
        self.send(&WorkerMessage::Done { outcome })?;
        Err(ForkingError::Fork(e))
    }

    /// Reaps children that reported and exited; one still there long after
    /// its report is killed.
    fn reap(&mut self) {
        self.finished.retain(|&(pid, reported)| {
            let mut status = 0;
            // SAFETY: waits on a child of ours without blocking.
            let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if reaped == 0 && reported.elapsed() > EXIT_GRACE {
                stop(pid);
                return false;
            }
            reaped == 0
        });
    }

    /// Attempts `probe` in a script process and ends this process as it ended.
    fn probe(&mut self, probe: ForbiddenProbe) -> ! {
        // SAFETY: single-threaded (see `start`).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            if isolation::lock_down_script_process().is_err() {
                // SAFETY: ends the child at once.
                unsafe { libc::_exit(isolation::PROBE_REFUSED_EXIT + 10) };
            }
            let succeeded = probe.attempt();
            // SAFETY: as above.
            unsafe {
                libc::_exit(if succeeded {
                    isolation::PROBE_SUCCEEDED_EXIT
                } else {
                    isolation::PROBE_REFUSED_EXIT
                })
            };
        }
        let mut status = 0;
        // SAFETY: waits for the child just started.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if libc::WIFSIGNALED(status) {
            // SAFETY: ends this process with the child's signal.
            unsafe {
                libc::kill(libc::getpid(), libc::WTERMSIG(status));
            }
        }
        std::process::exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            1
        })
    }
}

fn host_event(stdin: &mut File) -> Result<Event, ForkingError> {
    match read_some(stdin) {
        Ok(bytes) if bytes.is_empty() => Ok(Event::HostClosed),
        Ok(bytes) => Ok(Event::HostBytes(bytes)),
        Err(e) => Err(ForkingError::Host(FrameError::Io(e))),
    }
}

fn read_some(file: &mut File) -> std::io::Result<Bytes> {
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        match file.read(&mut chunk) {
            Ok(n) => {
                chunk.truncate(n);
                return Ok(Bytes::from(chunk));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The child's job: the `Execute` frame its parent writes first. `None`
/// when the pipe closes first or sends something else. Bytes after the
/// frame stay in `buffered`.
fn read_job(replies: &mut File, buffered: &mut BytesMut) -> Option<Job> {
    let decoder = FrameDecoder::default();
    loop {
        if let Some(body) = decoder.decode(buffered).ok()? {
            return match serde_json::from_slice(&body).ok()? {
                HostMessage::Execute {
                    code,
                    limits,
                    names,
                } => Some(Job {
                    code,
                    limits,
                    names,
                }),
                _ => None,
            };
        }
        match read_some(replies) {
            Ok(bytes) if !bytes.is_empty() => buffered.extend_from_slice(&bytes),
            _ => return None,
        }
    }
}

/// A frame (length prefix and body) around `body`.
fn frame_of(body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(body);
    frame
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> std::io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Kills a child (if it still runs) and reaps it; its wait status.
fn stop(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: `pid` is our unreaped child, so the id cannot have been reused.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    status
}

fn ended_without_outcome(status: i32) -> ScriptOutcome {
    let how = if libc::WIFSIGNALED(status) {
        match libc::WTERMSIG(status) {
            libc::SIGSYS => "was killed for a forbidden system call".to_string(),
            libc::SIGKILL => "was killed (out of memory, or stopped)".to_string(),
            signal => format!("crashed (signal {signal})"),
        }
    } else {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    };
    internal_outcome(format!(
        "the script's process {how} before reporting; the worker goes on serving"
    ))
}

fn timed_out(wall_ms: u64) -> ScriptOutcome {
    ScriptOutcome {
        app_views: Vec::new(),
        result: None,
        error: Some(ScriptError::new(
            ScriptErrorKind::Timeout,
            format!("the script ran past its time limit of {wall_ms} ms"),
            None,
        )),
        logs: Vec::new(),
        truncated: false,
    }
}

/// The child: locks down, starts its I/O threads and prepares its copy of
/// the runtime ([`ScriptRuntime::prepare`]) before it waits for its job (the
/// first frame on `replies`), then runs it on that copy (or on a new
/// runtime when the job wants another heap cap), reports, exits.
fn run_child(
    runtime: &mut ScriptRuntime,
    tokio: &tokio::runtime::Runtime,
    replies: File,
    frames: File,
    first_id: u64,
    lock_down: bool,
) -> ! {
    if lock_down && let Err(e) = isolation::lock_down_script_process() {
        tracing::error!(error = %e, "a script process could not lock itself down");
        // SAFETY: ends the child; the parent reports the missing outcome.
        unsafe { libc::_exit(1) };
    }
    let (outgoing, mut to_host) = tokio::sync::mpsc::unbounded_channel();
    let link = HostLink::numbering_from(outgoing, first_id);
    let writer = {
        let link = link.clone();
        let mut frames = frames;
        std::thread::Builder::new()
            .name("quiver-js-out".into())
            .spawn(move || {
                let decoder = FrameDecoder::default();
                while let Some(message) = to_host.blocking_recv() {
                    let last = matches!(message, WorkerMessage::Done { .. });
                    let frame = match decoder.encode(&message) {
                        Ok(frame) => frame,
                        Err(FrameError::TooLarge { len, max }) => {
                            match too_large(&link, message, len, max) {
                                Ok(Some(replacement)) => match decoder.encode(&replacement) {
                                    Ok(frame) => frame,
                                    Err(_) => return,
                                },
                                Ok(None) => continue,
                                Err(_) => return,
                            }
                        }
                        Err(_) => return,
                    };
                    if frames.write_all(&frame).is_err() || last {
                        return;
                    }
                }
            })
    };
    let Ok(writer) = writer else {
        // SAFETY: as above.
        unsafe { libc::_exit(1) };
    };
    // The replies reader starts now and waits for the pipe: this thread
    // reads the job itself (one wake-up between the job and the script, not
    // two), then hands the pipe over.
    let (hand_over, handed) = std::sync::mpsc::sync_channel::<(File, BytesMut)>(1);
    {
        let link = link.clone();
        let spawned = std::thread::Builder::new()
            .name("quiver-js-in".into())
            .spawn(move || {
                let Ok((mut replies, mut buffered)) = handed.recv() else {
                    return;
                };
                let decoder = FrameDecoder::default();
                loop {
                    while let Ok(Some(body)) = decoder.decode(&mut buffered) {
                        if let Ok(HostMessage::Reply { id, result }) = serde_json::from_slice(&body)
                        {
                            link.resolve(id, result);
                        }
                    }
                    match read_some(&mut replies) {
                        Ok(bytes) if !bytes.is_empty() => buffered.extend_from_slice(&bytes),
                        _ => return,
                    }
                }
            });
        if spawned.is_err() {
            // SAFETY: as above.
            unsafe { libc::_exit(1) };
        }
    }
    // While no job is here yet. A copy that cannot be prepared is prepared
    // by `execute` itself, which reports what fails.
    if let Err(e) = runtime.prepare() {
        tracing::debug!(error = %e, "preparing the script runtime ahead failed");
    }
    let mut replies = replies;
    let mut buffered = BytesMut::new();
    let Some(job) = read_job(&mut replies, &mut buffered) else {
        // The worker is gone or stopped us before a job came: nothing ran.
        // SAFETY: ends the child without running destructors.
        unsafe { libc::_exit(0) };
    };
    if hand_over.send((replies, buffered)).is_err() {
        // SAFETY: as above (the reader is gone: no reply could reach us).
        unsafe { libc::_exit(1) };
    }
    let bridge = Arc::new(link.clone());
    let local = tokio::task::LocalSet::new();
    let outcome = if runtime.fits(&job.limits) {
        local.block_on(
            tokio,
            runtime.execute(&job.code, &job.limits, &job.names, bridge),
        )
    } else {
        match ScriptRuntime::new(job.limits.heap_bytes) {
            Ok(mut own) => local.block_on(
                tokio,
                own.execute(&job.code, &job.limits, &job.names, bridge),
            ),
            Err(e) => internal_outcome(format!("the worker could not build a script runtime: {e}")),
        }
    };
    link.abandon_all();
    link.send(WorkerMessage::Done { outcome });
    let _ = writer.join();
    // SAFETY: ends the child without unwinding or running destructors: the
    // runtime is a copy nobody will use again.
    unsafe { libc::_exit(0) }
}
