//! How a view finds one tool by name without scanning the view: servers by id
//! or JavaScript name, tools by name within their server, and the names a
//! script reaches under `tools`. The tables ([`ManifestNames`]) are built once
//! per manifest version and shared by every view; a view reads them through
//! its own visibility ([`ViewNames`]), taking the first visible candidate of
//! a name, so nothing it hides is ever found. Resolving costs the same at 16
//! visible tools as at 10,000.

use std::collections::{HashMap, HashSet};

use quiver_proto::Manifest;

use crate::tool_set::ToolSet;

/// The name tables of one manifest: every name with every tool or server
/// that carries it, in manifest order.
pub(crate) struct ManifestNames {
    /// Servers by id and by JavaScript name (ascending: id order).
    server_by_name: HashMap<String, Vec<u32>>,
    /// Servers by id alone.
    server_by_id: HashMap<String, u32>,
    /// For each server, its tools by JavaScript or upstream name (ascending).
    tool_by_name: Vec<HashMap<String, Vec<u32>>>,
    /// For each server, its tools by JavaScript name alone (ascending).
    tool_by_js: Vec<HashMap<String, Vec<u32>>>,
    /// Tools by upstream server id, then tool name (nested, so a lookup by
    /// `&str` allocates nothing).
    by_id: HashMap<String, HashMap<String, u32>>,
    /// Servers by JavaScript name, as a script writes `tools.<server>`.
    script_servers: HashMap<String, Vec<u32>>,
}

impl ManifestNames {
    /// The tables of `manifest`.
    pub(crate) fn build(manifest: &Manifest) -> ManifestNames {
        let mut server_by_name: HashMap<String, Vec<u32>> = HashMap::new();
        let mut server_by_id = HashMap::new();
        let mut script_servers: HashMap<String, Vec<u32>> = HashMap::new();
        for (s, server) in manifest.servers.iter().enumerate() {
            let s = s as u32;
            server_by_id.insert(server.id.clone(), s);
            push_once(server_by_name.entry(server.id.clone()).or_default(), s);
            push_once(server_by_name.entry(server.js.clone()).or_default(), s);
            push_once(script_servers.entry(server.js.clone()).or_default(), s);
        }
        let mut tool_by_name = vec![HashMap::new(); manifest.servers.len()];
        let mut tool_by_js = vec![HashMap::new(); manifest.servers.len()];
        let mut by_id: HashMap<String, HashMap<String, u32>> = HashMap::new();
        for (t, tool) in manifest.tools.iter().enumerate() {
            let t = t as u32;
            if let Some(names) = tool_by_name.get_mut(tool.server_index) {
                let names: &mut HashMap<String, Vec<u32>> = names;
                push_once(names.entry(tool.js.clone()).or_default(), t);
                push_once(names.entry(tool.def.name.clone()).or_default(), t);
            }
            if let Some(names) = tool_by_js.get_mut(tool.server_index) {
                let names: &mut HashMap<String, Vec<u32>> = names;
                push_once(names.entry(tool.js.clone()).or_default(), t);
            }
            by_id
                .entry(tool.id.server.clone())
                .or_default()
                .entry(tool.id.tool.clone())
                .or_insert(t);
        }
        ManifestNames {
            server_by_name,
            server_by_id,
            tool_by_name,
            tool_by_js,
            by_id,
            script_servers,
        }
    }
}

fn push_once(list: &mut Vec<u32>, item: u32) {
    if list.last() != Some(&item) {
        list.push(item);
    }
}

/// The name tables as one view sees them: only its visible tools and the
/// servers that have one.
pub struct ViewNames<'a> {
    manifest: &'a Manifest,
    names: &'a ManifestNames,
    tools: &'a ToolSet,
    servers: &'a ToolSet,
}

impl<'a> ViewNames<'a> {
    pub(crate) fn new(
        manifest: &'a Manifest,
        names: &'a ManifestNames,
        tools: &'a ToolSet,
        servers: &'a ToolSet,
    ) -> ViewNames<'a> {
        ViewNames {
            manifest,
            names,
            tools,
            servers,
        }
    }

    /// The visible server (manifest index) with id or JavaScript name `name`:
    /// the first in id order that has the name.
    pub(crate) fn server(&self, name: &str) -> Option<usize> {
        self.first_server(self.names.server_by_name.get(name)?)
    }

    /// The visible server (manifest index) with id `id`.
    pub(crate) fn server_with_id(&self, id: &str) -> Option<usize> {
        let s = *self.names.server_by_id.get(id)? as usize;
        self.servers.contains(s).then_some(s)
    }

    /// The visible tool (manifest index) of server `server` with JavaScript
    /// or upstream name `tool`: the first in view order.
    pub(crate) fn tool(&self, server: usize, tool: &str) -> Option<usize> {
        self.first_tool(self.names.tool_by_name.get(server)?.get(tool)?)
    }

    /// The visible tool (manifest index) `tool` of upstream `server`.
    pub(crate) fn by_id(&self, server: &str, tool: &str) -> Option<usize> {
        let t = *self.names.by_id.get(server)?.get(tool)? as usize;
        self.tools.contains(t).then_some(t)
    }

    fn first_server(&self, candidates: &[u32]) -> Option<usize> {
        candidates
            .iter()
            .map(|&s| s as usize)
            .find(|&s| self.servers.contains(s))
    }

    fn first_tool(&self, candidates: &[u32]) -> Option<usize> {
        candidates
            .iter()
            .map(|&t| t as usize)
            .find(|&t| self.tools.contains(t))
    }

    /// The visible servers a script reaches as `tools.<server>`.
    fn script_servers(&self, server: &str) -> impl Iterator<Item = usize> + '_ {
        self.names
            .script_servers
            .get(server)
            .into_iter()
            .flatten()
            .map(|&s| s as usize)
            .filter(|&s| self.servers.contains(s))
    }

    /// Whether a script can reach `tools.<server>` (with `tool`,
    /// `tools.<server>.<tool>`).
    pub fn script_has(&self, server: &str, tool: Option<&str>) -> bool {
        let mut servers = self.script_servers(server);
        match tool {
            None => servers.next().is_some(),
            Some(tool) => servers.any(|s| {
                self.names.tool_by_js[s]
                    .get(tool)
                    .is_some_and(|c| self.first_tool(c).is_some())
            }),
        }
    }

    /// The names a script finds under `tools` (`server` None: the servers,
    /// sorted) or under `tools.<server>` (its tools, in view order, each
    /// once; None when there is no such server).
    pub fn script_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        match server {
            None => {
                let mut names: Vec<String> = self
                    .servers
                    .iter()
                    .map(|s| self.manifest.servers[s].js.clone())
                    .collect();
                names.sort_unstable();
                names.dedup();
                Some(names)
            }
            Some(server) => {
                let servers: Vec<usize> = self.script_servers(server).collect();
                if servers.is_empty() {
                    return None;
                }
                let mut seen = HashSet::new();
                let mut tools = Vec::new();
                for s in servers {
                    for &t in &self.manifest.servers[s].tools {
                        let js = &self.manifest.tools[t].js;
                        if self.tools.contains(t) && seen.insert(js.as_str()) {
                            tools.push(js.clone());
                        }
                    }
                }
                Some(tools)
            }
        }
    }
}
