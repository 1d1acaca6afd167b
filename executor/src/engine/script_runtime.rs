//! [`ScriptRuntime`]: one fresh, hardened JavaScript runtime per execution.
//! Built ahead of time (creation costs milliseconds), used once, then dropped,
//! so no script can see another's state. It must not be shared or reused.

use std::{
    rc::Rc,
    sync::Arc,
    time::{Duration, Instant},
};

use deno_core::{
    JsRuntime, PollEventLoopOptions, RuntimeOptions,
    error::{CoreErrorKind, JsError},
    futures::FutureExt,
    v8,
};
use serde::Deserialize;

use super::{
    HostBridge,
    engine_error::EngineError,
    ops::{ExecutionState, quiver_script},
    result_json::bounded_result,
    startup_snapshot::{StartFrom, require_bytecode_cache_off, startup_snapshot},
    watchdog::{Cause, TerminationCause, Watchdog},
};
use quiver_contract::{Limits, ScriptError, ScriptErrorKind, ScriptOutcome};

use crate::ipc::ToolNames;

/// The bootstrap: one function body in three files (capture and the script
/// API, hardening, the `tools` namespace), joined in order.
const BOOTSTRAP: &str = concat!(
    include_str!("bootstrap/api.js"),
    include_str!("bootstrap/hardening.js"),
    include_str!("bootstrap/tools.js"),
);
const BOOTSTRAP_NAME: &str = "quiver:bootstrap";
/// The resource name of user code; its stack frames are the ones reported.
const SCRIPT_NAME: &str = "quiver:script";

/// The smallest heap a runtime is given: deno_core and the bootstrap need a
/// few MiB before any user code runs, so a lower `heap_bytes` is raised to this.
pub const MIN_HEAP_BYTES: u64 = 16 * 1024 * 1024;

/// How many runtimes one thread may create. The QuickJS backend keeps a
/// thread-local table of native functions that never shrinks and indexes it
/// with 16 bits, so after roughly 270 runtimes on one thread new ones fail to
/// start; past twice that, calls could reach the wrong function; and runtimes
/// restored from a snapshot stop settling async ops after about 166 on one
/// thread. Create runtimes on short-lived threads (the worker uses one thread
/// per execution).
pub const MAX_RUNTIMES_PER_THREAD: u32 = if cfg!(feature = "v8") { u32::MAX } else { 100 };

/// Counts a runtime against this thread's [`MAX_RUNTIMES_PER_THREAD`].
#[cfg(not(feature = "v8"))]
fn claim_runtime_slot() -> Result<(), EngineError> {
    thread_local! {
        static RUNTIMES_CREATED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    let created = RUNTIMES_CREATED.get();
    if created >= MAX_RUNTIMES_PER_THREAD {
        return Err(EngineError::ThreadExhausted(created));
    }
    RUNTIMES_CREATED.set(created + 1);
    Ok(())
}

/// V8 has no per-thread limit.
#[cfg(feature = "v8")]
fn claim_runtime_slot() -> Result<(), EngineError> {
    Ok(())
}

/// A fresh runtime with the script API installed and the global scope
/// hardened, waiting for exactly one execution.
///
/// ```no_run
/// # async fn demo(bridge: std::sync::Arc<dyn quiver_executor::engine::HostBridge>) {
/// use quiver_contract::Limits;
/// use quiver_executor::engine::ScriptRuntime;
///
/// let limits = Limits::default();
/// let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("runtime"); // ahead of time
/// let outcome = runtime.execute("return 6 * 7", &limits, &Default::default(), bridge).await;
/// assert_eq!(outcome.result, Some(serde_json::json!(42)));
/// # }
/// ```
pub struct ScriptRuntime {
    js: JsRuntime,
    prepare: v8::Global<v8::Function>,
    install: v8::Global<v8::Function>,
    finish: v8::Global<v8::Function>,
    heap_bytes: u64,
    cause: Arc<TerminationCause>,
    used: bool,
    /// Whether [`ScriptRuntime::prepare`] ran.
    prepared: bool,
    /// Started by [`ScriptRuntime::prepare`], armed when the script starts.
    watchdog: Option<Watchdog>,
}

/// How the script's promise ended, as reported by the bootstrap's `finish`.
enum Ending {
    /// `finish` produced its encoded report.
    Reported(String),
    /// Compilation failed, an exception escaped the event loop, or the isolate
    /// was terminated.
    Escaped(Box<JsError>),
    /// The event loop ran dry while the script still awaited something.
    Stalled,
    /// The deadline passed while the script waited on the host or a timer.
    OutOfTime,
    /// The engine itself failed.
    Internal(String),
}

#[derive(Deserialize)]
struct Thrown {
    message: String,
    stack: Option<String>,
}

impl ScriptRuntime {
    /// Builds a runtime whose JavaScript heap is capped at `heap_bytes` (at
    /// least [`MIN_HEAP_BYTES`]), restored from this process's in-memory
    /// startup snapshot. Takes milliseconds: call it before a script is
    /// waiting. At most [`MAX_RUNTIMES_PER_THREAD`] per thread.
    pub fn new(heap_bytes: u64) -> Result<ScriptRuntime, EngineError> {
        ScriptRuntime::build(heap_bytes, StartFrom::Snapshot)
    }

    /// [`ScriptRuntime::new`], choosing where the runtime starts from. Either
    /// way the hardening bootstrap runs on the new runtime before it is handed
    /// out, and nothing is read from or written to disk.
    pub fn build(heap_bytes: u64, start: StartFrom) -> Result<ScriptRuntime, EngineError> {
        require_bytecode_cache_off()?;
        let startup_snapshot = match start {
            StartFrom::Snapshot => Some(startup_snapshot()?),
            StartFrom::Scratch => None,
        };
        claim_runtime_slot()?;
        let heap = heap_bytes.max(MIN_HEAP_BYTES);
        let cap = usize::try_from(heap).unwrap_or(usize::MAX);
        let mut js = JsRuntime::try_new(RuntimeOptions {
            extensions: vec![quiver_script::init()],
            startup_snapshot,
            create_params: Some(v8::CreateParams::default().heap_limits(0, cap)),
            ..Default::default()
        })
        .map_err(|e| EngineError::Create(e.to_string()))?;

        // Engine-level switch first (V8 enforces it inside the engine; the
        // QuickJS backend swaps the globals), then the bootstrap's own measures.
        {
            deno_core::scope!(scope, js);
            scope
                .get_current_context()
                .set_allow_generation_from_strings(false);
        }
        let hooks = js
            .execute_script(BOOTSTRAP_NAME, BOOTSTRAP)
            .map_err(|e| EngineError::Bootstrap(e.exception_message.clone()))?;
        let (prepare, install, finish) = {
            deno_core::scope!(scope, js);
            let hooks = v8::Local::new(scope, hooks);
            let hooks = hooks
                .to_object(scope)
                .ok_or_else(|| EngineError::Bootstrap("it returned no hooks".into()))?;
            (
                hook(scope, hooks, "prepare")?,
                hook(scope, hooks, "install")?,
                hook(scope, hooks, "finish")?,
            )
        };

        let cause = Arc::new(TerminationCause::default());
        // V8 aborts the whole process when a heap is exhausted unless a
        // near-limit callback raises the limit; raise it just enough to unwind
        // and terminate the script. QuickJS enforces its cap by itself: an
        // allocation over it fails and the backend terminates the script.
        #[cfg(feature = "v8")]
        {
            let isolate = js.v8_isolate().thread_safe_handle();
            let cause = cause.clone();
            js.add_near_heap_limit_callback(move |current, _initial| {
                cause.set(Cause::Memory);
                isolate.terminate_execution();
                current.saturating_add(current / 2)
            });
        }

        Ok(ScriptRuntime {
            js,
            prepare,
            install,
            finish,
            heap_bytes: heap,
            cause,
            used: false,
            prepared: false,
            watchdog: None,
        })
    }

    /// Does ahead of the job what does not depend on it: seeds
    /// `Math.random` with fresh entropy, builds the `tools` namespace,
    /// freezes the global scope and starts the watchdog's thread (unarmed).
    /// A forked script process calls it while it waits for its job, so the
    /// job starts with that work done; [`ScriptRuntime::execute`] does it
    /// itself otherwise. Call it in the process (and on the thread) that
    /// will run the script: the seed must be drawn there. Once only; a
    /// second call does nothing.
    pub fn prepare(&mut self) -> Result<(), EngineError> {
        if self.prepared || self.used {
            return Ok(());
        }
        let seed = serde_json::to_string(&random_seed())
            .map_err(|e| EngineError::Bootstrap(e.to_string()))?;
        let seed = self
            .string(&seed)
            .ok_or_else(|| EngineError::Bootstrap("the seed could not be handed over".into()))?;
        match self
            .js
            .call_with_args(&self.prepare, &[seed])
            .now_or_never()
        {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(EngineError::Bootstrap(e.exception_message)),
            None => return Err(EngineError::Bootstrap("preparing did not finish".into())),
        }
        self.prepared = true;
        let isolate = self.js.v8_isolate().thread_safe_handle();
        self.watchdog =
            Some(Watchdog::waiting(isolate, self.cause.clone()).map_err(|e| {
                EngineError::Bootstrap(format!("could not start the watchdog: {e}"))
            })?);
        Ok(())
    }

    /// The heap cap this runtime was built with (after raising to the minimum).
    pub fn heap_bytes(&self) -> u64 {
        self.heap_bytes
    }

    /// Whether this runtime can serve an execution with `limits` (the heap cap
    /// is fixed when a runtime is created).
    pub fn fits(&self, limits: &Limits) -> bool {
        !self.used && self.heap_bytes == limits.heap_bytes.max(MIN_HEAP_BYTES)
    }

    /// Runs `code` as the body of an async function, with the tenant's tools
    /// exposed as `tools.<server>.<tool>(args)` (`names` is what is known of
    /// them up front; the rest is looked up through `bridge` when the script
    /// reaches it), every host request sent through `bridge`, and `limits`
    /// enforced.
    ///
    /// A runtime serves one execution: a second call returns an `internal`
    /// error without running anything. Drop the runtime after reporting the
    /// outcome (dropping takes about a millisecond).
    pub async fn execute(
        &mut self,
        code: &str,
        limits: &Limits,
        names: &ToolNames,
        bridge: Arc<dyn HostBridge>,
    ) -> ScriptOutcome {
        if std::mem::replace(&mut self.used, true) {
            return failed(
                ScriptErrorKind::Internal,
                "this script runtime has already run a script".into(),
                None,
            );
        }
        if code.len() as u64 > limits.code_bytes {
            return failed(
                ScriptErrorKind::Runtime,
                format!(
                    "the script is {} bytes; the limit is {} bytes",
                    code.len(),
                    limits.code_bytes
                ),
                None,
            );
        }
        let execution = Rc::new(ExecutionState::new(bridge, limits, names.clone()));
        self.js.op_state().borrow_mut().put(execution.clone());

        let ending = self.run(code, limits).await;
        let (logs, logs_cut) = execution.take_logs();
        let mut outcome = match ending {
            Ending::Reported(report) => self.reported(&report, limits),
            ending => ScriptOutcome {
                app_views: Vec::new(),
                result: None,
                error: Some(self.failure(ending, limits)),
                logs: Vec::new(),
                truncated: false,
            },
        };
        let over_budget = if execution.tool_limit_hit() {
            Some(ScriptError {
                kind: ScriptErrorKind::ToolCalls,
                message: format!(
                    "the script tried more than {} tool calls; combine work into fewer calls",
                    limits.tool_calls
                ),
                line: None,
            })
        } else if execution.host_limit_hit() {
            Some(ScriptError {
                kind: ScriptErrorKind::HostCalls,
                message: format!(
                    "the script made more than {} host calls (tools, search, describe, stash); combine work into fewer calls",
                    limits.host_calls
                ),
                line: None,
            })
        } else {
            None
        };
        if let Some(error) = over_budget
            && !matches!(outcome.error.as_ref(), Some(e) if matches!(e.kind, ScriptErrorKind::Timeout | ScriptErrorKind::Memory))
        {
            outcome.result = None;
            outcome.error = Some(error);
        }
        outcome.logs = logs;
        outcome.truncated |= logs_cut;
        outcome
    }

    async fn run(&mut self, code: &str, limits: &Limits) -> Ending {
        let config = serde_json::json!({
            "wallMs": limits.wall_ms,
            "logBytes": limits.log_bytes,
            "parallelCalls": limits.parallel_calls.max(1),
            "requestBytes": limits.request_bytes,
            "seed": random_seed(),
        })
        .to_string();
        let Some(config) = self.string(&config) else {
            return Ending::Internal("the script's settings could not be handed over".into());
        };
        match self
            .js
            .call_with_args(&self.install, &[config])
            .now_or_never()
        {
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                return Ending::Internal(format!(
                    "installing the script API failed: {}",
                    e.exception_message
                ));
            }
            None => return Ending::Internal("installing the script API did not finish".into()),
        }

        let deadline = Instant::now() + Duration::from_millis(limits.wall_ms);
        let _watchdog = match self.watchdog.take() {
            Some(watchdog) => {
                watchdog.arm(deadline);
                watchdog
            }
            None => {
                let isolate = self.js.v8_isolate().thread_safe_handle();
                match Watchdog::start(isolate, deadline, self.cause.clone()) {
                    Ok(watchdog) => watchdog,
                    Err(e) => {
                        return Ending::Internal(format!("could not start the watchdog: {e}"));
                    }
                }
            }
        };

        // One line: user line N is line N of the compiled script.
        let source = format!("(async () => {{\"use strict\";{code}\n}})()");
        let pending = match self.js.execute_script(SCRIPT_NAME, source) {
            Ok(pending) => pending,
            Err(error) => return Ending::Escaped(error),
        };
        let report = self.js.call_with_args(&self.finish, &[pending]);
        let settled = tokio::time::timeout_at(
            tokio::time::Instant::from_std(deadline),
            self.js
                .with_event_loop_promise(report, PollEventLoopOptions::default()),
        )
        .await;
        match settled {
            Err(_) => Ending::OutOfTime,
            Ok(Ok(report)) => {
                deno_core::scope!(scope, self.js);
                Ending::Reported(v8::Local::new(scope, report).to_rust_string_lossy(scope))
            }
            Ok(Err(error)) => match *error.0 {
                CoreErrorKind::Js(error) => Ending::Escaped(error),
                CoreErrorKind::PendingPromiseResolution => Ending::Stalled,
                other => Ending::Internal(other.to_string()),
            },
        }
        // `_watchdog` stops here, before anything reads the termination cause.
    }

    fn string(&mut self, text: &str) -> Option<v8::Global<v8::Value>> {
        deno_core::scope!(scope, self.js);
        let local: v8::Local<v8::Value> = v8::String::new(scope, text)?.into();
        Some(v8::Global::new(scope, local))
    }

    /// The outcome of a script that returned or threw normally.
    fn reported(&self, report: &str, limits: &Limits) -> ScriptOutcome {
        let body = report.get(1..).unwrap_or_default();
        let (result, error, truncated) = match report.as_bytes().first() {
            Some(b'r') => match bounded_result(
                body,
                usize::try_from(limits.output_bytes).unwrap_or(usize::MAX),
            ) {
                Ok((value, cut)) => (Some(value), None, cut),
                // serde_json refuses nesting deeper than 128 levels; its own
                // words describe the parser, not the script.
                Err(_) => (
                    None,
                    Some(script_error(
                        ScriptErrorKind::Output,
                        "the result cannot be sent back: it is nested more than 128 levels deep"
                            .into(),
                        None,
                    )),
                    false,
                ),
            },
            Some(b'e') => match serde_json::from_str::<Thrown>(body) {
                Ok(thrown) => {
                    let line = thrown.stack.as_deref().and_then(line_in_stack);
                    (
                        None,
                        Some(script_error(ScriptErrorKind::Runtime, thrown.message, line)),
                        false,
                    )
                }
                Err(_) => (
                    None,
                    Some(internal("the error could not be read back".into())),
                    false,
                ),
            },
            Some(b'x') => {
                let message = serde_json::from_str::<Thrown>(body)
                    .map(|t| t.message)
                    .unwrap_or_else(|_| {
                        "the script's return value cannot be turned into JSON".into()
                    });
                (
                    None,
                    Some(script_error(ScriptErrorKind::Output, message, None)),
                    false,
                )
            }
            _ => (
                None,
                Some(internal("the bootstrap sent an unreadable report".into())),
                false,
            ),
        };
        ScriptOutcome {
            app_views: Vec::new(),
            result,
            error,
            logs: Vec::new(),
            truncated,
        }
    }

    /// Why a script that did not report ended.
    fn failure(&mut self, ending: Ending, limits: &Limits) -> ScriptError {
        let cause = self.cause.get();
        if cause == Some(Cause::Timeout) || matches!(ending, Ending::OutOfTime) {
            return script_error(
                ScriptErrorKind::Timeout,
                format!(
                    "the script ran past its time limit of {} ms",
                    limits.wall_ms
                ),
                None,
            );
        }
        // Terminated without a cause of ours: the engine's own heap cap did it.
        if cause == Some(Cause::Memory) || self.js.v8_isolate().is_execution_terminating() {
            return script_error(
                ScriptErrorKind::Memory,
                format!(
                    "the script used more than its memory limit of {} bytes",
                    self.heap_bytes
                ),
                None,
            );
        }
        match ending {
            Ending::Escaped(error) => {
                let line = error
                    .frames
                    .iter()
                    .find(|frame| frame.file_name.as_deref() == Some(SCRIPT_NAME))
                    .and_then(|frame| frame.line_number)
                    .and_then(|line| u32::try_from(line).ok())
                    .or_else(|| error.stack.as_deref().and_then(line_in_stack));
                script_error(ScriptErrorKind::Runtime, uncaught_message(&error), line)
            }
            Ending::Stalled => script_error(
                ScriptErrorKind::Runtime,
                "the script awaited a promise that can never settle".into(),
                None,
            ),
            Ending::Internal(message) => internal(message),
            Ending::Reported(_) | Ending::OutOfTime => internal("unexpected script ending".into()),
        }
    }
}

/// 128 bits from the operating system for this execution's `Math.random`:
/// drawn here, in the process that runs the script, so two executions started
/// from one prepared runtime never share a sequence.
fn random_seed() -> [u32; 4] {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: the clock still differs between executions.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    [word(0), word(4), word(8), word(12)]
}

fn hook<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    hooks: v8::Local<'s, v8::Object>,
    name: &str,
) -> Result<v8::Global<v8::Function>, EngineError> {
    let key = v8::String::new(scope, name)
        .ok_or_else(|| EngineError::Bootstrap(format!("no key {name}")))?;
    let value = hooks
        .get(scope, key.into())
        .ok_or_else(|| EngineError::Bootstrap(format!("no hook {name}")))?;
    let function = v8::Local::<v8::Function>::try_from(value)
        .map_err(|_| EngineError::Bootstrap(format!("hook {name} is not a function")))?;
    Ok(v8::Global::new(scope, function))
}

/// The exception's text without the engine's "Uncaught" prefixes.
fn uncaught_message(error: &JsError) -> String {
    let message = error.exception_message.as_str();
    let message = message
        .strip_prefix("Uncaught (in promise) ")
        .or_else(|| message.strip_prefix("Uncaught "))
        .unwrap_or(message);
    message.chars().take(4096).collect()
}

/// The line of the innermost user-code frame in a stack trace.
fn line_in_stack(stack: &str) -> Option<u32> {
    let marker = format!("{SCRIPT_NAME}:");
    let at = stack.find(&marker)? + marker.len();
    let digits: &str = &stack[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

fn script_error(kind: ScriptErrorKind, message: String, line: Option<u32>) -> ScriptError {
    ScriptError::new(kind, message, line)
}

fn internal(message: String) -> ScriptError {
    script_error(ScriptErrorKind::Internal, message, None)
}

fn failed(kind: ScriptErrorKind, message: String, line: Option<u32>) -> ScriptOutcome {
    ScriptOutcome {
        app_views: Vec::new(),
        result: None,
        error: Some(script_error(kind, message, line)),
        logs: Vec::new(),
        truncated: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_lines_come_from_the_script_frames() {
        let stack = "Error: boom\n    at f (quiver:bootstrap:120:5)\n    at <anonymous> (quiver:script:7:11)\n";
        assert_eq!(line_in_stack(stack), Some(7));
        assert_eq!(line_in_stack("    at quiver:script:12"), Some(12));
        assert_eq!(line_in_stack("no frames"), None);
    }
}
