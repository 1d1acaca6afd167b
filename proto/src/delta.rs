//! Manifest deltas: what `WatchManifest` sends a consumer that already holds
//! the previous version, so changing one tool among 10,000 ships one tool
//! definition rather than 10,000.

use std::collections::BTreeMap;

use prost::Message as _;

use crate::{manifest::Manifest, pb};

/// The change from `base` to `next`; `None` when the whole manifest would be
/// no larger on the wire (a first version, or most tools changed).
pub fn between(base: &Manifest, next: &Manifest) -> Option<pb::ManifestDelta> {
    let old = base.to_pb();
    let new = next.to_pb();
    let key = |t: &pb::Tool| (t.server.clone(), t.tool.clone());
    let before: BTreeMap<(String, String), &pb::Tool> =
        old.tools.iter().map(|t| (key(t), t)).collect();
    let after: BTreeMap<(String, String), &pb::Tool> =
        new.tools.iter().map(|t| (key(t), t)).collect();
    let upserted: Vec<pb::Tool> = new
        .tools
        .iter()
        .filter(|t| {
            before.get(&key(t)).is_none_or(|was| {
                was.definition_json != t.definition_json || was.findings != t.findings
            })
        })
        .cloned()
        .collect();
    let removed: Vec<pb::Tool> = old
        .tools
        .iter()
        .filter(|t| !after.contains_key(&key(t)))
        .map(|t| pb::Tool {
            server: t.server.clone(),
            tool: t.tool.clone(),
            ..Default::default()
        })
        .collect();
    let old_servers: BTreeMap<&str, &pb::Server> =
        old.servers.iter().map(|s| (s.id.as_str(), s)).collect();
    let new_ids: std::collections::BTreeSet<&str> =
        new.servers.iter().map(|s| s.id.as_str()).collect();
    let delta = pb::ManifestDelta {
        base_version: base.version,
        version: next.version,
        servers: new
            .servers
            .iter()
            .filter(|s| old_servers.get(s.id.as_str()) != Some(s))
            .cloned()
            .collect(),
        upserted,
        removed,
        stub_hash: new.stub_hash.clone(),
        removed_servers: old
            .servers
            .iter()
            .filter(|s| !new_ids.contains(s.id.as_str()))
            .map(|s| s.id.clone())
            .collect(),
    };
    (delta.encoded_len() < new.encoded_len()).then_some(delta)
}

/// Why a delta does not apply.
#[derive(Debug, thiserror::Error)]
pub enum DeltaError {
    /// The consumer holds another version than the delta's base.
    #[error("the delta applies to version {base}, this node holds {held}")]
    WrongBase {
        /// The delta's base.
        base: u64,
        /// What is held.
        held: u64,
    },
    /// A tool definition does not decode.
    #[error("a tool definition in the delta does not decode")]
    Definition(#[from] serde_json::Error),
}

/// `delta` applied to `held`: the new version's manifest (its stub hash
/// recomputed here, to be compared with `delta.stub_hash`).
pub fn apply(held: &Manifest, delta: &pb::ManifestDelta) -> Result<Manifest, DeltaError> {
    if held.version != delta.base_version {
        return Err(DeltaError::WrongBase {
            base: delta.base_version,
            held: held.version,
        });
    }
    let held = held.to_pb();
    let mut servers: BTreeMap<String, pb::Server> = held
        .servers
        .into_iter()
        .map(|s| (s.id.clone(), s))
        .collect();
    for gone in &delta.removed_servers {
        servers.remove(gone);
    }
    for server in &delta.servers {
        servers.insert(server.id.clone(), server.clone());
    }
    let mut tools: BTreeMap<(String, String), pb::Tool> = held
        .tools
        .into_iter()
        .map(|t| ((t.server.clone(), t.tool.clone()), t))
        .collect();
    for gone in &delta.removed {
        tools.remove(&(gone.server.clone(), gone.tool.clone()));
    }
    for tool in &delta.upserted {
        tools.insert((tool.server.clone(), tool.tool.clone()), tool.clone());
    }
    let whole = pb::Manifest {
        version: delta.version,
        servers: servers.into_values().collect(),
        tools: tools.into_values().collect(),
        stub_hash: delta.stub_hash.clone(),
    };
    Ok(Manifest::from_pb(&whole)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{manifest::ServerEntry, tool::ToolDef};

    fn tool(name: &str, description: &str) -> ToolDef {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "description": description,
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}
        }))
        .unwrap()
    }

    fn server(id: &str, tools: Vec<ToolDef>) -> ServerEntry {
        ServerEntry {
            description: format!("the {id} server"),
            ..ServerEntry::new(id, tools)
        }
    }

    fn many(version: u64, servers: usize, changed: Option<&str>) -> Manifest {
        let entries = (0..servers)
            .map(|s| {
                let id = format!("s{s:03}");
                let tools = (0..50)
                    .map(|t| {
                        let name = format!("tool_{t:02}");
                        let description = if changed == Some(&format!("{id}/{name}")) {
                            "changed".to_string()
                        } else {
                            format!("does thing {t} on {id}")
                        };
                        tool(&name, &description)
                    })
                    .collect();
                server(&id, tools)
            })
            .collect();
        Manifest::build(version, entries)
    }

    #[test]
    fn a_delta_rebuilds_the_next_manifest_exactly() {
        let base = many(1, 20, None);
        // One tool changed, one server gone, one server added.
        let mut entries: Vec<ServerEntry> = (1..20)
            .map(|s| {
                let id = format!("s{s:03}");
                let tools = (0..50)
                    .map(|t| {
                        let description = if s == 5 && t == 7 {
                            "new words".to_string()
                        } else {
                            format!("does thing {t} on {id}")
                        };
                        tool(&format!("tool_{t:02}"), &description)
                    })
                    .collect();
                server(&id, tools)
            })
            .collect();
        entries.push(server("zz_new", vec![tool("fresh", "a new tool")]));
        let next = Manifest::build(2, entries);
        let delta = between(&base, &next).expect("smaller than the whole");
        assert_eq!(delta.upserted.len(), 2, "the changed tool and the new one");
        assert_eq!(delta.removed.len(), 50, "the removed server's tools");
        assert_eq!(delta.removed_servers, ["s000"]);
        assert_eq!(delta.servers.len(), 1, "only the new server travels");
        let rebuilt = apply(&base, &delta).unwrap();
        assert_eq!(rebuilt.version, 2);
        assert_eq!(rebuilt.stub_hash, next.stub_hash);
        assert_eq!(rebuilt.to_pb(), next.to_pb());
    }

    #[test]
    fn one_changed_tool_among_many_ships_one_definition() {
        let base = many(1, 40, None);
        let next = many(2, 40, Some("s017/tool_33"));
        let delta = between(&base, &next).unwrap();
        assert_eq!(delta.upserted.len(), 1);
        assert_eq!(delta.upserted[0].tool, "tool_33");
        assert!(delta.removed.is_empty());
        assert!(delta.encoded_len() * 20 < next.to_pb().encoded_len());
        assert_eq!(apply(&base, &delta).unwrap().stub_hash, next.stub_hash);
    }

    #[test]
    fn a_delta_for_another_base_is_refused() {
        let base = many(1, 2, None);
        let next = many(3, 2, Some("s001/tool_01"));
        let delta = between(&base, &next).unwrap();
        let other = many(2, 2, None);
        assert!(matches!(
            apply(&other, &delta),
            Err(DeltaError::WrongBase { base: 1, held: 2 })
        ));
    }
}
