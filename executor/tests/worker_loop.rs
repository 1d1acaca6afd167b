//! The worker main loop over in-memory pipes, driven as the host would drive
//! it: `Ready`, executions with request/reply round trips, `Ping` while idle
//! and while a script is busy, fresh runtimes, and the end of the stream.

use std::{collections::BTreeMap, time::Duration};

use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    ipc::{FrameReader, FrameWriter, HostMessage, HostRequest, ToolNames, WorkerMessage},
    worker::run_worker_on,
};
use serde_json::json;
use tokio::{
    io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf},
    task::JoinHandle,
};

/// The host's end of an in-process worker.
struct Host {
    reader: FrameReader<ReadHalf<DuplexStream>>,
    writer: FrameWriter<WriteHalf<DuplexStream>>,
    worker: JoinHandle<Result<(), quiver_executor::worker::WorkerError>>,
}

impl Host {
    async fn start() -> Host {
        let (host_end, worker_end) = tokio::io::duplex(1 << 16);
        let (worker_in, worker_out) = tokio::io::split(worker_end);
        let worker = tokio::spawn(run_worker_on(worker_in, worker_out));
        let (from_worker, to_worker) = tokio::io::split(host_end);
        let mut host = Host {
            reader: FrameReader::new(from_worker),
            writer: FrameWriter::new(to_worker),
            worker,
        };
        assert_eq!(host.next().await, WorkerMessage::Ready { forks: false });
        host
    }

    async fn send(&mut self, message: HostMessage) {
        self.writer
            .write_message(&message)
            .await
            .expect("writing to the worker");
    }

    async fn next(&mut self) -> WorkerMessage {
        tokio::time::timeout(
            Duration::from_secs(20),
            self.reader.read_message::<WorkerMessage>(),
        )
        .await
        .expect("the worker answers in time")
        .expect("a well-formed frame")
        .expect("the worker is still there")
    }

    async fn execute(&mut self, code: &str, limits: Limits) {
        let tools: BTreeMap<_, _> = [("gh".to_string(), vec!["issue".to_string()])].into();
        self.send(HostMessage::Execute {
            code: code.into(),
            limits,
            names: ToolNames::complete(tools),
        })
        .await;
    }

    async fn done(&mut self) -> ScriptOutcome {
        match self.next().await {
            WorkerMessage::Done { outcome } => outcome,
            other => panic!("expected Done, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn tool_calls_round_trip_as_requests_and_replies() {
    let mut host = Host::start().await;
    host.execute(
        "const [a, b] = await Promise.all([tools.gh.issue({ n: 1 }), tools.call('gh__issue', { n: 2 })]); return a.n + b.n;",
        Limits::default(),
    )
    .await;
    let mut answered = 0;
    let outcome = loop {
        match host.next().await {
            WorkerMessage::Request {
                id,
                request: HostRequest::CallTool { args, .. },
            } => {
                answered += 1;
                host.send(HostMessage::Reply {
                    id,
                    result: Ok(json!({ "n": args["n"].as_i64().unwrap() * 10 })),
                })
                .await;
            }
            WorkerMessage::Done { outcome } => break outcome,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(answered, 2);
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(outcome.result, Some(json!(30)));
}

#[tokio::test]
async fn host_error_replies_reach_the_script() {
    let mut host = Host::start().await;
    host.execute(
        "try { await tools.gh.issue({}); } catch (e) { return e.message; }",
        Limits::default(),
    )
    .await;
    let WorkerMessage::Request { id, .. } = host.next().await else {
        panic!("expected a request")
    };
    host.send(HostMessage::Reply {
        id,
        result: Err("denied by policy".into()),
    })
    .await;
    assert_eq!(host.done().await.result, Some(json!("denied by policy")));
}

#[tokio::test]
async fn pings_are_answered_while_idle_and_while_a_script_spins() {
    let mut host = Host::start().await;
    host.send(HostMessage::Ping).await;
    assert_eq!(host.next().await, WorkerMessage::Pong);

    // The script signals that it is about to spin: its tool call goes out
    // (async ops start when called) and nothing after it ever yields.
    host.execute(
        "tools.gh.issue({}).catch(() => {}); while (true) {}",
        Limits {
            wall_ms: 1500,
            ..Limits::default()
        },
    )
    .await;
    let WorkerMessage::Request { .. } = host.next().await else {
        panic!("expected the script's signal (a tool call)")
    };
    host.send(HostMessage::Ping).await;
    assert_eq!(
        host.next().await,
        WorkerMessage::Pong,
        "the pong comes before the script ends"
    );
    let outcome = host.done().await;
    assert_eq!(outcome.error.unwrap().kind, "timeout");

    host.send(HostMessage::Ping).await;
    assert_eq!(host.next().await, WorkerMessage::Pong);
}

#[tokio::test]
async fn every_execution_gets_a_fresh_runtime_and_late_replies_are_ignored() {
    let mut host = Host::start().await;
    // A script that times out waiting for the host, leaving a request behind.
    host.execute(
        "return await tools.gh.issue({});",
        Limits {
            wall_ms: 200,
            ..Limits::default()
        },
    )
    .await;
    let WorkerMessage::Request { id: abandoned, .. } = host.next().await else {
        panic!("expected a request")
    };
    assert_eq!(host.done().await.error.unwrap().kind, "timeout");

    // Its reply arrives late, during the next execution, and goes nowhere.
    host.execute(
        "const r = await tools.gh.issue({}); return [r, typeof leftover];",
        Limits::default(),
    )
    .await;
    let WorkerMessage::Request { id, .. } = host.next().await else {
        panic!("expected a request")
    };
    assert_ne!(id, abandoned);
    host.send(HostMessage::Reply {
        id: abandoned,
        result: Ok(json!("stale")),
    })
    .await;
    host.send(HostMessage::Reply {
        id,
        result: Ok(json!("fresh")),
    })
    .await;
    assert_eq!(
        host.done().await.result,
        Some(json!(["fresh", "undefined"]))
    );

    // A different heap limit needs a different runtime; it still works.
    host.execute(
        "return 'ok';",
        Limits {
            heap_bytes: 40 * 1024 * 1024,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(host.done().await.result, Some(json!("ok")));
}

#[tokio::test]
async fn the_worker_stops_cleanly_at_end_of_input_and_fails_on_garbage() {
    let host = Host::start().await;
    host.writer.into_inner().shutdown().await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), host.worker)
        .await
        .unwrap()
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");

    let mut host = Host::start().await;
    host.writer
        .write_message(&json!({ "type": "no_such_message" }))
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), host.worker)
        .await
        .unwrap()
        .unwrap();
    let error = format!("{:#}", ended.expect_err("garbage must stop the worker"));
    assert!(error.contains("no_such_message"), "{error}");
}

#[tokio::test]
async fn a_worker_runs_more_scripts_than_one_thread_can_hold_runtimes() {
    // The QuickJS backend caps runtimes per thread; the worker gives every
    // execution its own thread, so it can run far more than that.
    let runs = quiver_executor::engine::MAX_RUNTIMES_PER_THREAD
        .saturating_add(100)
        .min(300);
    let mut host = Host::start().await;
    for i in 0..runs {
        host.execute(&format!("return {i};"), Limits::default())
            .await;
        let outcome = host.done().await;
        assert_eq!(outcome.result, Some(json!(i)), "run {i}: {outcome:?}");
    }
}
