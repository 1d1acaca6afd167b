//! Limits enforced by the engine on its own, in-process: tool calls in flight,
//! tool calls per execution, wall time (busy code and a silent host), heap, and
//! code size. The test process must survive every one of them.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::future::{BoxFuture, FutureExt};
use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    ipc::{HostError, HostRequest, ToolNames},
};
use serde_json::{Value, json};

/// A host whose tool calls take `delay`, tracking how many are in flight.
#[derive(Clone, Default)]
struct SlowHost {
    delay: Duration,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
}

impl HostBridge for SlowHost {
    fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        let host = self.clone();
        async move {
            host.calls.fetch_add(1, Ordering::SeqCst);
            let now = host.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            host.max_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(host.delay).await;
            host.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(json!("ok"))
        }
        .boxed()
    }
}

/// A host that never answers.
struct SilentHost;

impl HostBridge for SilentHost {
    fn request(&self, _request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        futures::future::pending().boxed()
    }
}

fn tools() -> BTreeMap<String, Vec<String>> {
    [("slow".to_string(), vec!["op".to_string()])].into()
}

async fn run(code: &str, limits: Limits, host: Arc<dyn HostBridge>) -> ScriptOutcome {
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    runtime
        .execute(code, &limits, &ToolNames::complete(tools()), host)
        .await
}

fn kind(outcome: &ScriptOutcome) -> Option<&str> {
    outcome.error.as_ref().map(|e| e.kind.as_str())
}

#[tokio::test]
async fn promise_all_runs_at_most_parallel_calls_at_once() {
    let host = SlowHost {
        delay: Duration::from_millis(20),
        ..SlowHost::default()
    };
    let limits = Limits {
        parallel_calls: 3,
        ..Limits::default()
    };
    let code = "const all = await Promise.all(Array.from({ length: 20 }, (_, i) => tools.slow.op({ i }))); return all.length;";
    let outcome = run(code, limits, Arc::new(host.clone())).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.result, Some(json!(20)));
    assert_eq!(host.calls.load(Ordering::SeqCst), 20);
    assert_eq!(
        host.max_in_flight.load(Ordering::SeqCst),
        3,
        "the semaphore lets exactly 3 through"
    );
}

#[tokio::test]
async fn the_tool_call_limit_fails_the_execution() {
    let host = SlowHost::default();
    let limits = Limits {
        tool_calls: 5,
        ..Limits::default()
    };
    // The script even catches the refusal; the execution still fails.
    let code = r#"
        const errors = [];
        for (let i = 0; i < 8; i++) {
            try { await tools.slow.op({ i }); } catch (e) { errors.push(e.message); }
        }
        return errors;
    "#;
    let outcome = run(code, limits, Arc::new(host.clone())).await;
    assert_eq!(kind(&outcome), Some("tool_calls"), "{outcome:?}");
    assert_eq!(outcome.result, None);
    assert_eq!(
        host.calls.load(Ordering::SeqCst),
        5,
        "refused calls never reach the host"
    );

    // Other requests are not tool calls.
    let limits = Limits {
        tool_calls: 0,
        ..Limits::default()
    };
    let outcome = run(
        "await search('x'); await stash.keys(); return 1;",
        limits,
        Arc::new(SlowHost::default()),
    )
    .await;
    assert_eq!(outcome.result, Some(json!(1)));
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_wall_limit() {
    let limits = Limits {
        wall_ms: 300,
        ..Limits::default()
    };
    // (code, tool calls it makes before it spins)
    for (code, calls) in [
        ("while (true) {}", 0),
        ("await tools.slow.op(); for (;;) {}", 1),
        (
            "await new Promise((r) => setTimeout(r, 10)); const f = () => { while (true) {} }; f();",
            0,
        ),
    ] {
        let host = SlowHost::default();
        let outcome = run(code, limits, Arc::new(host.clone())).await;
        assert_eq!(kind(&outcome), Some("timeout"), "{code}: {outcome:?}");
        assert_eq!(outcome.result, None, "{code}: {outcome:?}");
        assert_eq!(host.calls.load(Ordering::SeqCst), calls, "{code}");
    }
}

/// A runtime prepared ahead (as a forked script process prepares while it
/// waits for its job) keeps every limit: its watchdog, started unarmed
/// before the job, stops busy code at the job's own limit, counted from when
/// the script starts, not from the preparation; and what preparing set up
/// (the `tools` namespace, the frozen global scope, `Math.random`) is there.
#[tokio::test]
async fn a_runtime_prepared_ahead_keeps_the_time_limit_from_the_scripts_start() {
    let limits = Limits {
        wall_ms: 300,
        ..Limits::default()
    };
    let names = ToolNames::complete(tools());
    // Longer than the limit passes between preparing and the job.
    let prepared_long_ago = || async {
        let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
        runtime.prepare().expect("prepared ahead");
        runtime.prepare().expect("a second prepare does nothing");
        tokio::time::sleep(Duration::from_millis(400)).await;
        runtime
    };
    let mut spinning = prepared_long_ago().await;
    let started = std::time::Instant::now();
    let outcome = spinning
        .execute(
            "while (true) {}",
            &limits,
            &names,
            Arc::new(SlowHost::default()),
        )
        .await;
    assert_eq!(kind(&outcome), Some("timeout"), "{outcome:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the limit counts from the script's start, not from the preparation"
    );

    let outcome = prepared_long_ago()
        .await
        .execute(
            "return [typeof tools, Object.isFrozen(globalThis), Math.random() < 1];",
            &limits,
            &names,
            Arc::new(SlowHost::default()),
        )
        .await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.result, Some(json!(["object", true, true])));
}

#[tokio::test]
async fn a_host_that_never_answers_times_out() {
    let limits = Limits {
        wall_ms: 200,
        ..Limits::default()
    };
    let outcome = run(
        "return await tools.slow.op();",
        limits,
        Arc::new(SilentHost),
    )
    .await;
    assert_eq!(kind(&outcome), Some("timeout"));
}

#[tokio::test]
async fn giant_allocations_fail_the_script_not_the_process() {
    let limits = Limits {
        heap_bytes: 32 * 1024 * 1024,
        ..Limits::default()
    };
    for code in [
        "return 'x'.repeat(1e9).length;",
        "const a = []; for (let i = 0; i < 1e8; i++) a.push(i); return a.length;",
        "return new Array(1e8).fill(0).length;",
        "return new ArrayBuffer(1e9).byteLength;",
        "const keep = []; for (let i = 0; ; i++) keep.push(String(i % 10).repeat(1 << 20));",
        "const keep = []; while (true) keep.push({ a: Math.random(), b: [1, 2, 3] });",
    ] {
        let outcome = run(code, limits, Arc::new(SlowHost::default())).await;
        // QuickJS turns any allocation over the cap into a termination; V8
        // reports over-long strings as a RangeError.
        #[cfg(feature = "quickjs")]
        assert_eq!(kind(&outcome), Some("memory"), "{code}: {outcome:?}");
        #[cfg(not(feature = "quickjs"))]
        assert!(
            matches!(kind(&outcome), Some("memory" | "runtime")),
            "{code}: {outcome:?}"
        );
    }
    // Doubling a string hits the engine's string length cap first (QuickJS
    // concatenates lazily): an ordinary error.
    let outcome = run(
        "let s = 'x'; while (true) s += s;",
        limits,
        Arc::new(SlowHost::default()),
    )
    .await;
    #[cfg(feature = "quickjs")]
    {
        assert_eq!(kind(&outcome), Some("runtime"), "{outcome:?}");
        let message = &outcome.error.as_ref().expect("an error").message;
        assert!(message.contains("string too long"), "{outcome:?}");
    }
    #[cfg(not(feature = "quickjs"))]
    assert!(
        matches!(kind(&outcome), Some("memory" | "runtime")),
        "{outcome:?}"
    );
    // And the next runtime is fine.
    let outcome = run("return 1 + 1;", limits, Arc::new(SlowHost::default())).await;
    assert_eq!(outcome.result, Some(json!(2)));
}

#[tokio::test]
async fn a_caught_out_of_memory_error_still_ends_the_script() {
    let limits = Limits {
        heap_bytes: 32 * 1024 * 1024,
        ..Limits::default()
    };
    let code = "try { 'x'.repeat(1e9); } catch (e) { } return 'survived';";
    let outcome = run(code, limits, Arc::new(SlowHost::default())).await;
    #[cfg(feature = "quickjs")]
    assert_eq!(kind(&outcome), Some("memory"), "{outcome:?}");
    #[cfg(not(feature = "quickjs"))]
    let _ = outcome;
}

#[tokio::test]
async fn code_over_the_size_limit_is_refused() {
    let limits = Limits {
        code_bytes: 10,
        ..Limits::default()
    };
    let outcome = run(
        "return 'far too long';",
        limits,
        Arc::new(SlowHost::default()),
    )
    .await;
    assert_eq!(kind(&outcome), Some("runtime"));
    assert!(outcome.error.unwrap().message.contains("limit is 10 bytes"));
}

#[tokio::test]
async fn runaway_recursion_is_a_script_error() {
    // (code, error kind, what the message says)
    for (code, expected, says) in [
        (
            "function down(n) { return down(n + 1) + 1; } return down(0);",
            "runtime",
            "Maximum call stack size exceeded",
        ),
        (
            "let a = []; for (let i = 0; i < 1e5; i++) a = [a]; return JSON.stringify(a).length;",
            "runtime",
            "Maximum call stack size exceeded",
        ),
        (
            "let a = []; for (let i = 0; i < 1e5; i++) a = [a]; return a;",
            "output",
            "cannot be turned into JSON",
        ),
        (
            "let a = []; for (let i = 0; i < 200; i++) a = [a]; return a;",
            "output",
            "nested more than 128 levels deep",
        ),
    ] {
        let outcome = run(code, Limits::default(), Arc::new(SlowHost::default())).await;
        #[cfg(feature = "quickjs")]
        {
            assert_eq!(kind(&outcome), Some(expected), "{code}: {outcome:?}");
            let message = &outcome.error.as_ref().expect("an error").message;
            assert!(message.contains(says), "{code}: {outcome:?}");
        }
        #[cfg(not(feature = "quickjs"))]
        {
            let _ = (expected, says);
            assert!(
                matches!(kind(&outcome), Some("runtime" | "output")),
                "{code}: {outcome:?}"
            );
        }
    }
}
