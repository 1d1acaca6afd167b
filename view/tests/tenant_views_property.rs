//! Property: for random manifests and random tenant policies, a tenant's view
//! holds exactly the tools its policy shows (checked against a reference
//! written here from the policy's documented meaning), and no way of asking
//! a view — exact name, resolution of any name, search by any tool's own
//! words, "did you mean" suggestions — ever yields a tool outside it.
//! Tenants sharing a visible set share one view.

use std::{collections::BTreeSet, sync::Arc};

use proptest::prelude::*;
use quiver_proto::{
    Manifest, ServerEntry, ToolDef,
    tenant::{Tenant, TenantDirectory},
};
use quiver_view::{TenantViews, search_telemetry::SearchSurface, suggest::closest};
use serde_json::json;

const WORDS: [&str; 12] = [
    "issue",
    "forecast",
    "invoice",
    "ticket",
    "weather",
    "deploy",
    "note",
    "calendar",
    "map",
    "repository",
    "payment",
    "search",
];

/// A manifest of `shape[s]` tools on server `s`, names and descriptions
/// drawn from `WORDS`, tags from `tags[s]`.
fn manifest(shape: &[(usize, Vec<usize>, Vec<u8>)]) -> Manifest {
    let entries = shape
        .iter()
        .enumerate()
        .map(|(s, (tags, words, _))| ServerEntry {
            id: format!("srv{s}"),
            description: format!("server {s}"),
            namespace: format!("srv{s}"),
            tags: (0..*tags).map(|t| format!("tag{}", (s + t) % 3)).collect(),
            group: String::new(),
            validation: Default::default(),
            features: Vec::new(),
            tools: words
                .iter()
                .enumerate()
                .map(|(t, w)| ToolDef {
                    name: format!("{}_{t}", WORDS[w % WORDS.len()]),
                    title: None,
                    description: format!(
                        "{} {} for server {s}",
                        WORDS[w % WORDS.len()],
                        WORDS[(w + s) % WORDS.len()]
                    ),
                    input_schema: json!({"type": "object"}),
                    output_schema: None,
                    annotations: None,
                    meta: None,
                })
                .collect(),
            findings: Default::default(),
        })
        .collect();
    Manifest::build(1, entries)
}

fn tenant(id: &str, servers: Vec<String>, tools: Vec<String>, tags: Vec<String>) -> Tenant {
    serde_json::from_value(json!({
        "id": id, "display_name": id, "created_ms": 0, "updated_ms": 0,
        "servers": servers, "tools": tools, "tags": tags,
    }))
    .expect("a tenant")
}

/// The reference: what the policy fields are documented to mean, written
/// without the crate's glob matcher (the globs generated here are an exact
/// name, a `prefix*`, or `*`).
fn matches(glob: &str, text: &str) -> bool {
    match glob.strip_suffix('*') {
        Some(prefix) => text.starts_with(prefix),
        None => glob == text,
    }
}

fn expected(manifest: &Manifest, t: &Tenant) -> BTreeSet<String> {
    manifest
        .tools
        .iter()
        .filter(|tool| {
            let server = &manifest.servers[tool.server_index];
            let server_ok = (t.servers.is_empty() && t.tags.is_empty())
                || t.servers.iter().any(|g| matches(g, &server.id))
                || server.tags.iter().any(|tag| t.tags.contains(tag));
            let id = format!("{}/{}", tool.id.server, tool.id.tool);
            server_ok && (t.tools.is_empty() || t.tools.iter().any(|g| matches(g, &id)))
        })
        .map(|tool| tool.exposed_name.clone())
        .collect()
}

fn glob(servers: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        (0..servers).prop_map(|s| format!("srv{s}")),
        Just("srv1*".to_string()),
        Just("*".to_string()),
    ]
}

fn tool_glob(servers: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        ((0..servers), 0..WORDS.len()).prop_map(|(s, w)| format!("srv{s}/{}*", WORDS[w])),
        (0..servers).prop_map(|s| format!("srv{s}/*")),
    ]
}

fn policy(servers: usize) -> impl Strategy<Value = (Vec<String>, Vec<String>, Vec<String>)> {
    (
        prop::collection::vec(glob(servers), 0..3),
        prop::collection::vec(tool_glob(servers), 0..3),
        prop::collection::vec((0..3usize).prop_map(|t| format!("tag{t}")), 0..2),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_view_holds_exactly_what_the_policy_shows_and_nothing_else_leaks(
        shape in prop::collection::vec(
            (0..3usize, prop::collection::vec(0..WORDS.len(), 1..6), Just(Vec::<u8>::new())),
            1..5,
        ),
        policies in prop::collection::vec(policy(5), 1..5),
    ) {
        let manifest = Arc::new(manifest(&shape));
        let tenants: Vec<Tenant> = policies
            .iter()
            .enumerate()
            .map(|(i, (s, t, g))| tenant(&format!("t{i}"), s.clone(), t.clone(), g.clone()))
            .collect();
        let views = TenantViews::new(manifest.clone(), Arc::new(TenantDirectory::new(tenants.clone())));
        let every_name: Vec<String> = manifest.tools.iter().map(|t| t.exposed_name.clone()).collect();
        let mut distinct = BTreeSet::new();
        for t in &tenants {
            let view = views.for_tenant(&t.id).expect("a known tenant has a view");
            let want = expected(&manifest, t);
            distinct.insert(want.clone());
            let seen: BTreeSet<String> = view.iter().map(|v| v.tool.exposed_name.clone()).collect();
            prop_assert_eq!(&seen, &want, "tenant {:?}", t);
            let names: BTreeSet<String> = view.exposed_names().map(str::to_string).collect();
            prop_assert_eq!(&names, &want);
            for name in &every_name {
                let visible = want.contains(name);
                prop_assert_eq!(view.by_exposed(name).is_some(), visible, "by_exposed {}", name);
                if let Some(found) = view.resolve(name) {
                    prop_assert!(want.contains(&found.tool.exposed_name), "resolve {} gave a hidden tool", name);
                }
                // A misspelling of a hidden name suggests only visible names.
                let misspelt = format!("{}x", &name[..name.len() - 1]);
                for suggestion in closest(&misspelt, view.exposed_names(), 3) {
                    prop_assert!(want.contains(&suggestion), "suggested hidden {}", suggestion);
                }
            }
            for tool in manifest.tools.iter() {
                // Search by every tool's own description, hidden ones included.
                for (hit, _) in view.search_results(SearchSurface::Api, &t.id, &tool.def.description, 20) {
                    prop_assert!(want.contains(&hit.tool.exposed_name), "search found hidden {}", hit.tool.exposed_name);
                }
            }
        }
        // One view per distinct visible set (the set of every tool is the shared
        // view of all, not counted).
        let all: BTreeSet<String> = every_name.iter().cloned().collect();
        let built = distinct.iter().filter(|s| **s != all).count();
        prop_assert_eq!(views.views_built(), built);
    }
}
