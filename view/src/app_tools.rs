//! MCP Apps' tools in a view. A tool whose `_meta.ui.visibility` is `["app"]`
//! is for its app's view alone: no model-facing surface of a view (lists,
//! search, stubs, `describe`, calls by exposed name) has it. A view (the
//! app's HTML, rendered by a host) calls tools by their names on its own
//! server, not by Quiver's namespaced names; [`ToolView::app_call`] resolves
//! such a name among the tools an app may call (`visibility` names `app`, or
//! none is declared) of the view's *app servers* (servers with at least one
//! tool linking a `ui://` view), and refuses a name two of them share. This
//! module holds what every view of a manifest shares; `app_calls` the
//! view's side.

use std::collections::HashMap;

use quiver_proto::Manifest;

use crate::ToolSet;

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

    /// Manifest tools an app may call as `name` (their name on their
    /// server), of servers that serve an app, in manifest order.
    pub(crate) fn callable(&self, name: &str) -> &[usize] {
        self.callable.get(name).map_or(&[], Vec::as_slice)
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
