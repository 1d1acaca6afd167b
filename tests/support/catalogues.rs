//! The shared datasets' catalogues as tests use them: LiveMCPBench servers,
//! their tools flattened, and catalogues scaled to a number of tools.

use std::path::Path;

use serde_json::{Value, json};

use super::{datasets, write_file};

/// The LiveMCPBench servers (`../shared/datasets`) whose names are in
/// `names`, each as `{name, description, tools: [...]}` (its tool groups
/// flattened); panics unless every one was found.
pub fn livemcpbench_servers(names: &[&str]) -> Vec<Value> {
    let datasets = datasets().expect("the shared datasets");
    let all: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(datasets.join("livemcpbench/tools.json")).expect("LiveMCPBench"),
    )
    .expect("LiveMCPBench is JSON");
    let servers: Vec<Value> = all
        .iter()
        .filter(|s| names.contains(&s["name"].as_str().unwrap_or_default()))
        .map(|server| json!({"name": server["name"], "description": server["description"], "tools": flat_tools(server)}))
        .collect();
    assert_eq!(servers.len(), names.len(), "every server was found");
    servers
}

/// A catalogue server's tools, its groups flattened (LiveMCPBench nests
/// them; the demo catalogue lists them).
pub fn flat_tools(server: &Value) -> Vec<Value> {
    match &server["tools"] {
        Value::Array(list) => list.clone(),
        Value::Object(groups) => groups
            .values()
            .flat_map(|g| g["tools"].as_array().cloned().unwrap_or_default())
            .collect(),
        _ => Vec::new(),
    }
}

/// Writes a catalogue of exactly `tools` tools into `dir`: the built-in demo
/// catalogue, then LiveMCPBench's real definitions (`../shared/datasets`),
/// copied under new names (`name_v2`, …) once they run out, spread over
/// `servers` servers (`catalogue-1`, …: few mock upstreams, each quick to
/// start). Its path.
pub fn scaled_catalogue(dir: &Path, tools: usize, servers: usize) -> String {
    let demo: Vec<Value> =
        serde_json::from_str(quiver_demo::CATALOG).expect("the demo catalogue is JSON");
    let flat = flat_tools;
    let mut count: usize = demo.iter().map(|s| flat(s).len()).sum();
    let datasets = datasets().expect("the shared datasets");
    let real: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(datasets.join("livemcpbench/tools.json")).expect("LiveMCPBench"),
    )
    .expect("LiveMCPBench is JSON");
    let definitions: Vec<Value> = real.iter().flat_map(flat).collect();
    let mut lists: Vec<Vec<Value>> = vec![Vec::new(); servers.max(1)];
    let mut names: Vec<std::collections::HashSet<String>> =
        vec![Default::default(); servers.max(1)];
    let mut position = 0;
    while count < tools {
        let slot = position % lists.len();
        let mut tool = definitions[position % definitions.len()].clone();
        let base = tool["name"].as_str().unwrap_or("tool").to_string();
        let mut name = base.clone();
        let mut copy = 2;
        while names[slot].contains(&name) {
            name = format!("{base}_v{copy}");
            copy += 1;
        }
        tool["name"] = Value::String(name.clone());
        names[slot].insert(name);
        lists[slot].push(tool);
        position += 1;
        count += 1;
    }
    let mut all = demo;
    for (n, list) in lists.into_iter().enumerate().filter(|(_, l)| !l.is_empty()) {
        all.push(json!({"name": format!("catalogue-{}", n + 1), "description": "LiveMCPBench definitions", "tools": list}));
    }
    let path = write_file(dir, "scaled.json", &serde_json::to_string(&all).unwrap());
    path.to_str().unwrap().to_string()
}
