//! Manifests built from the real catalogues: valid, unique exposed names; stub
//! hashes stable across builds, input orders and the wire form. Without the
//! datasets these tests fail, unless `QUIVER_PARTIAL_TESTS=1` marks a local
//! partial run.

use crate::common;

use std::collections::HashSet;

use quiver_proto::{
    Manifest, ServerEntry,
    catalog::Catalog,
    naming::is_valid_exposed_name,
    stub::{MAX_DECLARATION_BYTES, MAX_SIGNATURE_CHARS, MAX_SUMMARY_CHARS},
};

use common::{dataset, shuffled};

const DATASETS: [&str; 2] = [
    "livemcpbench/tools.json",
    "oslook-mcp-servers-schemas/schemas_by_server.json",
];

fn entries(catalog: Catalog) -> Vec<ServerEntry> {
    catalog
        .servers
        .into_iter()
        .map(|server| ServerEntry {
            namespace: server.id.clone(),
            id: server.id,
            description: server.description,
            tags: Vec::new(),
            group: String::new(),
            validation: Default::default(),
            features: Vec::new(),
            tools: server.tools,
            findings: Default::default(),
        })
        .collect()
}

/// `entries` with servers and each server's tools in a seeded random order.
fn shuffled_entries(entries: &[ServerEntry], seed: u64) -> Vec<ServerEntry> {
    let servers = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| ServerEntry {
            tools: shuffled(entry.tools.clone(), seed + i as u64),
            ..entry.clone()
        })
        .collect();
    shuffled(servers, seed)
}

#[test]
fn real_catalogues_build_deterministic_manifests() {
    for relative in DATASETS {
        let Some(path) = dataset(relative) else {
            continue;
        };
        eprintln!("--- {relative}: load and build twice");
        let entries = entries(Catalog::load(&path, "default_server").expect("dataset loads"));
        let tool_count: usize = entries.iter().map(|e| e.tools.len()).sum();
        let first = Manifest::build(1, entries.clone());
        let second = Manifest::build(1, entries.clone());
        assert_eq!(first.tools.len(), tool_count, "no tool is lost");
        assert_eq!(first.stub_hash, second.stub_hash);
        for (a, b) in first.tools.iter().zip(&second.tools) {
            assert_eq!(a.stub_hash, b.stub_hash, "{}", a.exposed_name);
            assert_eq!(a.stub, b.stub);
        }

        eprintln!("--- {relative}: names and stub bounds");
        let mut exposed = HashSet::new();
        for tool in &first.tools {
            assert!(
                is_valid_exposed_name(&tool.exposed_name),
                "{}",
                tool.exposed_name
            );
            assert!(
                exposed.insert(tool.exposed_name.as_str()),
                "duplicate {}",
                tool.exposed_name
            );
            assert!(first.tool_by_exposed(&tool.exposed_name).is_some());
            assert!(tool.stub.declaration.len() <= MAX_DECLARATION_BYTES);
            assert!(tool.stub.signature.chars().count() <= MAX_SIGNATURE_CHARS);
            assert!(tool.stub.summary.chars().count() <= MAX_SUMMARY_CHARS);
            let call = format!("@see tools.call(\"{}\", args)", tool.exposed_name);
            assert!(
                tool.stub.declaration.contains(&call),
                "{}",
                tool.stub.declaration
            );
        }

        eprintln!("--- {relative}: shuffled input orders");
        for seed in [1, 7, 42] {
            let shuffled = Manifest::build(1, shuffled_entries(&entries, seed));
            assert_eq!(shuffled.stub_hash, first.stub_hash, "seed {seed}");
            let names: Vec<&str> = shuffled
                .tools
                .iter()
                .map(|t| t.exposed_name.as_str())
                .collect();
            let expected: Vec<&str> = first
                .tools
                .iter()
                .map(|t| t.exposed_name.as_str())
                .collect();
            assert_eq!(names, expected, "seed {seed}");
        }

        eprintln!("--- {relative}: through the wire form");
        let received = Manifest::from_pb(&first.to_pb()).expect("wire form parses");
        assert_eq!(received.stub_hash, first.stub_hash);
        assert_eq!(received.to_pb().stub_hash, first.stub_hash.to_hex());
    }
}
