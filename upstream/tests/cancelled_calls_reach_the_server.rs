//! A call the caller cancels, or that runs past its time limit, ends at once
//! for the caller with an error saying so, and the server is told
//! (`notifications/cancelled`) so that it can stop the work too.

use crate::support;

use std::time::Duration;

use quiver_upstream::{BreakerState, CallOptions, UpstreamError};
use support::{ECHO, Fixture, Seen, WAITS, first_text, phase, text_argument};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_call_cancelled_by_the_caller_is_cancelled_upstream() {
    let mut fixture = Fixture::start();
    let cancel = CancellationToken::new();

    phase("start a call that only ends when cancelled");
    let call = fixture
        .start_waiting_call(CallOptions {
            cancel: cancel.clone(),
            ..CallOptions::default()
        })
        .await;

    phase("the caller cancels");
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, UpstreamError::Cancelled { id } if id == "fixture"),
        "{error:?}"
    );

    phase("the server hears of it");
    assert_eq!(fixture.next_seen().await, Seen::CallCancelled(WAITS.into()));

    phase("a cancellation is not a failure of the upstream");
    assert_eq!(fixture.upstream.status().breaker, BreakerState::Closed);
    let result = fixture
        .upstream
        .call_tool(ECHO, Some(text_argument("next")), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(first_text(&result), "next");
}

#[tokio::test]
async fn a_call_past_its_time_limit_is_cancelled_upstream() {
    let mut fixture = Fixture::start();
    let limit = Duration::from_millis(200);

    phase("call with a time limit the tool never meets");
    let error = fixture
        .upstream
        .call_tool(
            WAITS,
            None,
            CallOptions {
                timeout: Some(limit),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    match error {
        UpstreamError::Timeout { id, timeout } => {
            assert_eq!(id, "fixture");
            assert_eq!(timeout, limit);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }

    phase("the server was told to stop");
    assert_eq!(fixture.next_seen().await, Seen::CallStarted(WAITS.into()));
    assert_eq!(fixture.next_seen().await, Seen::CallCancelled(WAITS.into()));
}

#[tokio::test]
async fn a_call_whose_caller_goes_away_is_cancelled_upstream() {
    let mut fixture = Fixture::start();

    phase("start a call that only ends when cancelled, then drop it");
    let call = fixture.start_waiting_call(CallOptions::default()).await;
    // The caller's task ends without cancelling (a stopped script, a
    // client that went away): the call's future is dropped mid-call.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());

    phase("the server hears of it all the same");
    assert_eq!(fixture.next_seen().await, Seen::CallCancelled(WAITS.into()));

    phase("and the upstream keeps serving");
    let result = fixture
        .upstream
        .call_tool(ECHO, Some(text_argument("next")), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(first_text(&result), "next");
}
