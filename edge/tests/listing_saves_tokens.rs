//! Every `tools/list` a search- or code-mode session answers counts the
//! context tokens it saved: the estimate of listing every visible tool (as
//! passthrough does) minus the estimate of what the mode listed. Passthrough
//! saves nothing and counts nothing. One test, so only its sessions count.

use crate::support;

use std::sync::Arc;

use quiver_edge::Mode;
use quiver_telemetry::metrics::sample;
use quiver_view::{ToolView, token_estimate::estimate_tokens};
use support::{Client, FakeExecutor, connect_to, edge, manifest};

/// `quiver_tokens_saved_total` for `mode`, 0 before anything was counted.
fn saved(mode: &str) -> u64 {
    sample(
        "quiver_tokens_saved_total",
        &format!("quiver_mode=\"{mode}\""),
    )
    .map_or(0, |v| v as u64)
}

/// The estimated tokens of the `tools/list` answer `client` receives.
async fn listed_tokens(client: &Client) -> u64 {
    let tools = client.list_all_tools().await.expect("tools/list");
    estimate_tokens(serde_json::to_string(&tools).unwrap().len())
}

#[tokio::test]
async fn search_and_code_mode_count_the_tokens_their_listing_saved() {
    let gateway = edge(Arc::new(FakeExecutor::new()), None);
    let every_tool = ToolView::all(Arc::new(manifest::two_servers())).listing_tokens();

    eprintln!("--- the view's estimate is the passthrough listing's");
    let passthrough = connect_to(&gateway, Mode::Passthrough).await;
    let listed_all = listed_tokens(&passthrough).await;
    assert!(
        every_tool.abs_diff(listed_all) * 10 <= listed_all,
        "estimated {every_tool} tokens for a listing of {listed_all}"
    );
    assert_eq!(saved("passthrough"), 0);

    eprintln!("--- each listing in search mode counts what it saved");
    let search = connect_to(&gateway, Mode::Search).await;
    let own = listed_tokens(&search).await;
    assert!(own < every_tool, "{own} vs {every_tool}");
    assert_eq!(saved("search"), every_tool - own);
    // Another client: this one may answer a second listing from its cache
    // (the meta tools' listing says it may be kept for an hour).
    let another = connect_to(&gateway, Mode::Search).await;
    listed_tokens(&another).await;
    assert_eq!(saved("search"), 2 * (every_tool - own));

    eprintln!("--- and in code mode");
    let code = connect_to(&gateway, Mode::Code).await;
    let own = listed_tokens(&code).await;
    assert_eq!(saved("code"), every_tool.saturating_sub(own));
}
