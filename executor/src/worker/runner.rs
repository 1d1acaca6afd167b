//! The worker process's main loop: frames in on stdin, frames out on stdout,
//! and nothing else ever written to stdout. JavaScript runs on a dedicated
//! engine thread (a JS runtime is `!Send`), so `Ping`s and replies are handled
//! even while a script is busy.

use std::collections::BTreeMap;

use anyhow::Context;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::mpsc,
};

use super::{
    host_link::HostLink,
    ipc::{FrameError, FrameReader, FrameWriter},
    protocol::{HostMessage, Limits, Outcome, ScriptError, WorkerMessage},
};
use crate::engine::ScriptRuntime;

/// One `Execute` handed to the engine thread.
struct Job {
    code: String,
    limits: Limits,
    tools: BTreeMap<String, Vec<String>>,
}

/// Runs the worker on this process's stdin/stdout until the host closes stdin.
///
/// Call it from the hidden `__worker` subcommand, in a process whose logs go to
/// stderr (or nowhere): stdout carries frames only.
pub async fn run_worker() -> anyhow::Result<()> {
    run_worker_on(tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`run_worker`] over any pipe pair (tests use in-memory duplex pipes).
///
/// Returns `Ok` when `input` ends cleanly between frames, and an error on a
/// malformed frame or a dead engine thread; the host then replaces the worker.
/// A script still running when `input` ends is abandoned with its thread.
pub async fn run_worker_on<R, W>(input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    let mut writer = FrameWriter::new(output);
    let (outgoing, mut to_host) = mpsc::unbounded_channel();
    let link = HostLink::new(outgoing);
    let (jobs, queued) = mpsc::unbounded_channel();
    {
        let link = link.clone();
        std::thread::Builder::new()
            .name("quiver-js".into())
            .spawn(move || run_engine_thread(queued, link))
            .context("starting the engine thread")?;
    }
    // The engine thread holds the only other sender; once it is gone, so is the
    // engine. Keep ours out of the channel so that can be noticed.
    let host = link.clone();
    drop(link);

    loop {
        tokio::select! {
            // `read_message` is cancel-safe: a frame cut by the other branch
            // stays buffered in the reader.
            message = reader.read_message::<HostMessage>() => {
                match message.context("reading a frame from the host")? {
                    None => return Ok(()),
                    Some(HostMessage::Ping) => {
                        writer.write_message(&WorkerMessage::Pong).await.context("answering a ping")?;
                    }
                    Some(HostMessage::Reply { id, result }) => {
                        if !host.resolve(id, result) {
                            tracing::debug!(id, "reply to a request nobody waits for");
                        }
                    }
                    Some(HostMessage::Execute { code, limits, tools }) => {
                        jobs.send(Job { code, limits, tools })
                            .map_err(|_| anyhow::anyhow!("the engine thread has stopped"))?;
                    }
                }
            }
            message = to_host.recv() => {
                let Some(message) = message else {
                    anyhow::bail!("the engine thread has stopped");
                };
                send_to_host(&mut writer, &host, message).await?;
            }
        }
    }
}

/// Writes one message; a message too large for a frame is replaced by an
/// error the host can act on instead of killing the worker.
async fn send_to_host<W: AsyncWrite + Unpin>(
    writer: &mut FrameWriter<W>,
    host: &HostLink,
    message: WorkerMessage,
) -> anyhow::Result<()> {
    match writer.write_message(&message).await {
        Ok(()) => Ok(()),
        Err(FrameError::TooLarge { len, max }) => match message {
            WorkerMessage::Request { id, .. } => {
                host.resolve(id, Err(format!("the request is {len} bytes; the limit is {max} bytes")));
                Ok(())
            }
            WorkerMessage::Done { outcome } => {
                let outcome = Outcome {
                    result: None,
                    error: Some(ScriptError {
                        kind: "output".into(),
                        message: format!("the outcome is {len} bytes; the worker can send at most {max} bytes"),
                        line: None,
                    }),
                    logs: Vec::new(),
                    truncated: outcome.truncated,
                };
                writer
                    .write_message(&WorkerMessage::Done { outcome })
                    .await
                    .context("writing an outcome")
            }
            _ => Err(FrameError::TooLarge { len, max }).context("writing a frame"),
        },
        Err(e) => Err(e).context("writing a frame to the host"),
    }
}

fn run_engine_thread(jobs: mpsc::UnboundedReceiver<Job>, link: HostLink) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "could not start the engine thread's runtime");
            return;
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve_jobs(jobs, link));
}

/// Builds a runtime, says `Ready`, then for each job: run it in the prepared
/// runtime, report `Done`, and prepare the next runtime before taking another.
async fn serve_jobs(mut jobs: mpsc::UnboundedReceiver<Job>, link: HostLink) {
    let mut next = match ScriptRuntime::new(Limits::default().heap_bytes) {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            // No `Ready`: the host sees the worker exit and does not use it.
            tracing::error!(error = %e, "could not build the first script runtime");
            return;
        }
    };
    if !link.send(WorkerMessage::Ready) {
        return;
    }
    while let Some(job) = jobs.recv().await {
        let prepared = next.take().filter(|runtime| runtime.fits(&job.limits));
        let runtime = match prepared.map(Ok).unwrap_or_else(|| ScriptRuntime::new(job.limits.heap_bytes)) {
            Ok(runtime) => runtime,
            Err(e) => {
                let outcome = Outcome {
                    result: None,
                    error: Some(ScriptError {
                        kind: "internal".into(),
                        message: format!("the worker could not build a script runtime: {e}"),
                        line: None,
                    }),
                    logs: Vec::new(),
                    truncated: false,
                };
                if !link.send(WorkerMessage::Done { outcome }) {
                    return;
                }
                continue;
            }
        };
        let outcome = runtime
            .execute(&job.code, &job.limits, &job.tools, std::sync::Arc::new(link.clone()))
            .await;
        link.abandon_all();
        if !link.send(WorkerMessage::Done { outcome }) {
            return;
        }
        // The next script's runtime is built now, never while it waits.
        next = match ScriptRuntime::new(job.limits.heap_bytes) {
            Ok(runtime) => Some(runtime),
            Err(e) => {
                tracing::warn!(error = %e, "could not prepare the next script runtime");
                None
            }
        };
    }
}
