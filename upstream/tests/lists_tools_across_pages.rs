//! Listing an upstream's tools connects on first use, follows `tools/list`
//! pagination to the end, and shows in the upstream's status and events.

use crate::support;

use quiver_upstream::{UpstreamEvent, UpstreamState};
use support::{Fixture, PAGE_SIZE, TOOLS, phase};

#[tokio::test]
async fn every_page_of_tools_is_listed_in_order() {
    let fixture = Fixture::start();
    let upstream = &fixture.upstream;
    let mut events = upstream.subscribe();
    assert_eq!(upstream.status().state, UpstreamState::Idle);
    assert!(
        TOOLS.len() > 2 * PAGE_SIZE,
        "the fixture must need three pages"
    );

    phase("list: the first use connects, then every page is followed");
    let tools = upstream.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, TOOLS);
    assert_eq!(tools[0].description, "The echo tool.");

    phase("the status and the events say so");
    assert_eq!(events.recv().await.unwrap(), UpstreamEvent::Connected);
    let status = upstream.status();
    assert_eq!(status.state, UpstreamState::Connected);
    assert_eq!(status.tools, TOOLS.len());
    assert_eq!(status.failures, 0);
    assert_eq!(status.last_error, None);
    assert_eq!(
        upstream.description().await.as_deref(),
        Some("A fixture server for upstream tests.")
    );
}
