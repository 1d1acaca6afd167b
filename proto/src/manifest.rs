//! A manifest version: every upstream server and tool, with the names, stubs and
//! hashes derived from them. Built once per version and shared read-only
//! (`Arc<Manifest>`); nothing in it depends on the node that built it.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde::{Deserialize, Serialize};

use crate::{
    canonical::to_canonical_json,
    finding::Finding,
    hash::StubHash,
    naming::{assign_exposed_names, js_identifier},
    pb,
    stub::{self, StubInput},
    tool::{ToolDef, ToolId},
};

/// One upstream server's part of a manifest, as discovery found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// Upstream id.
    pub id: String,
    /// One-line description shown by code mode's `list`.
    #[serde(default)]
    pub description: String,
    /// Prefix of exposed names (`<namespace>__<tool>`); empty means no prefix.
    pub namespace: String,
    /// Operator tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Operator group.
    #[serde(default)]
    pub group: String,
    /// How the edge validates call arguments for this server's tools.
    #[serde(default)]
    pub validation: ValidationMode,
    /// Optional MCP features it serves besides tools (`completions`, `prompts`,
    /// `resources`), sorted; passthrough forwards these.
    #[serde(default)]
    pub features: Vec<String>,
    /// Tools as the server listed them.
    pub tools: Vec<ToolDef>,
    /// What screening found in the tools served despite it (low severities,
    /// or approved), by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub findings: BTreeMap<String, Vec<Finding>>,
}

impl ServerEntry {
    /// A server `id` (also its namespace) with `tools` and nothing else
    /// set: no description, tags, group, features or findings, default
    /// validation.
    pub fn new(id: impl Into<String>, tools: Vec<ToolDef>) -> ServerEntry {
        let id = id.into();
        ServerEntry {
            namespace: id.clone(),
            id,
            description: String::new(),
            tags: Vec::new(),
            group: String::new(),
            validation: ValidationMode::default(),
            features: Vec::new(),
            tools,
            findings: BTreeMap::new(),
        }
    }
}

/// How call arguments are checked against a tool's `inputSchema` before forwarding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidationMode {
    /// Validate against the schema as written.
    #[default]
    Schema,
    /// Validate, and also reject properties the schema does not declare.
    Strict,
    /// Forward without checking.
    Off,
}

impl ValidationMode {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationMode::Schema => "schema",
            ValidationMode::Strict => "strict",
            ValidationMode::Off => "off",
        }
    }

    /// Parses the configuration spelling (unknown values mean `schema`).
    pub fn parse(text: &str) -> ValidationMode {
        match text {
            "strict" => ValidationMode::Strict,
            "off" => ValidationMode::Off,
            _ => ValidationMode::Schema,
        }
    }
}

impl From<ValidationMode> for pb::ValidationMode {
    fn from(mode: ValidationMode) -> pb::ValidationMode {
        match mode {
            ValidationMode::Schema => pb::ValidationMode::Schema,
            ValidationMode::Strict => pb::ValidationMode::Strict,
            ValidationMode::Off => pb::ValidationMode::Off,
        }
    }
}

impl From<pb::ValidationMode> for ValidationMode {
    /// Unspecified reads as [`ValidationMode::Schema`], like an unknown spelling.
    fn from(mode: pb::ValidationMode) -> ValidationMode {
        match mode {
            pb::ValidationMode::Strict => ValidationMode::Strict,
            pb::ValidationMode::Off => ValidationMode::Off,
            pb::ValidationMode::Schema | pb::ValidationMode::Unspecified => ValidationMode::Schema,
        }
    }
}

/// A server as it appears in a built manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestServer {
    /// Upstream id.
    pub id: String,
    /// JavaScript identifier used by code mode (`tools.<js>`).
    pub js: String,
    /// One-line description.
    pub description: String,
    /// Prefix of exposed names.
    pub namespace: String,
    /// Operator tags.
    pub tags: Vec<String>,
    /// Operator group.
    pub group: String,
    /// Argument validation mode.
    pub validation: ValidationMode,
    /// Optional MCP features besides tools.
    pub features: Vec<String>,
    /// Indices into [`Manifest::tools`] of this server's tools, in tool-name order.
    pub tools: Vec<usize>,
    /// Hash over this server's tool stub hashes, in order.
    pub stub_hash: StubHash,
}

/// A tool as it appears in a built manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestTool {
    /// Identity.
    pub id: ToolId,
    /// Index of its server in [`Manifest::servers`].
    pub server_index: usize,
    /// Namespaced name exposed over MCP.
    pub exposed_name: String,
    /// JavaScript identifier of the tool within its server.
    pub js: String,
    /// The definition.
    pub def: Arc<ToolDef>,
    /// Canonical JSON of the definition.
    pub canonical_json: String,
    /// Rendered TypeScript stub, one-line signature and summary.
    pub stub: stub::RenderedStub,
    /// SHA-256 of the declaration.
    pub stub_hash: StubHash,
    /// What screening found in the definition (see [`crate::finding`]).
    pub findings: Vec<Finding>,
}

/// A built manifest version.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Monotonic version number.
    pub version: u64,
    /// Servers sorted by id.
    pub servers: Vec<ManifestServer>,
    /// Tools sorted by (server id, tool name).
    pub tools: Vec<ManifestTool>,
    /// Hash over the server stub hashes, in order.
    pub stub_hash: StubHash,
    by_exposed: HashMap<String, usize>,
    by_server: HashMap<String, usize>,
}

impl Manifest {
    /// Builds a manifest from discovered servers. Input order does not matter;
    /// duplicate tool names on one server keep the first definition.
    pub fn build(version: u64, mut entries: Vec<ServerEntry>) -> Manifest {
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        entries.dedup_by(|b, a| a.id == b.id);

        // Tools in canonical order, each server's tools sorted by name, duplicates dropped.
        let mut flat: Vec<(usize, ToolDef)> = Vec::new();
        let findings_of = |si: usize, tool: &str| -> Vec<Finding> {
            entries[si].findings.get(tool).cloned().unwrap_or_default()
        };
        for (si, entry) in entries.iter().enumerate() {
            let mut tools = entry.tools.clone();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            tools.dedup_by(|b, a| a.name == b.name);
            flat.extend(tools.into_iter().map(|t| (si, t)));
        }
        let pairs: Vec<(&str, &str)> = flat
            .iter()
            .map(|(si, t)| (entries[*si].namespace.as_str(), t.name.as_str()))
            .collect();
        let exposed = assign_exposed_names(&pairs);

        let server_js = unique_identifiers(entries.iter().map(|e| e.id.as_str()));
        let mut servers: Vec<ManifestServer> = entries
            .iter()
            .zip(server_js)
            .map(|(e, js)| ManifestServer {
                id: e.id.clone(),
                js,
                description: e.description.clone(),
                namespace: e.namespace.clone(),
                tags: e.tags.clone(),
                group: e.group.clone(),
                validation: e.validation,
                features: e.features.clone(),
                tools: Vec::new(),
                stub_hash: StubHash([0; 32]),
            })
            .collect();

        let mut tools = Vec::with_capacity(flat.len());
        let mut start = 0;
        while start < flat.len() {
            let si = flat[start].0;
            let end = flat[start..]
                .iter()
                .position(|(s, _)| *s != si)
                .map_or(flat.len(), |n| start + n);
            let tool_js = unique_identifiers(flat[start..end].iter().map(|(_, t)| t.name.as_str()));
            for (offset, js) in tool_js.into_iter().enumerate() {
                let i = start + offset;
                let def = Arc::new(flat[i].1.clone());
                let canonical_json =
                    to_canonical_json(&serde_json::to_value(&*def).unwrap_or_default());
                let rendered = stub::render(StubInput {
                    server_js: &servers[si].js,
                    tool_js: &js,
                    exposed_name: &exposed[i],
                    def: &def,
                });
                let stub_hash = StubHash::of(rendered.declaration.as_bytes());
                servers[si].tools.push(i);
                tools.push(ManifestTool {
                    id: ToolId {
                        server: servers[si].id.clone(),
                        tool: def.name.clone(),
                    },
                    server_index: si,
                    exposed_name: exposed[i].clone(),
                    js,
                    def,
                    canonical_json,
                    stub: rendered,
                    stub_hash,
                    findings: findings_of(si, &flat[i].1.name),
                });
            }
            start = end;
        }
        for server in &mut servers {
            server.stub_hash = StubHash::combine(server.tools.iter().map(|&i| &tools[i].stub_hash));
        }
        let stub_hash = StubHash::combine(servers.iter().map(|s| &s.stub_hash));
        let by_exposed = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.exposed_name.clone(), i))
            .collect();
        let by_server = servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        Manifest {
            version,
            servers,
            tools,
            stub_hash,
            by_exposed,
            by_server,
        }
    }

    /// An empty manifest (version 0).
    pub fn empty() -> Manifest {
        Manifest::build(0, Vec::new())
    }

    /// The tool exposed under `name`.
    pub fn tool_by_exposed(&self, name: &str) -> Option<&ManifestTool> {
        self.by_exposed.get(name).map(|&i| &self.tools[i])
    }

    /// The index in [`Manifest::tools`] of the tool exposed under `name`.
    pub fn tool_index_by_exposed(&self, name: &str) -> Option<usize> {
        self.by_exposed.get(name).copied()
    }

    /// The server with id `id`.
    pub fn server(&self, id: &str) -> Option<&ManifestServer> {
        self.by_server.get(id).map(|&i| &self.servers[i])
    }

    /// The tools of server `server_index`, in name order.
    pub fn tools_of(&self, server_index: usize) -> impl Iterator<Item = &ManifestTool> {
        self.servers[server_index]
            .tools
            .iter()
            .map(|&i| &self.tools[i])
    }

    /// The tool `tool` of server `server`.
    pub fn tool(&self, server: &str, tool: &str) -> Option<&ManifestTool> {
        let si = *self.by_server.get(server)?;
        self.tools_of(si).find(|t| t.def.name == tool)
    }

    /// The server entries this manifest was built from (for re-building or shipping).
    pub fn entries(&self) -> Vec<ServerEntry> {
        self.servers
            .iter()
            .map(|s| ServerEntry {
                id: s.id.clone(),
                description: s.description.clone(),
                namespace: s.namespace.clone(),
                tags: s.tags.clone(),
                group: s.group.clone(),
                validation: s.validation,
                features: s.features.clone(),
                tools: s
                    .tools
                    .iter()
                    .map(|&i| (*self.tools[i].def).clone())
                    .collect(),
                findings: s
                    .tools
                    .iter()
                    .map(|&i| &self.tools[i])
                    .filter(|t| !t.findings.is_empty())
                    .map(|t| (t.def.name.clone(), t.findings.clone()))
                    .collect(),
            })
            .collect()
    }

    /// The wire form.
    pub fn to_pb(&self) -> pb::Manifest {
        pb::Manifest {
            version: self.version,
            servers: self
                .servers
                .iter()
                .map(|s| pb::Server {
                    id: s.id.clone(),
                    description: s.description.clone(),
                    namespace: s.namespace.clone(),
                    tags: s.tags.clone(),
                    group: s.group.clone(),
                    validation: pb::ValidationMode::from(s.validation).into(),
                    features: s.features.clone(),
                })
                .collect(),
            tools: self
                .tools
                .iter()
                .map(|t| pb::Tool {
                    server: t.id.server.clone(),
                    tool: t.id.tool.clone(),
                    exposed_name: t.exposed_name.clone(),
                    definition_json: t.canonical_json.clone(),
                    findings: t.findings.iter().map(pb::Finding::from).collect(),
                })
                .collect(),
            stub_hash: self.stub_hash.to_hex(),
        }
    }

    /// Rebuilds a manifest from its wire form; the stub hash is recomputed locally
    /// and returned beside the one the sender claimed.
    pub fn from_pb(message: &pb::Manifest) -> Result<Manifest, serde_json::Error> {
        let mut entries: Vec<ServerEntry> = message
            .servers
            .iter()
            .map(|s| ServerEntry {
                id: s.id.clone(),
                description: s.description.clone(),
                namespace: s.namespace.clone(),
                tags: s.tags.clone(),
                group: s.group.clone(),
                validation: s.validation().into(),
                features: s.features.clone(),
                tools: Vec::new(),
                findings: BTreeMap::new(),
            })
            .collect();
        let index: HashMap<String, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        for tool in &message.tools {
            let def: ToolDef = serde_json::from_str(&tool.definition_json)?;
            if let Some(&i) = index.get(&tool.server) {
                if !tool.findings.is_empty() {
                    entries[i].findings.insert(
                        def.name.clone(),
                        tool.findings.iter().map(Finding::from).collect(),
                    );
                }
                entries[i].tools.push(def);
            }
        }
        Ok(Manifest::build(message.version, entries))
    }
}

/// Distinct JavaScript identifiers for `names`, in order; a clash gets `_2`, `_3`, ….
fn unique_identifiers<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .map(|name| {
            let base = js_identifier(name);
            let mut candidate = base.clone();
            let mut n = 2;
            while !seen.insert(candidate.clone()) {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            candidate
        })
        .collect()
}
