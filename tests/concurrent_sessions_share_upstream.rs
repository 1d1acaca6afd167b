//! Several MCP sessions through one `quiver dev` share one stdio upstream
//! connection. Calls made at the same time (the mock holds every call until
//! all of them are in flight) each get only their own progress notifications,
//! under their own token. A sampling or elicitation request the upstream makes
//! during a call (the only one in flight on the connection: with several, the
//! gateway cannot tell whose it is) reaches the session that made the call,
//! and the other sessions see nothing of it. Covers direct calls in
//! passthrough and tool calls from a code-mode script. A request made while
//! another session's call is also in flight never reaches that session: it is
//! refused as unattributable (the gateway once attributed such requests by the
//! `_meta.progressToken` on them, which is the upstream's own numbering and
//! could name another session's call).
// Sampling is deprecated by SEP-2577 in rmcp's types; Quiver still relays it.
#![allow(deprecated)]

use crate::support;

use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ProgressToken};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use support::{
    call,
    session_client::{
        Seen, Session, answer, call_with_token, first_items, open, rendezvous, via_script,
    },
    start_with_config, test_kit_bin, text,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// One stdio upstream `w` (the weather mock with the test hooks).
fn config() -> String {
    format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n",
        test_kit_bin()
    )
}

/// Makes a round trip on every session, then takes whatever else reached
/// them: anything misrouted was sent before the calls answered, so it is in.
async fn rest_after_round_trip(
    passthrough: &[&Session],
    code: &[&Session],
    seen: &mut [&mut UnboundedReceiver<Seen>],
) -> Vec<Vec<Seen>> {
    for session in passthrough {
        let echo = call(*session, "w__get_forecast", json!({"city": "Oslo"})).await;
        assert_ne!(echo.is_error, Some(true), "{}", text(&echo));
    }
    for session in code {
        let echo = call(*session, "execute", json!({"code": "return 1;"})).await;
        assert_ne!(echo.is_error, Some(true), "{}", text(&echo));
    }
    seen.iter_mut()
        .map(|rx| std::iter::from_fn(|| rx.try_recv().ok()).collect())
        .collect()
}

/// `name` received exactly `steps` progress notifications, all under `token`
/// and all of its own call (`<tag> i/steps`), and the asks of kinds `asks`,
/// all of its own call; nothing else.
fn assert_only_own(
    name: &str,
    seen: Vec<Seen>,
    token: &ProgressToken,
    tag: &str,
    steps: u64,
    asks: &[&str],
) {
    let mut progress = Vec::new();
    let mut asked = Vec::new();
    for item in seen {
        match item {
            Seen::Progress(got, message) => {
                assert_eq!(
                    &got, token,
                    "{name} got progress under another token: {message}"
                );
                progress.push(message);
            }
            Seen::Sampling(text) => asked.push(("sampling", text)),
            Seen::Elicitation(text) => asked.push(("elicitation", text)),
        }
    }
    // Notifications are relayed concurrently; which ones arrive is the point.
    progress.sort();
    let expected: Vec<String> = (1..=steps).map(|i| format!("{tag} {i}/{steps}")).collect();
    assert_eq!(progress, expected, "{name}'s progress notifications");
    let kinds: Vec<&str> = asked.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds, asks, "requests that reached {name}: {asked:?}");
    for (kind, text) in &asked {
        assert!(
            text.contains(&format!("{tag} asks #1")),
            "{name} got a {kind} request of another call: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_each_get_only_their_own_progress() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let (a, mut seen_a) = open(&dev.mode_url("passthrough"), "session A").await;
    let (b, mut seen_b) = open(&dev.mode_url("passthrough"), "session B").await;
    let (c, mut seen_c) = open(&dev.mode_url("code"), "session C").await;

    eprintln!(
        "--- A and B call the tool, C's script calls it; the mock holds each until all three are in"
    );
    let ((token_a, result_a), (token_b, result_b), (token_c, result_c)) = tokio::join!(
        call_with_token(
            &a,
            "w__quiver_test_rendezvous",
            rendezvous("all", 3, "A", 3, None)
        ),
        call_with_token(
            &b,
            "w__quiver_test_rendezvous",
            rendezvous("all", 3, "B", 5, None)
        ),
        call_with_token(
            &c,
            "execute",
            via_script(&rendezvous("all", 3, "C", 4, None))
        ),
    );
    for (result, tag) in [(&result_a, "A"), (&result_b, "B"), (&result_c, "C")] {
        assert_eq!(
            answer(result, tag)["tag"],
            tag,
            "each call got its own answer"
        );
    }

    eprintln!(
        "--- each session saw its own progress, under its own token, and none of the others'"
    );
    let mut got_a = first_items(&mut seen_a, "session A", 3).await;
    let mut got_b = first_items(&mut seen_b, "session B", 5).await;
    let mut got_c = first_items(&mut seen_c, "session C", 4).await;
    let rest = rest_after_round_trip(
        &[&a, &b],
        &[&c],
        &mut [&mut seen_a, &mut seen_b, &mut seen_c],
    )
    .await;
    for (got, more) in [&mut got_a, &mut got_b, &mut got_c].into_iter().zip(rest) {
        got.extend(more);
    }
    assert_only_own("session A", got_a, &token_a, "A", 3, &[]);
    assert_only_own("session B", got_b, &token_b, "B", 5, &[]);
    assert_only_own("session C", got_c, &token_c, "C", 4, &[]);

    for session in [a, b, c] {
        session.cancel().await.expect("close");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_during_a_call_reaches_the_session_that_made_the_call() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let (a, mut seen_a) = open(&dev.mode_url("passthrough"), "session A").await;
    let (b, mut seen_b) = open(&dev.mode_url("passthrough"), "session B").await;
    let (c, mut seen_c) = open(&dev.mode_url("code"), "session C").await;
    let first = call(&a, "w__get_forecast", json!({"city": "Oslo"})).await;
    assert_ne!(
        first.is_error,
        Some(true),
        "A uses the upstream too: {}",
        text(&first)
    );

    eprintln!("--- B's direct call asks B's user (elicitation)");
    let (token_b, result_b) = call_with_token(
        &b,
        "w__quiver_test_rendezvous",
        rendezvous("b", 1, "B", 2, Some("elicitation")),
    )
    .await;
    let answer_b = answer(&result_b, "B");
    let said = answer_b["answers"][0]["answered"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("session B"),
        "B's own client answered: {answer_b}"
    );

    eprintln!("--- C's script's call asks C's model (sampling)");
    let (token_c, result_c) = call_with_token(
        &c,
        "execute",
        via_script(&rendezvous("c", 1, "C", 2, Some("sampling"))),
    )
    .await;
    let answer_c = answer(&result_c, "C");
    let said = answer_c["answers"][0]["answered"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("sampled by session C"),
        "C's own client answered: {answer_c}"
    );

    eprintln!("--- each ask reached only its caller; A saw nothing");
    let mut got_b = first_items(&mut seen_b, "session B", 2 + 1).await;
    let mut got_c = first_items(&mut seen_c, "session C", 2 + 1).await;
    let mut rest = rest_after_round_trip(
        &[&a, &b],
        &[&c],
        &mut [&mut seen_a, &mut seen_b, &mut seen_c],
    )
    .await
    .into_iter();
    let got_a = rest.next().unwrap_or_default();
    got_b.extend(rest.next().unwrap_or_default());
    got_c.extend(rest.next().unwrap_or_default());
    assert!(got_a.is_empty(), "A made no call that asked: {got_a:?}");
    assert_only_own("session B", got_b, &token_b, "B", 2, &["elicitation"]);
    assert_only_own("session C", got_c, &token_c, "C", 2, &["sampling"]);

    for session in [a, b, c] {
        session.cancel().await.expect("close");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_made_beside_another_sessions_call_never_reaches_that_session() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let (a, mut seen_a) = open(&dev.mode_url("passthrough"), "session A").await;
    let (c, mut seen_c) = open(&dev.mode_url("passthrough"), "session C").await;

    eprintln!("--- A's call is in flight on the upstream connection");
    let mut params = CallToolRequestParams::new("w__quiver_test_sleep");
    params.arguments = json!({"ms": 60000}).as_object().cloned();
    let held = a
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send A's call");
    match tokio::time::timeout(Duration::from_secs(20), seen_a.recv()).await {
        Ok(Some(Seen::Progress(..))) => {}
        other => panic!("A's call did not start: {other:?}"),
    }

    eprintln!("--- meanwhile C's call asks C's model eight times");
    let mut arguments = rendezvous("beside", 1, "C", 0, Some("sampling"));
    arguments["asks"] = json!(8);
    let (_, result) = call_with_token(&c, "w__quiver_test_rendezvous", arguments).await;
    let answer = answer(&result, "C");

    eprintln!("--- no ask reached A; each reached C or was refused as unattributable");
    let mut rest = rest_after_round_trip(&[&a, &c], &[], &mut [&mut seen_a, &mut seen_c])
        .await
        .into_iter();
    let leaked = rest.next().unwrap_or_default();
    assert!(
        leaked.is_empty(),
        "C's asks reached session A: {leaked:?}\nC's call: {answer:#}"
    );
    for outcome in answer["answers"].as_array().expect("answers") {
        let fine = outcome["answered"]
            .as_str()
            .is_some_and(|a| a.contains("session C"))
            || outcome["refused"]
                .as_str()
                .is_some_and(|r| r.contains("exactly one caller"));
        assert!(fine, "{answer:#}");
    }
    held.cancel(None).await.expect("cancel A's call");
    for session in [a, c] {
        session.cancel().await.expect("close");
    }
}
