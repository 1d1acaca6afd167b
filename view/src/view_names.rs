//! How a view finds one tool by name without scanning the view: servers by id
//! or JavaScript name, tools by name within their server, and the names a
//! script reaches under `tools`. Built once per view (on first use) and shared
//! by every request that resolves a name, so resolving costs the same at 16
//! visible tools as at 10,000. It must not hold anything the view hides.

use std::collections::{BTreeMap, HashMap, HashSet};

use quiver_proto::Manifest;

/// The name indexes of one view.
pub struct ViewNames {
    /// Visible servers by id and by JavaScript name → position in the
    /// view's server list (the first server in id order that has the name).
    server_by_name: HashMap<String, usize>,
    /// Visible servers by id alone → position.
    server_by_id: HashMap<String, usize>,
    /// For each visible server (view order), its tools' view positions.
    server_tools: Vec<Vec<usize>>,
    /// For each visible server, its tools by JavaScript or upstream name →
    /// view position (the first in view order that has the name).
    tool_by_name: Vec<HashMap<String, usize>>,
    /// Visible tools by upstream server id, then tool name → view position
    /// (nested, so a lookup by `&str` allocates nothing).
    by_id: HashMap<String, HashMap<String, usize>>,
    /// What a script sees as `tools.<server>.<tool>`: JavaScript server
    /// names (sorted) and each server's JavaScript tool names (view order).
    script: BTreeMap<String, ScriptServer>,
}

/// One server under a script's `tools`.
struct ScriptServer {
    /// Tool names in view order, each once.
    tools: Vec<String>,
    /// The same names, for membership.
    known: HashSet<String>,
}

impl ViewNames {
    /// The indexes of the view holding manifest tools `tools` (manifest
    /// indices, in view order) whose visible servers are `servers`
    /// (manifest indices, in the view's order).
    pub(crate) fn build(manifest: &Manifest, tools: &[usize], servers: &[usize]) -> ViewNames {
        let mut server_by_name = HashMap::new();
        let mut server_by_id = HashMap::new();
        let mut position_of_server = HashMap::new();
        for (position, &s) in servers.iter().enumerate() {
            let server = &manifest.servers[s];
            position_of_server.insert(s, position);
            server_by_id.insert(server.id.clone(), position);
            server_by_name.entry(server.id.clone()).or_insert(position);
            server_by_name.entry(server.js.clone()).or_insert(position);
        }
        let mut server_tools = vec![Vec::new(); servers.len()];
        let mut tool_by_name = vec![HashMap::new(); servers.len()];
        let mut by_id: HashMap<String, HashMap<String, usize>> = HashMap::new();
        let mut script: BTreeMap<String, ScriptServer> = BTreeMap::new();
        for (view_position, &t) in tools.iter().enumerate() {
            let tool = &manifest.tools[t];
            let server = &manifest.servers[tool.server_index];
            if let Some(&position) = position_of_server.get(&tool.server_index) {
                server_tools[position].push(view_position);
                let names: &mut HashMap<String, usize> = &mut tool_by_name[position];
                names.entry(tool.js.clone()).or_insert(view_position);
                names.entry(tool.def.name.clone()).or_insert(view_position);
            }
            by_id
                .entry(tool.id.server.clone())
                .or_default()
                .entry(tool.id.tool.clone())
                .or_insert(view_position);
            let entry = script
                .entry(server.js.clone())
                .or_insert_with(|| ScriptServer {
                    tools: Vec::new(),
                    known: HashSet::new(),
                });
            if entry.known.insert(tool.js.clone()) {
                entry.tools.push(tool.js.clone());
            }
        }
        ViewNames {
            server_by_name,
            server_by_id,
            server_tools,
            tool_by_name,
            by_id,
            script,
        }
    }

    /// The view's server position of the server with id or JavaScript name `name`.
    pub(crate) fn server(&self, name: &str) -> Option<usize> {
        self.server_by_name.get(name).copied()
    }

    /// The view's server position of the server with id `id`.
    pub(crate) fn server_with_id(&self, id: &str) -> Option<usize> {
        self.server_by_id.get(id).copied()
    }

    /// View positions of the tools of the server at `position`.
    pub(crate) fn tools_of(&self, position: usize) -> &[usize] {
        self.server_tools
            .get(position)
            .map_or(&[][..], Vec::as_slice)
    }

    /// The view position of the tool of the server at `position` with
    /// JavaScript or upstream name `tool`.
    pub(crate) fn tool(&self, position: usize, tool: &str) -> Option<usize> {
        self.tool_by_name.get(position)?.get(tool).copied()
    }

    /// The view position of upstream tool `tool` of upstream `server`.
    pub(crate) fn by_id(&self, server: &str, tool: &str) -> Option<usize> {
        self.by_id.get(server)?.get(tool).copied()
    }

    /// Whether a script can reach `tools.<server>` (with `tool`,
    /// `tools.<server>.<tool>`).
    pub fn script_has(&self, server: &str, tool: Option<&str>) -> bool {
        match (self.script.get(server), tool) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(s), Some(tool)) => s.known.contains(tool),
        }
    }

    /// The names a script finds under `tools` (`server` None: the servers,
    /// sorted) or under `tools.<server>` (its tools; None when there is no
    /// such server).
    pub fn script_names(&self, server: Option<&str>) -> Option<Vec<String>> {
        match server {
            None => Some(self.script.keys().cloned().collect()),
            Some(server) => self.script.get(server).map(|s| s.tools.clone()),
        }
    }
}
