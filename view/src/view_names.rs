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
    /// Visible tools by upstream `(server id, tool name)` → view position.
    by_id: HashMap<(String, String), usize>,
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
        let mut by_id = HashMap::with_capacity(tools.len());
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
                .entry((tool.id.server.clone(), tool.id.tool.clone()))
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
        self.by_id
            .get(&(server.to_string(), tool.to_string()))
            .copied()
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::{ToolView, test_manifest::manifest};

    #[test]
    fn names_resolve_by_server_and_tool_and_hidden_tools_are_absent() {
        let manifest = manifest(&[
            ("github", &["create_issue", "get-issue"]),
            ("maps", &["route"]),
            ("secret", &["read"]),
        ]);
        // A view without `secret`.
        let visible: Vec<usize> = (0..manifest.tools.len())
            .filter(|&i| manifest.tools[i].id.server != "secret")
            .collect();
        let view = ToolView::with_tools(manifest.clone(), visible);
        let name = |t: Option<crate::ViewTool<'_>>| t.map(|t| t.tool.exposed_name.clone());
        assert_eq!(
            name(view.resolve("github.create_issue")).as_deref(),
            Some("github__create_issue")
        );
        assert_eq!(
            name(view.resolve("tools.github.get_issue")).as_deref(),
            Some("github__get-issue")
        );
        assert_eq!(
            name(view.resolve("github/get-issue")).as_deref(),
            Some("github__get-issue")
        );
        assert_eq!(
            name(view.resolve("maps__route")).as_deref(),
            Some("maps__route")
        );
        assert!(view.resolve("secret.read").is_none());
        assert!(view.resolve("github.read").is_none());
        assert!(view.by_id("secret", "read").is_none());
        assert_eq!(
            name(view.by_id("maps", "route")).as_deref(),
            Some("maps__route")
        );
        let github = view.server("github").unwrap();
        assert_eq!(view.tools_of(github).count(), 2);

        let names = view.names();
        assert_eq!(
            names.script_names(None),
            Some(vec!["github".to_string(), "maps".to_string()])
        );
        assert_eq!(
            names.script_names(Some("github")),
            Some(vec!["create_issue".to_string(), "get_issue".to_string()])
        );
        assert_eq!(names.script_names(Some("secret")), None);
        assert!(names.script_has("github", Some("get_issue")));
        assert!(
            !names.script_has("github", Some("get-issue")),
            "scripts use JavaScript names"
        );
        assert!(!names.script_has("secret", None));
    }

    #[test]
    fn a_derived_structure_is_built_once_per_view() {
        let view = ToolView::all(manifest(&[("maps", &["route"])]));
        let builds = AtomicUsize::new(0);
        let count = |view: &ToolView| {
            builds.fetch_add(1, Ordering::SeqCst);
            view.len()
        };
        assert_eq!(*view.derived(count), 1);
        assert_eq!(*view.derived(count), 1);
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        // Another type is another structure.
        assert_eq!(*view.derived(|v| v.len().to_string()), "1");
    }
}
