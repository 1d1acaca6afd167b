//! Catalogues of a chosen size for the benchmarks that measure how a cost
//! grows with the tools a tenant sees. Every size starts with the built-in
//! demo catalogue (so the tool each measurement calls, `weather.get_forecast`,
//! answers the same at every size) and fills the rest with the real
//! definitions of a public catalogue (LiveMCPBench by default), copied under
//! new names (`search`, `search_v2`, `search_v3`, …) once the real ones run out.
//! Copies stay on the real servers, so a 10,000-tool catalogue is still ~75
//! mock-upstream processes rather than ~1,300.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::Value;

use quiver_demo as demo;

/// The public catalogue the benchmarks scale by default.
pub(crate) const DEFAULT_SOURCE: &str = "examples/catalogs/livemcpbench/tools.json";

/// Writes, into `dir`, a catalogue of exactly `tools` tools (at least the
/// demo's): the demo catalogue, then `source`'s servers (a LiveMCPBench-style
/// list) with their tools, copied under new names as often as needed.
/// Returns its path, or `None` when `tools` is the demo catalogue's size.
pub(crate) fn scaled_catalog(
    source: &Path,
    tools: usize,
    dir: &Path,
) -> anyhow::Result<Option<PathBuf>> {
    scaled_catalog_on(source, tools, dir, 1)
}

/// [`scaled_catalog`], with the copies of each real server spread over up
/// to `groups` upstream servers of their own (copy `k` on server
/// `(k - 1) % groups`; the first keeps the real name, the others are named
/// `<name> gN`, the name cut to 40 characters), so a large catalogue is also many processes,
/// not only many tools per process. `groups` 1 is [`scaled_catalog`].
pub(crate) fn scaled_catalog_on(
    source: &Path,
    tools: usize,
    dir: &Path,
    groups: usize,
) -> anyhow::Result<Option<PathBuf>> {
    let groups = groups.max(1);
    let demo: Value = serde_json::from_str(demo::CATALOG).context("the demo catalogue")?;
    let base = tools_of(&demo).map(|(_, n)| n).sum::<usize>();
    if tools == base {
        return Ok(None);
    }
    if tools < base {
        bail!("a catalogue has at least the demo's {base} tools; asked for {tools}");
    }
    let text = std::fs::read_to_string(source)
        .with_context(|| format!("reading the catalogue {}", source.display()))?;
    let real: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", source.display()))?;
    let Some(real_servers) = real.as_array().filter(|s| !s.is_empty()) else {
        bail!(
            "{} is not a list of servers (LiveMCPBench's shape)",
            source.display()
        );
    };
    let available: usize = tools_of(&real).map(|(_, n)| n).sum();
    if available == 0 {
        bail!("{} holds no tools", source.display());
    }
    let mut servers: Vec<Value> = demo.as_array().cloned().unwrap_or_default();
    let mut wanted = tools - base;
    // How many copies of each real tool: the first `extra` tools get one more.
    let copies = wanted / available;
    let extra = wanted % available;
    let mut position = 0usize;
    for server in real_servers {
        if wanted == 0 {
            break;
        }
        // One copy of the server per group, each keeping its tool groups.
        let mut spread: Vec<Value> = vec![server.clone(); groups];
        let mut counts = vec![0usize; groups];
        let Some(entries) = server.get("tools").and_then(Value::as_object) else {
            continue;
        };
        for (key, entry) in entries {
            let Some(list) = entry.get("tools").and_then(Value::as_array) else {
                continue;
            };
            let mut scaled: Vec<Vec<Value>> = vec![Vec::new(); groups];
            for tool in list {
                let times = copies + usize::from(position < extra);
                position += 1;
                for copy in 1..=times.min(wanted) {
                    let mut tool = tool.clone();
                    if copy > 1
                        && let Some(name) = tool.get("name").and_then(Value::as_str)
                    {
                        let renamed = format!("{name}_v{copy}");
                        tool["name"] = Value::String(renamed);
                    }
                    scaled[(copy - 1) % groups].push(tool);
                }
                wanted -= times.min(wanted);
            }
            for ((copy, count), tools) in spread.iter_mut().zip(&mut counts).zip(scaled) {
                *count += tools.len();
                copy["tools"][key.as_str()]["tools"] = Value::Array(tools);
            }
        }
        for (group, (mut copy, count)) in spread.into_iter().zip(counts).enumerate() {
            if group > 0 {
                if count == 0 {
                    continue;
                }
                let name = copy.get("name").and_then(Value::as_str).unwrap_or("server");
                // Ids have at most 48 characters.
                let short: String = name.chars().take(40).collect();
                copy["name"] = Value::String(format!("{short} g{}", group + 1));
            }
            servers.push(copy);
        }
    }
    let path = if groups == 1 {
        dir.join(format!("catalog-{tools}.json"))
    } else {
        dir.join(format!("catalog-{tools}-on-{groups}-groups.json"))
    };
    std::fs::write(&path, serde_json::to_vec(&servers)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Some(path))
}

/// How many upstream servers the demo catalogue has.
pub(crate) fn demo_servers() -> anyhow::Result<usize> {
    let demo: Value = serde_json::from_str(demo::CATALOG).context("the demo catalogue")?;
    Ok(demo.as_array().map_or(0, Vec::len))
}

/// `(server entry, tool count)` of every server in a LiveMCPBench-style list.
fn tools_of(catalog: &Value) -> impl Iterator<Item = (&Value, usize)> {
    catalog.as_array().into_iter().flatten().map(|server| {
        let count = server
            .get("tools")
            .and_then(Value::as_object)
            .map_or(0, |entries| {
                entries
                    .values()
                    .filter_map(|e| e.get("tools").and_then(Value::as_array))
                    .map(Vec::len)
                    .sum()
            });
        (server, count)
    })
}

#[cfg(test)]
mod tests {
    use quiver_proto::catalog::Catalog;

    use super::*;

    fn demo_tools() -> anyhow::Result<usize> {
        let demo: Value = serde_json::from_str(demo::CATALOG)?;
        Ok(tools_of(&demo).map(|(_, n)| n).sum())
    }

    /// No server of `catalog` lists a tool name twice.
    fn assert_unique_tool_names(catalog: &Catalog) {
        for server in &catalog.servers {
            let mut names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "duplicate tool names on {}", server.id);
        }
    }

    #[test]
    fn a_scaled_catalogue_has_exactly_the_tools_asked_for_with_unique_names() {
        let dir = tempfile::tempdir().unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DEFAULT_SOURCE);
        let base = demo_tools().unwrap();
        assert_eq!(scaled_catalog(&source, base, dir.path()).unwrap(), None);
        for tools in [base + 1, 527, 2_000, 10_000] {
            let path = scaled_catalog(&source, tools, dir.path()).unwrap().unwrap();
            let catalog = Catalog::load(&path, "default").unwrap();
            assert_eq!(catalog.tool_count(), tools);
            assert_eq!(catalog.servers[0].id, "weather", "the demo comes first");
            assert_unique_tool_names(&catalog);
        }
        assert!(scaled_catalog(&source, base - 1, dir.path()).is_err());
    }

    #[test]
    fn spread_copies_make_more_servers_with_the_same_tools() {
        let dir = tempfile::tempdir().unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DEFAULT_SOURCE);
        let one = scaled_catalog(&source, 2_000, dir.path()).unwrap().unwrap();
        let one = Catalog::load(&one, "default").unwrap();
        let four = scaled_catalog_on(&source, 2_000, dir.path(), 4)
            .unwrap()
            .unwrap();
        let four = Catalog::load(&four, "default").unwrap();
        assert_eq!(four.tool_count(), 2_000);
        assert!(
            four.servers.len() > 3 * one.servers.len() - 3 * 5,
            "{} servers spread against {} not spread",
            four.servers.len(),
            one.servers.len()
        );
        let names = |catalog: &Catalog| {
            let mut names: Vec<String> = catalog
                .servers
                .iter()
                .flat_map(|s| s.tools.iter().map(|t| t.name.clone()))
                .collect();
            names.sort_unstable();
            names
        };
        assert_eq!(
            names(&one),
            names(&four),
            "the same tools, only on more servers"
        );
        assert_unique_tool_names(&four);
    }
}
