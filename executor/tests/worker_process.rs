//! The real worker loop in a real child process on real stdin/stdout, with a
//! cleared environment. There is no `quiver __worker` binary in this crate, so
//! the child is this test executable re-run with `WORKER_CHILD_ENV` set: its
//! `worker_child` test then runs `run_worker()` and exits. Whatever the test
//! harness prints before that is skipped up to the first frame (`Ready`);
//! after it, any stray byte on stdout would break the frame stream.

use std::{collections::BTreeMap, process::Stdio, time::Duration};

use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    engine::BYTECODE_CACHE_OFF,
    ipc::{FrameReader, FrameWriter, HostMessage, HostRequest, ToolNames, WorkerMessage},
    worker::run_worker,
};
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncReadExt},
    process::{ChildStdin, Command},
};

const WORKER_CHILD_ENV: &str = "QUIVER_TEST_WORKER_CHILD";

/// Only does something when started as the child.
#[test]
fn worker_child() {
    if std::env::var_os(WORKER_CHILD_ENV).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let ended = runtime.block_on(run_worker());
    std::process::exit(if ended.is_ok() { 0 } else { 1 });
}

/// Reads and drops bytes up to and including the `Ready` frame.
async fn skip_to_ready(stdout: &mut (impl AsyncRead + Unpin)) -> Vec<u8> {
    let ready = FrameWriterBytes::ready();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = seen.windows(ready.len()).position(|w| w == ready) {
            return seen.split_off(at + ready.len());
        }
        let n = stdout
            .read(&mut chunk)
            .await
            .expect("reading the child's stdout");
        assert!(
            n > 0,
            "the child exited before Ready: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..n]);
    }
}

struct FrameWriterBytes;

impl FrameWriterBytes {
    fn ready() -> Vec<u8> {
        let body = serde_json::to_vec(&WorkerMessage::Ready { forks: false }).unwrap();
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        frame
    }
}

#[tokio::test]
async fn a_worker_process_serves_executions_over_stdio() {
    tracing::info!("--- start the child with an empty environment");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "worker_process::worker_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env_clear()
        .env(WORKER_CHILD_ENV, "1")
        // As the executor starts its workers: the engine's disk cache off.
        .env(BYTECODE_CACHE_OFF.0, BYTECODE_CACHE_OFF.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning the worker child");
    let mut stdout = child.stdout.take().unwrap();
    let stdin: ChildStdin = child.stdin.take().unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(30), skip_to_ready(&mut stdout))
        .await
        .expect("Ready in time");
    let mut reader = FrameReader::new(std::io::Cursor::new(rest).chain(stdout));
    let mut writer = FrameWriter::new(stdin);
    let tools: BTreeMap<_, _> = [("gh".to_string(), vec!["issue".to_string()])].into();

    macro_rules! next {
        () => {
            tokio::time::timeout(
                Duration::from_secs(20),
                reader.read_message::<WorkerMessage>(),
            )
            .await
            .expect("an answer in time")
            .expect("only frames on stdout")
            .expect("the child is alive")
        };
    }
    let done = |message: WorkerMessage| -> ScriptOutcome {
        match message {
            WorkerMessage::Done { outcome } => outcome,
            other => panic!("expected Done, got {other:?}"),
        }
    };

    tracing::info!("--- ping");
    writer.write_message(&HostMessage::Ping).await.unwrap();
    assert_eq!(next!(), WorkerMessage::Pong);

    tracing::info!("--- a tool call round trip");
    let execute = |code: &str, limits: Limits| HostMessage::Execute {
        code: code.into(),
        limits,
        names: ToolNames::complete(tools.clone()),
    };
    writer
        .write_message(&execute(
            "console.log('hi'); return (await tools.gh.issue({ n: 2 })).n * 21;",
            Limits::default(),
        ))
        .await
        .unwrap();
    let WorkerMessage::Request { id, request } = next!() else {
        panic!("expected a request")
    };
    assert_eq!(
        request,
        HostRequest::CallTool {
            name: "gh.issue".into(),
            args: json!({ "n": 2 })
        }
    );
    writer
        .write_message(&HostMessage::Reply {
            id,
            result: Ok(json!({ "n": 2 })),
        })
        .await
        .unwrap();
    let outcome = done(next!());
    assert_eq!(
        (outcome.result, outcome.logs),
        (Some(json!(42)), vec!["hi".to_string()])
    );

    tracing::info!("--- a memory bomb fails the script, not the process");
    for code in [
        "return 'x'.repeat(1e9).length;",
        "const a = []; while (true) a.push([1, 2, 3, 4]);",
    ] {
        writer
            .write_message(&execute(
                code,
                Limits {
                    heap_bytes: 32 << 20,
                    ..Limits::default()
                },
            ))
            .await
            .unwrap();
        let error = done(next!()).error.unwrap();
        // QuickJS turns any allocation over the cap into a termination; V8
        // reports over-long strings as a RangeError.
        #[cfg(feature = "quickjs")]
        assert_eq!(error.kind, "memory", "{code}: {error:?}");
        #[cfg(not(feature = "quickjs"))]
        assert!(
            matches!(error.kind.as_str(), "memory" | "runtime"),
            "{code}: {error:?}"
        );
    }

    tracing::info!("--- a busy script still gets pings answered, then times out");
    // The script signals that it is about to spin: its tool call goes out
    // (async ops start when called) and nothing after it ever yields.
    writer
        .write_message(&execute(
            "tools.gh.issue({}).catch(() => {}); for (;;) {}",
            Limits {
                wall_ms: 1000,
                ..Limits::default()
            },
        ))
        .await
        .unwrap();
    let WorkerMessage::Request { .. } = next!() else {
        panic!("expected the script's signal (a tool call)")
    };
    writer.write_message(&HostMessage::Ping).await.unwrap();
    assert_eq!(next!(), WorkerMessage::Pong);
    assert_eq!(done(next!()).error.unwrap().kind, "timeout");

    tracing::info!("--- still healthy afterwards");
    writer
        .write_message(&execute("return typeof Deno;", Limits::default()))
        .await
        .unwrap();
    assert_eq!(done(next!()).result, Some(json!("undefined")));

    tracing::info!("--- closing stdin ends the process cleanly");
    drop(writer);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
}
