//! Waiting for a condition in a test, shared by the workspace's test crates
//! (the control plane's includes this file by path).

use std::time::{Duration, Instant};

/// Polls `condition` every 5 ms until it holds; fails the test, naming
/// `what`, after 30 s.
pub async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    wait_for_or(what, condition, String::new).await
}

/// [`wait_for`], with `report()` appended to the failure (the state that
/// explains it).
pub async fn wait_for_or(what: &str, condition: impl Fn() -> bool, report: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within 30 s\n{}",
            report()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
