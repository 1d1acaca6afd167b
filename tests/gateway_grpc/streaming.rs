//! Streaming and cancellation through the gateway: tool progress while a
//! script runs, and cancelled calls and executions reaching the upstream and
//! the sandbox.

use super::*;

/// `quiver dev` (no auth) with one upstream `w`: the weather mock with the
/// test hooks (rendezvous, sleep, stats).
fn dev_with_test_hooks() -> (QuiverDev, tempfile::TempDir) {
    let config = format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n",
        support::test_kit_bin()
    );
    support::start_with_config(&config, &["--grpc-listen", "127.0.0.1:0"])
}

#[tokio::test(flavor = "multi_thread")]
async fn execute_streams_tool_progress_while_the_script_is_still_running() {
    let (dev, _dir) = dev_with_test_hooks();
    let mut grpc = client(&dev).await;
    // The script reports three progress steps from its first call, then
    // waits in its second until a second party joins group `gate`: only this
    // test can release it, and it does so only after reading the progress.
    let code = "await tools.w.quiver_test_rendezvous({group: 'live', parties: 1, steps: 3, tag: 'live'}); \
                return await tools.w.quiver_test_rendezvous({group: 'gate', parties: 2, steps: 0, tag: 'script'});";
    let mut stream = grpc
        .execute(execute_request(code))
        .await
        .expect("Execute")
        .into_inner();
    let mut progress = Vec::new();
    while progress.len() < 3 {
        let event = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("progress while the script waits at the gate")
            .expect("the stream is open")
            .expect("an event")
            .event;
        match event {
            Some(Event::Progress(p)) => progress.push(p),
            other => panic!("before the gate opens only progress can come: {other:?}"),
        }
    }
    // rmcp hands each notification to a task of its own: they may overtake
    // one another.
    let mut messages: Vec<&str> = progress.iter().map(|p| p.message.as_str()).collect();
    messages.sort_unstable();
    assert_eq!(messages, ["live 1/3", "live 2/3", "live 3/3"]);
    assert!(
        progress.iter().all(|p| p.total == Some(3.0)),
        "{progress:?}"
    );

    tracing::info!("--- open the gate: the script ends with its result");
    let gate = grpc
        .call_tool(Request::new(call_request(
            "w__quiver_test_rendezvous",
            json!({"group": "gate", "parties": 2, "steps": 0, "tag": "test"}),
        )))
        .await
        .expect("the gate call")
        .into_inner();
    assert!(!gate.is_error, "{}", gate.result_json);
    let mut rest = Vec::new();
    while let Some(event) = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("the result in time")
    {
        rest.push(event.expect("an event").event.expect("a set event"));
    }
    match rest.last() {
        Some(Event::Result(result)) => {
            assert_eq!(
                result.error_kind(),
                ScriptErrorKind::Unspecified,
                "{result:?}"
            );
            assert!(
                result.value_json.contains("\"tag\":\"script\""),
                "{result:?}"
            );
        }
        other => panic!("no result at the end: {other:?} in {rest:?}"),
    }
}

/// What the mock's `quiver_test_stats` says.
async fn mock_stats(grpc: &mut GatewayClient<Channel>) -> Value {
    let answer: GatewayCallToolResponse = grpc
        .call_tool(Request::new(call_request(
            "w__quiver_test_stats",
            json!({}),
        )))
        .await
        .expect("stats")
        .into_inner();
    let result: Value = serde_json::from_str(&answer.result_json).expect("result JSON");
    let text = result["content"][0]["text"].as_str().expect("stats text");
    serde_json::from_str(text).expect("stats JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_call_tool_tells_the_upstream() {
    let (dev, _dir) = dev_with_test_hooks();
    let mut grpc = client(&dev).await;
    let mut caller = grpc.clone();
    let call = tokio::spawn(async move {
        caller
            .call_tool(Request::new(call_request(
                "w__quiver_test_sleep",
                json!({"ms": 60000}),
            )))
            .await
    });
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while mock_stats(&mut grpc).await["calls"]["quiver_test_sleep"] != json!(1) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never reached the upstream"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    tracing::info!("--- the client gives up: the upstream sees notifications/cancelled");
    call.abort();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let stats = mock_stats(&mut grpc).await;
        if stats["cancelled"] == json!(1) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call was not cancelled: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_execute_stops_the_script_well_before_its_time_limit() {
    let dev = QuiverDev::start(&["--grpc-listen", "127.0.0.1:0"]);
    let mut grpc = client(&dev).await;
    let workers = || async { dev.status().await["workers"].clone() };
    let stream = grpc
        .execute(execute_request("while (true) {}"))
        .await
        .expect("Execute")
        .into_inner();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while workers().await["running"] != json!(1) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the script never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let retired = workers().await["retired"].as_u64().unwrap_or(0);

    tracing::info!("--- the client cancels: the worker is stopped, not left to the 5 s wall limit");
    drop(stream);
    // Half the wall limit: a script left running would still hold its worker.
    let freed = tokio::time::timeout(Duration::from_millis(2500), async {
        loop {
            let now = workers().await;
            if now["running"] == json!(0) {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the script still held its worker halfway to its time limit");
    assert!(
        freed["retired"].as_u64().unwrap_or(0) > retired,
        "the stopped worker was not retired: {freed}"
    );
}
