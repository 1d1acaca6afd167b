//! The real catalogues in `../shared/datasets` load with the expected numbers of
//! servers and tools. Without the datasets these tests fail, unless
//! `QUIVER_PARTIAL_TESTS=1` marks a local partial run.

use crate::common;

use std::collections::HashSet;

use quiver_proto::catalog::Catalog;

use common::dataset;

fn check_ids(catalog: &Catalog) {
    let ids: HashSet<&str> = catalog.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), catalog.servers.len(), "server ids are unique");
    for server in &catalog.servers {
        assert!(!server.id.is_empty());
        assert!(
            server
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{}",
            server.id
        );
        assert!(
            server.description.chars().count() <= 160,
            "{}",
            server.description
        );
        assert!(!server.description.contains('\n'));
    }
}

#[test]
fn livemcpbench_has_70_servers_and_527_tools() {
    let Some(path) = dataset("livemcpbench/tools.json") else {
        return;
    };
    let catalog = Catalog::load(&path, "unused").expect("livemcpbench loads");
    assert_eq!(catalog.servers.len(), 70);
    assert_eq!(catalog.tool_count(), 527);
    check_ids(&catalog);
    let bing = &catalog.servers[0];
    assert_eq!(bing.id, "Bing_CN_MCP");
    assert!(
        bing.description
            .starts_with("一个基于 MCP (Model Context Protocol) 的中文必应搜索工具"),
        "{}",
        bing.description
    );
    assert_eq!(
        bing.tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["bing_search", "fetch_webpage"]
    );
    // Some tools have a null description; they come out empty, not as errors.
    assert!(
        catalog
            .servers
            .iter()
            .flat_map(|s| &s.tools)
            .any(|t| t.description.is_empty())
    );
}

#[test]
fn oslook_has_46_servers_and_228_tools() {
    let Some(path) = dataset("oslook-mcp-servers-schemas/schemas_by_server.json") else {
        return;
    };
    let catalog = Catalog::load(&path, "unused").expect("oslook loads");
    assert_eq!(catalog.servers.len(), 46);
    assert_eq!(catalog.tool_count(), 228);
    check_ids(&catalog);
    assert_eq!(catalog.servers[0].id, "airtable-mcp");
    let any_chat = &catalog.servers[1];
    assert_eq!(any_chat.id, "any-chat-completions-mcp");
    assert_eq!(
        any_chat.description,
        "A community server for chat completions using AI chat integrations."
    );
}
