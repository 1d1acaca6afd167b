//! A view's side of MCP Apps (see [`crate::app_tools`]): the tool an app's
//! view reaches by the name its server gives it.

use crate::{ToolView, ViewTool, app_tools::AppCallRefusal};

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
        let tools = self.index.apps().callable(name);
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
    use crate::{ManifestIndex, ToolSet};

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
