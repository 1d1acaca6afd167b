//! MCP Apps' tools in a view. A tool whose `_meta.ui.visibility` is `["app"]`
//! is for its app's view alone: no model-facing surface of a view (lists,
//! search, stubs, `describe`, calls by exposed name) has it. A view (the
//! app's HTML, rendered by a host) calls tools by their names on its own
//! server, not by Quiver's namespaced names; [`ToolView::app_call`] resolves
//! such a name among the tools an app may call (`visibility` names `app`, or
//! none is declared) of the view's *app servers* (servers with at least one
//! tool linking a `ui://` view), and refuses a name two of them share.

use std::collections::HashMap;

use quiver_proto::Manifest;

use crate::{ToolSet, ToolView, ViewTool};

/// What every view of one manifest version shares about apps.
pub(crate) struct AppTools {
    /// Manifest tools only an app's view may call.
    only_app: ToolSet,
    /// Tools an app may call, by their names on their servers (manifest
    /// indices, in manifest order), of servers that serve an app.
    callable: HashMap<String, Vec<usize>>,
}

impl AppTools {
    pub(crate) fn build(manifest: &Manifest) -> AppTools {
        let only_app = ToolSet::from_sorted(
            manifest.tools.len(),
            manifest
                .tools
                .iter()
                .enumerate()
                .filter(|(_, t)| t.def.app_only())
                .map(|(i, _)| i),
        );
        let serves_app: Vec<bool> = manifest
            .servers
            .iter()
            .map(|s| {
                s.tools
                    .iter()
                    .any(|&t| manifest.tools[t].def.app_resource().is_some())
            })
            .collect();
        let mut callable: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, tool) in manifest.tools.iter().enumerate() {
            if serves_app[tool.server_index] && tool.def.visibility().app {
                callable.entry(tool.id.tool.clone()).or_default().push(i);
            }
        }
        AppTools { only_app, callable }
    }

    /// `tools` split into what the model may see and what only apps may
    /// (`None` when no tool is only for apps: nothing held per view).
    pub(crate) fn split(&self, tools: ToolSet) -> (ToolSet, Option<ToolSet>) {
        let universe = tools.universe();
        if !self.only_app.meets_set(&tools) {
            return (tools, None);
        }
        let (mut model, mut app) = (Vec::new(), Vec::new());
        for t in tools.iter() {
            if self.only_app.contains(t) {
                app.push(t);
            } else {
                model.push(t);
            }
        }
        (
            ToolSet::from_sorted(universe, model),
            Some(ToolSet::from_sorted(universe, app)),
        )
    }
}

/// Why a view's call by name has no tool to reach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppCallRefusal {
    /// No app server of the view has a tool of that name an app may call.
    #[error(
        "no tool `{name}` that an app's view may call: a view calls its own server's tools by their names there"
    )]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// Several app servers of the view have it: which one the view belongs
    /// to is not known here.
    #[error(
        "tool `{name}` is on more than one app server ({}): call it by its namespaced name",
        servers.join(", ")
    )]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// The servers that have it.
        servers: Vec<String>,
    },
}

impl ToolView {
    /// The tool an app's view calls as `name`, its name on its own server
    /// (see the module documentation). Positions of tools only apps may
    /// call start at [`ToolView::len`].
    pub fn app_call(&self, name: &str) -> Result<ViewTool<'_>, AppCallRefusal> {
        let found: Vec<ViewTool<'_>> = self.app_callable(name).collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(AppCallRefusal::Unknown { name: name.into() }),
            many => Err(AppCallRefusal::Ambiguous {
                name: name.into(),
                servers: many.iter().map(|t| t.tool.id.server.clone()).collect(),
            }),
        }
    }

    /// The tool `tool` of `server` when an app's view may call it in this
    /// view (what an executor checks a call an edge made for a view by).
    pub fn app_call_by_id(&self, server: &str, tool: &str) -> Option<ViewTool<'_>> {
        self.app_callable(tool).find(|t| t.tool.id.server == server)
    }

    fn app_callable<'a>(&'a self, name: &str) -> impl Iterator<Item = ViewTool<'a>> + 'a {
        let tools = self
            .index
            .apps()
            .callable
            .get(name)
            .map_or(&[][..], Vec::as_slice);
        tools.iter().filter_map(move |&t| self.reachable(t))
    }

    /// The tool at manifest index `tool`, visible to the model or only to apps.
    fn reachable(&self, tool: usize) -> Option<ViewTool<'_>> {
        if let Some(visible) = self.by_manifest_index(tool) {
            return Some(visible);
        }
        let only_app = self.app_only.as_ref()?;
        only_app
            .contains(tool)
            .then(|| self.tool_at(self.len() + only_app.rank(tool), tool))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use quiver_proto::{Manifest, ServerEntry, ToolDef};
    use serde_json::{Value, json};

    use super::*;
    use crate::ManifestIndex;

    fn tool(name: &str, meta: Option<Value>) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: format!("{name} does things"),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            meta,
        }
    }

    fn app(uri: &str) -> Option<Value> {
        Some(json!({"ui": {"resourceUri": uri}}))
    }

    fn only_app() -> Option<Value> {
        Some(json!({"ui": {"visibility": ["app"]}}))
    }

    /// `dash` and `board` serve apps and share `refresh`; `plain` serves none.
    fn manifest() -> Arc<Manifest> {
        Arc::new(Manifest::build(
            1,
            vec![
                ServerEntry::new(
                    "dash",
                    vec![
                        tool("chart", app("ui://dash/chart.html")),
                        tool("bump", only_app()),
                        tool("refresh", only_app()),
                        tool("model_only", Some(json!({"ui": {"visibility": ["model"]}}))),
                    ],
                ),
                ServerEntry::new(
                    "board",
                    vec![
                        tool("board", app("ui://board/view.html")),
                        tool("refresh", None),
                    ],
                ),
                ServerEntry::new(
                    "plain",
                    vec![tool("lookup", None), tool("hidden", only_app())],
                ),
            ],
        ))
    }

    fn view_of(manifest: &Arc<Manifest>, tools: &[(&str, &str)]) -> ToolView {
        let index = Arc::new(ManifestIndex::build(manifest.clone()));
        let members = tools
            .iter()
            .map(|(s, t)| {
                manifest
                    .tools
                    .iter()
                    .position(|m| m.id.server == *s && m.id.tool == *t)
                    .unwrap()
            })
            .collect::<Vec<_>>();
        let mut members = members;
        members.sort_unstable();
        ToolView::new(index, ToolSet::from_sorted(manifest.tools.len(), members))
    }

    fn every(manifest: &Arc<Manifest>) -> Vec<(&str, &str)> {
        manifest
            .tools
            .iter()
            .map(|t| (t.id.server.as_str(), t.id.tool.as_str()))
            .collect()
    }

    #[test]
    fn tools_only_apps_may_call_are_in_nothing_the_model_sees() {
        let manifest = manifest();
        let view = view_of(&manifest, &every(&manifest));
        let names: Vec<&str> = view.exposed_names().collect();
        assert!(
            !names
                .iter()
                .any(|n| n.ends_with("bump") || n.ends_with("hidden")),
            "{names:?}"
        );
        assert_eq!(view.len(), manifest.tools.len() - 3);
        assert!(view.by_exposed("dash__bump").is_none());
        assert!(view.resolve("dash.bump").is_none());
        let hits = view.search("bump refresh hidden", 20);
        assert!(hits.iter().all(|(t, _)| !t.tool.def.app_only()));
    }

    #[test]
    fn a_views_call_by_its_servers_name_reaches_one_app_server() {
        let manifest = manifest();
        let view = view_of(&manifest, &every(&manifest));
        let bump = view.app_call("bump").expect("bump");
        assert_eq!(
            (bump.tool.id.server.as_str(), bump.index),
            ("dash", view.len())
        );
        assert_eq!(view.app_call("chart").unwrap().tool.id.server, "dash");
        // A server that serves no app: its tools are not a view's to call.
        assert!(matches!(
            view.app_call("lookup"),
            Err(AppCallRefusal::Unknown { .. })
        ));
        assert!(matches!(
            view.app_call("hidden"),
            Err(AppCallRefusal::Unknown { .. })
        ));
        // Only the model may call it.
        assert!(matches!(
            view.app_call("model_only"),
            Err(AppCallRefusal::Unknown { .. })
        ));
        match view.app_call("refresh") {
            Err(AppCallRefusal::Ambiguous { servers, .. }) => {
                assert_eq!(servers, ["board", "dash"])
            }
            other => panic!("{:?}", other.map(|t| t.tool.exposed_name.clone())),
        }
        assert!(view.app_call_by_id("board", "refresh").is_some());
        assert!(view.app_call_by_id("plain", "lookup").is_none());
    }

    #[test]
    fn a_tenant_without_a_server_has_none_of_its_app_tools() {
        let manifest = manifest();
        let view = view_of(&manifest, &[("dash", "chart"), ("dash", "refresh")]);
        assert_eq!(view.app_call("refresh").unwrap().tool.id.server, "dash");
        assert!(view.app_call("bump").is_err(), "not in the tenant's policy");
        assert!(view.app_call("board").is_err());
        let plain = view_of(&manifest, &[("plain", "lookup")]);
        assert!(plain.app_only.is_none(), "nothing held for apps");
    }
}
