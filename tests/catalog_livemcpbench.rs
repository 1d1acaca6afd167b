//! `quiver dev --catalog` over the real LiveMCPBench catalogue: 70 mock upstream
//! processes, 527 tools in passthrough, the small constant surfaces in search
//! and code mode (including a script over the real catalogue), and the token
//! budget of each mode.

use crate::support;

use std::process::Command;

use serde_json::{Value, json};
use support::{QuiverDev, call, connect, datasets, quiver_bin, text};

#[tokio::test(flavor = "multi_thread")]
async fn livemcpbench_catalog_serves_527_tools_and_constant_surfaces() {
    let Some(dir) = datasets() else { return };
    let catalog = dir.join("livemcpbench/tools.json");
    let dev = QuiverDev::start(&["--catalog", catalog.to_str().unwrap()]);
    assert!(
        dev.banner.contains("527 tools from 70 upstreams"),
        "{}",
        dev.banner
    );

    let passthrough = connect(&dev.mode_url("passthrough")).await;
    let tools = passthrough.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 527);
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 527, "exposed names are unique");
    let first = &tools[0];
    let result = call(&passthrough, &first.name, json!({})).await;
    // Arguments may be invalid for this tool; either way the answer names the tool.
    assert!(
        text(&result).contains(first.name.split("__").last().unwrap()),
        "{}",
        text(&result)
    );
    passthrough.cancel().await.unwrap();

    let search = connect(&dev.mode_url("search")).await;
    assert_eq!(search.list_all_tools().await.unwrap().len(), 2);
    let found = call(
        &search,
        "search_tools",
        json!({"query": "current stock price of a ticker symbol"}),
    )
    .await;
    let results = found.structured_content.unwrap()["results"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        results
            .iter()
            .any(|r| r["tool"].as_str().unwrap_or("").contains("stock")),
        "{results:?}"
    );
    search.cancel().await.unwrap();

    let code = connect(&dev.mode_url("code")).await;
    assert_eq!(code.list_all_tools().await.unwrap().len(), 4);
    let servers = call(&code, "list", json!({})).await;
    assert_eq!(
        servers.structured_content.unwrap()["servers"]
            .as_array()
            .unwrap()
            .len(),
        70
    );
    code.cancel().await.unwrap();
}

#[test]
fn token_budgets_hold_on_livemcpbench() {
    let Some(dir) = datasets() else { return };
    let output = Command::new(quiver_bin())
        .args(["tokens", "--json", "--catalog"])
        .arg(dir.join("livemcpbench/tools.json"))
        .output()
        .expect("run quiver tokens");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mode = |name: &str| {
        report["modes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mode"] == name)
            .unwrap()
            .clone()
    };
    let code = mode("code");
    let search = mode("search");
    let passthrough = mode("passthrough");
    assert!(
        code["up_front"]["cl100k"].as_u64().unwrap() <= 450,
        "{code}"
    );
    assert!(
        search["up_front"]["cl100k"].as_u64().unwrap() <= 250,
        "{search}"
    );
    assert!(
        passthrough["up_front"]["cl100k"].as_u64().unwrap() > 50_000,
        "{passthrough}"
    );
    let searched = &code["search_limit_5"];
    assert!(
        searched["max_text_cl100k"].as_u64().unwrap() <= 400,
        "{searched}"
    );
    assert!(
        searched["max_structured_cl100k"].as_u64().unwrap() <= 400,
        "{searched}"
    );
    // Code and search cost the same at every catalogue size.
    let scaling = report["scaling"].as_array().unwrap();
    let costs: Vec<u64> = scaling
        .iter()
        .map(|row| row["search"]["cl100k"].as_u64().unwrap())
        .collect();
    assert!(costs.windows(2).all(|w| w[0] == w[1]), "{costs:?}");
}
