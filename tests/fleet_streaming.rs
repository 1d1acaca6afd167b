//! Streaming across the edge → executor hop, on real processes over
//! loopback: a control plane, a `quiver executor` holding the upstream (the
//! weather mock with its test hooks) and a `quiver edge` that holds none.
//! What the upstream sends during a call — progress notifications, a
//! sampling or an elicitation request — reaches the MCP client through the
//! edge, and the client's answer goes back to the upstream: for a direct
//! call in passthrough and for a tool call inside a code-mode script.
#![allow(deprecated)] // sampling: current in the protocol versions Quiver serves

use crate::support;

use support::{
    ControlPlaneProcess, EdgeProcess, ExecutorProcess, add_hooks_upstream,
    session_client::{Seen, answer, call_with_token, first_items, open, rendezvous, via_script},
};

/// A control plane holding the weather mock `w` (with its test hooks) and
/// the `extra` upstreams, one `quiver executor`, and a `quiver edge` that
/// routes to it.
struct Fleet {
    _dir: tempfile::TempDir,
    cp: ControlPlaneProcess,
    _executor: ExecutorProcess,
    edge: EdgeProcess,
}

impl Fleet {
    async fn start(extra: &[(&str, &[&str])]) -> Fleet {
        let dir = tempfile::tempdir().unwrap();
        let cp = ControlPlaneProcess::start(1, &dir.path().join("n1"), &["--bootstrap"]);
        add_hooks_upstream(&cp.addr, "w", "weather", &[]);
        for (id, flags) in extra {
            add_hooks_upstream(&cp.addr, id, "weather", flags);
        }
        let executor =
            ExecutorProcess::start(&["--control-plane", &cp.addr, "--node-name", "exec"]);
        let edge = EdgeProcess::start(&cp.addr);
        edge.until("the executor takes work", |e| {
            e.iter().filter(|x| x["state"] == "ok").count() == 1
        })
        .await;
        Fleet {
            _dir: dir,
            cp,
            _executor: executor,
            edge,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_sampling_and_elicitation_cross_the_hop_both_ways() {
    let fleet = Fleet::start(&[]).await;
    let edge = &fleet.edge;

    eprintln!("--- passthrough: progress and an elicitation come back; the answer goes up");
    let (direct, mut seen) = open(&edge.url("passthrough"), "direct-client").await;
    let (token, result) = call_with_token(
        &direct,
        "w__quiver_test_rendezvous",
        rendezvous("p", 1, "P", 3, Some("elicitation")),
    )
    .await;
    let said = answer(&result, "passthrough");
    assert!(
        said["answers"][0]["answered"]
            .to_string()
            .contains("direct-client"),
        "the upstream got the client's answer: {said}"
    );
    let items = first_items(&mut seen, "direct-client", 4).await;
    let mut progress: Vec<String> = Vec::new();
    let mut elicited = 0;
    for item in items {
        match item {
            Seen::Progress(got, message) => {
                assert_eq!(got, token, "progress under the call's own token");
                progress.push(message);
            }
            Seen::Elicitation(asked) => {
                assert!(asked.contains("P asks #1"), "{asked}");
                elicited += 1;
            }
            Seen::Sampling(asked) => panic!("a sampling request nobody made: {asked}"),
        }
    }
    progress.sort();
    assert_eq!(progress, ["P 1/3", "P 2/3", "P 3/3"]);
    assert_eq!(elicited, 1);

    eprintln!("--- code mode: a script's tool call samples the client through the edge");
    let (code, mut seen) = open(&edge.url("code"), "script-client").await;
    let (_, result) = call_with_token(
        &code,
        "execute",
        via_script(&rendezvous("s", 1, "S", 2, Some("sampling"))),
    )
    .await;
    let said = answer(&result, "script");
    assert!(
        said.to_string().contains("sampled by script-client"),
        "the upstream got the client's sample: {said}"
    );
    let items = first_items(&mut seen, "script-client", 3).await;
    let sampled = items
        .iter()
        .filter(|i| matches!(i, Seen::Sampling(asked) if asked.contains("S asks #1")))
        .count();
    let progressed = items
        .iter()
        .filter(|i| matches!(i, Seen::Progress(_, m) if m.starts_with("S ")))
        .count();
    assert_eq!((sampled, progressed), (1, 2), "{items:?}");
}

/// The tool names `client` lists (stateless clients too).
async fn tool_names<S: rmcp::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .map(|tools| tools.iter().map(|t| t.name.to_string()).collect())
        .unwrap_or_default()
}

/// Waits until `client` lists both rendezvous tools (`w`'s and `s`'s).
async fn until_both_upstreams_listed<S: rmcp::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
) {
    let mut names = Vec::new();
    for _ in 0..300 {
        names = tool_names(client).await;
        if ["w__quiver_test_rendezvous", "s__quiver_test_rendezvous"]
            .iter()
            .all(|n| names.iter().any(|have| have == n))
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the rendezvous tools were never listed: {names:?}");
}

/// Accepting an elicitation that asks for a name, with `name`.
fn accept(name: &str) -> serde_json::Value {
    serde_json::json!({"action": "accept", "content": {"name": name}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateless_client_answers_input_required_through_a_remote_executor() {
    use crate::stateless_protocol::{asking, connect_stateless};
    use rmcp::model::{CallToolRequestParams, CallToolResponse};
    use serde_json::json;

    // `w` speaks 2025-11-25 (it asks with a server-to-client request); `s`
    // speaks 2026-07-28 (it answers `input_required` itself).
    let fleet = Fleet::start(&[("s", &["--stateless"])]).await;
    let edge = &fleet.edge;
    let client = connect_stateless(&edge.url("passthrough"), json!({"elicitation": {}})).await;
    until_both_upstreams_listed(&client).await;

    for upstream in ["w", "s"] {
        eprintln!("--- {upstream}: the question comes back as input_required; the answer goes up");
        let mut params = CallToolRequestParams::new(format!("{upstream}__quiver_test_rendezvous"));
        params.arguments = asking(upstream, "elicitation").as_object().cloned();
        let CallToolResponse::InputRequired(asked) = client
            .call_tool_once(params.clone())
            .await
            .expect("round 1")
        else {
            panic!("{upstream}: expected input_required");
        };
        let requests = asked.input_requests.clone().expect("input requests");
        assert_eq!(requests.len(), 1, "{requests:?}");
        let key = requests.keys().next().unwrap().clone();
        params.request_state = asked.request_state.clone();
        params.input_responses = Some([(key, accept("through the fleet"))].into());
        let CallToolResponse::Complete(done) =
            client.call_tool_once(params).await.expect("round 2")
        else {
            panic!("{upstream}: expected the final result");
        };
        let said = support::text(&done);
        assert_ne!(done.is_error, Some(true), "{said}");
        assert!(said.contains("through the fleet"), "{upstream}: {said}");
    }

    eprintln!("--- answers sent with the first request reach a 2026 upstream across the hop");
    let mut params = CallToolRequestParams::new("s__quiver_test_rendezvous");
    params.arguments = asking("given", "elicitation").as_object().cloned();
    params.input_responses = Some([("ask-1".to_string(), accept("given up front"))].into());
    let CallToolResponse::Complete(done) = client.call_tool_once(params).await.expect("one round")
    else {
        panic!("the upstream had its answer: expected the final result");
    };
    assert!(
        support::text(&done).contains("given up front"),
        "{}",
        support::text(&done)
    );
}

/// A session client that declares no capabilities and records the log
/// messages that reach it.
#[derive(Clone)]
struct LogListener(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for LogListener {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.data.to_string());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_hears_nothing_live_still_gets_the_calls_log_messages() {
    use rmcp::ServiceExt as _;
    use serde_json::json;

    let fleet = Fleet::start(&[]).await;
    let edge = &fleet.edge;
    quiver_upstream::install_crypto_provider();
    let (heard, mut logs) = tokio::sync::mpsc::unbounded_channel();
    let client = LogListener(heard)
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            edge.url("passthrough"),
        ))
        .await
        .expect("session client");

    // No progress token and no sampling or elicitation: the edge takes the
    // unary hop, and the upstream's log messages come back with the result.
    let result = support::call(
        &client,
        "w__quiver_test_rendezvous",
        json!({"group": "quiet", "parties": 1, "steps": 0, "tag": "quiet", "logs": 2}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", support::text(&result));
    let mut said = Vec::new();
    while said.len() < 2 {
        match tokio::time::timeout(std::time::Duration::from_secs(10), logs.recv()).await {
            Ok(Some(log)) => said.push(log),
            _ => panic!("the call's log messages did not arrive; got {said:?}"),
        }
    }
    // The client's own rmcp hands each notification to a task of its own,
    // so they may reach its handler out of order; the order on the wire is
    // checked below.
    said.sort();
    assert_eq!(said, [r#""quiet log #1""#, r#""quiet log #2""#]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstreams_log_messages_reach_the_client_in_the_order_it_sent_them() {
    use serde_json::json;
    use support::raw_session::RawSession;

    let fleet = Fleet::start(&[]).await;
    let url = fleet.edge.url("passthrough");
    let session = RawSession::open(&url, None).await;
    // Log messages of a session come on its standalone stream.
    let mut stream = session.listen(&url, None).await;
    let sent = 60;
    let answer = session
        .call(
            &url,
            "w__quiver_test_rendezvous",
            json!({"group": "ordered", "parties": 1, "steps": 0, "tag": "ordered", "logs": sent}),
        )
        .await;
    assert_ne!(answer.result()["isError"], true, "{answer:?}");
    let mut logged = Vec::new();
    while logged.len() < sent as usize {
        let Some((_, message)) = stream.next().await else {
            panic!("the log messages stopped coming: {logged:?}");
        };
        if message["method"] == "notifications/message" {
            logged.push(
                message["params"]["data"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    let expected: Vec<String> = (1..=sent).map(|n| format!("ordered log #{n}")).collect();
    assert_eq!(logged, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_to_input_required_may_land_on_another_edge() {
    use crate::stateless_protocol::{asking, connect_stateless};
    use rmcp::model::{CallToolRequestParams, CallToolResponse};
    use serde_json::json;

    let fleet = Fleet::start(&[("s", &["--stateless"])]).await;
    let mut other = EdgeProcess::start(&fleet.cp.addr);
    other
        .until("the executor takes work", |e| {
            e.iter().filter(|x| x["state"] == "ok").count() == 1
        })
        .await;
    let one = connect_stateless(&fleet.edge.url("passthrough"), json!({"elicitation": {}})).await;
    let two = connect_stateless(&other.url("passthrough"), json!({"elicitation": {}})).await;
    until_both_upstreams_listed(&one).await;
    until_both_upstreams_listed(&two).await;

    // The edges learn each other from the registry.
    for (edge, peer) in [(&fleet.edge, &other), (&other, &fleet.edge)] {
        let mut status = edge.status().await;
        for _ in 0..300 {
            let listed = status["peer_edges"].as_array().is_some_and(|peers| {
                peers.iter().any(|p| {
                    p["url"]
                        .as_str()
                        .is_some_and(|url| url.ends_with(&peer.authority))
                })
            });
            if listed {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            status = edge.status().await;
        }
        assert_eq!(
            status["peer_edges"].as_array().map(Vec::len),
            Some(1),
            "each edge knows the other: {status}"
        );
    }

    for upstream in ["w", "s"] {
        eprintln!("--- {upstream}: asked through edge one, answered through edge two");
        let mut params = CallToolRequestParams::new(format!("{upstream}__quiver_test_rendezvous"));
        params.arguments = asking(upstream, "elicitation").as_object().cloned();
        let CallToolResponse::InputRequired(asked) =
            one.call_tool_once(params.clone()).await.expect("round 1")
        else {
            panic!("{upstream}: expected input_required");
        };
        let key = asked
            .input_requests
            .clone()
            .expect("requests")
            .into_keys()
            .next();
        params.request_state = asked.request_state.clone();
        params.input_responses = Some([(key.unwrap(), accept("across edges"))].into());
        let CallToolResponse::Complete(done) = two.call_tool_once(params).await.expect("round 2")
        else {
            panic!("{upstream}: expected the final result through edge two");
        };
        let said = support::text(&done);
        assert_ne!(done.is_error, Some(true), "{said}");
        assert!(said.contains("across edges"), "{upstream}: {said}");
    }

    eprintln!("--- the edge holding a call is killed: the other refuses its resume clearly");
    let mut params = CallToolRequestParams::new("w__quiver_test_rendezvous");
    params.arguments = asking("lost", "elicitation").as_object().cloned();
    let CallToolResponse::InputRequired(asked) =
        two.call_tool_once(params.clone()).await.expect("round 1")
    else {
        panic!("expected input_required");
    };
    other.kill();
    let key = asked
        .input_requests
        .clone()
        .expect("requests")
        .into_keys()
        .next();
    params.request_state = asked.request_state.clone();
    params.input_responses = Some([(key.unwrap(), accept("too late"))].into());
    match one.call_tool_once(params).await {
        Err(rmcp::ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{e:?}");
            assert!(e.message.contains("without requestState"), "{e:?}");
        }
        other => panic!("expected -32602, got {other:?}"),
    }
    eprintln!("--- and serves the next call");
    let mut params = CallToolRequestParams::new("w__quiver_test_rendezvous");
    params.arguments = asking("again", "elicitation").as_object().cloned();
    assert!(matches!(
        one.call_tool_once(params).await.expect("a new call"),
        CallToolResponse::InputRequired(_)
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_updates_cross_the_hop_to_sessions_and_listeners() {
    use crate::stateless_protocol::{UpdateWatcher, connect_stateless};
    use rmcp::{ServiceExt as _, model::ServerNotification};
    use serde_json::json;

    let fleet = Fleet::start(&[]).await;
    let edge = &fleet.edge;
    edge.until("the edge hears the executor's resource updates", |e| {
        e.iter().any(|x| x["watching_updates"] == true)
    })
    .await;
    let url = edge.url("passthrough");
    let uri = "quiver-test://note";

    quiver_upstream::install_crypto_provider();
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let session = UpdateWatcher { heard: heard_tx }
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            url.clone(),
        ))
        .await
        .expect("session client");
    session
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await
        .expect("resources/subscribe through the edge");
    let listener = connect_stateless(&url, json!({})).await;
    let mut subscription = listener
        .listen(
            rmcp::model::SubscriptionFilter::builder()
                .resource_subscription(uri)
                .build(),
        )
        .await
        .expect("subscriptions/listen");

    // The upstream, behind the remote executor, says the resource changed.
    let told = support::call(
        &session,
        "w__quiver_test_touch_resource",
        json!({"uri": uri}),
    )
    .await;
    assert_ne!(told.is_error, Some(true), "{}", support::text(&told));
    let to_session = tokio::time::timeout(std::time::Duration::from_secs(20), heard.recv()).await;
    assert_eq!(to_session.ok().flatten().as_deref(), Some(uri));
    let to_listener = tokio::time::timeout(std::time::Duration::from_secs(20), subscription.next())
        .await
        .expect("an update within 20 s")
        .expect("the stream is open");
    match to_listener {
        Some(ServerNotification::ResourceUpdatedNotification(update)) => {
            assert_eq!(update.params.uri, uri)
        }
        other => panic!("expected resources/updated, got {other:?}"),
    }

    // Unsubscribed, the session hears no more (the listener still does).
    session
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri))
        .await
        .expect("resources/unsubscribe");
    let told = support::call(
        &session,
        "w__quiver_test_touch_resource",
        json!({"uri": uri}),
    )
    .await;
    assert_ne!(told.is_error, Some(true), "{}", support::text(&told));
    let again = tokio::time::timeout(std::time::Duration::from_secs(20), subscription.next())
        .await
        .expect("a second update within 20 s")
        .expect("the stream is open");
    assert!(
        matches!(
            again,
            Some(ServerNotification::ResourceUpdatedNotification(_))
        ),
        "{again:?}"
    );
    assert!(heard.try_recv().is_err(), "the session unsubscribed");
}
