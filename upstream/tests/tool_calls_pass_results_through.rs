//! A tool call reaches the server once and its answer comes back as the server
//! gave it: a result, a result flagged `isError`, or a JSON-RPC error. None of
//! them counts against the upstream's circuit breaker: the upstream answered.

use crate::support;

use quiver_upstream::{BreakerState, CallOptions, UpstreamConfig, UpstreamError};
use support::{ECHO, FAILS, Fixture, REFUSES, Seen, first_text, phase, text_argument};

/// Breaker settings that would open after one failure, so any call wrongly
/// counted as a failure shows.
fn fragile() -> UpstreamConfig {
    let mut config = UpstreamConfig::stdio("fixture", "unused", Vec::new());
    config.breaker_failures = 1;
    config
}

#[tokio::test]
async fn a_successful_call_returns_the_servers_result() {
    let mut fixture = Fixture::with_config(fragile());

    phase("call echo");
    let result = fixture
        .upstream
        .call_tool(ECHO, Some(text_argument("héllo")), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(first_text(&result), "héllo");
    assert_ne!(result.is_error, Some(true));

    phase("the server ran it once");
    assert_eq!(fixture.next_seen().await, Seen::CallStarted(ECHO.into()));
    assert!(fixture.seen.try_recv().is_err(), "no second call");
    assert_eq!(fixture.upstream.status().breaker, BreakerState::Closed);
}

#[tokio::test]
async fn a_tool_error_result_is_passed_through_not_turned_into_a_failure() {
    let fixture = Fixture::with_config(fragile());

    phase("call a tool that runs and fails");
    let result = fixture
        .upstream
        .call_tool(FAILS, None, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(first_text(&result), "no forecast for Atlantis");

    phase("the breaker is still closed: later calls go through");
    assert_eq!(fixture.upstream.status().breaker, BreakerState::Closed);
    let again = fixture
        .upstream
        .call_tool(
            ECHO,
            Some(text_argument("still here")),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(first_text(&again), "still here");
}

#[tokio::test]
async fn a_json_rpc_error_comes_back_with_its_code_and_message() {
    let fixture = Fixture::with_config(fragile());

    phase("call a tool the server refuses");
    let error = fixture
        .upstream
        .call_tool(REFUSES, None, CallOptions::default())
        .await
        .unwrap_err();
    match error {
        UpstreamError::Remote {
            id, code, message, ..
        } => {
            assert_eq!(id, "fixture");
            assert_eq!(code, -32602, "invalid params");
            assert_eq!(message, "`city` must be a string");
        }
        other => panic!("expected the server's JSON-RPC error, got {other:?}"),
    }

    phase("an answer, even an error, keeps the breaker closed");
    assert_eq!(fixture.upstream.status().breaker, BreakerState::Closed);
}
