//! When the connection to an upstream dies, the upstream notices on its own
//! (status `down`, a `Disconnected` event), a call in flight reports that it
//! may or may not have run, later calls fail without sending anything, and
//! repeated failures open the circuit breaker so calls are refused at once.

use crate::support;

use quiver_upstream::{
    BreakerState, CallOptions, UpstreamConfig, UpstreamError, UpstreamEvent, UpstreamState,
};
use support::{ECHO, Fixture, first_text, phase, text_argument};

fn breaker_after(failures: u32) -> UpstreamConfig {
    let mut config = UpstreamConfig::stdio("fixture", "unused", Vec::new());
    config.breaker_failures = failures;
    config.breaker_open_secs = 3600;
    config
}

/// Waits for `wanted` among the upstream's events.
async fn event(
    events: &mut tokio::sync::broadcast::Receiver<UpstreamEvent>,
    wanted: UpstreamEvent,
) {
    loop {
        match events.recv().await {
            Ok(event) if event == wanted => return,
            Ok(_) => {}
            Err(e) => panic!("no {wanted:?} event: {e}"),
        }
    }
}

#[tokio::test]
async fn the_upstream_goes_down_and_the_breaker_opens() {
    let fixture = Fixture::with_config(breaker_after(2));
    let upstream = &fixture.upstream;
    let mut events = upstream.subscribe();

    phase("a working connection");
    let result = upstream
        .call_tool(ECHO, Some(text_argument("up")), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(first_text(&result), "up");
    assert_eq!(upstream.status().state, UpstreamState::Connected);

    phase("the server dies");
    fixture.kill_server();
    event(&mut events, UpstreamEvent::Disconnected).await;
    let status = upstream.status();
    assert_eq!(status.state, UpstreamState::Down);
    assert_eq!(status.last_error.as_deref(), Some("connection ended"));

    phase("calls now fail before anything is sent");
    for expected_failures in 1..=2 {
        let error = upstream
            .call_tool(ECHO, None, CallOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, UpstreamError::Unavailable { id, .. } if id == "fixture"),
            "{error:?}"
        );
        assert_eq!(upstream.status().failures, expected_failures);
    }

    phase("two failures in a row open the breaker: the next call is refused at once");
    assert_eq!(upstream.status().breaker, BreakerState::Open);
    let error = upstream
        .call_tool(ECHO, None, CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, UpstreamError::CircuitOpen { id, .. } if id == "fixture"),
        "{error:?}"
    );
    assert_eq!(upstream.status().failures, 2, "no connection was attempted");
}

#[tokio::test]
async fn a_call_in_flight_when_the_server_dies_may_or_may_not_have_run() {
    let mut fixture = Fixture::start();

    phase("start a call that does not answer");
    let call = fixture.start_waiting_call(CallOptions::default()).await;

    phase("the server dies with the call in flight");
    fixture.kill_server();
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&error, UpstreamError::LostDuringCall { id } if id == "fixture"),
        "{error:?}"
    );
}
