//! Tool catalogue files: the livemcpbench format, the oslook format, and a plain
//! list of `{name, description, inputSchema}`.
//!
//! The shape is detected from the document itself:
//! - a list whose entries have `tools`: servers (livemcpbench:
//!   `[{name, description, tools: {<key>: {tools: [tool…]}}}]`; `tools` may also be
//!   a plain list of tools);
//! - any other list: one server's tools (`[{name, description, inputSchema}]`);
//! - an object with a `tools` list: one server's tools (a `tools/list` result);
//! - any other object: servers by id (oslook: `{<server>: {tools: [tool…]}}`).
//!
//! Tools accept `inputSchema` or `input_schema` (missing or `null` means
//! `{"type":"object"}`), and likewise `outputSchema`/`output_schema`.

use std::{collections::HashSet, fmt, path::Path};

use serde::{
    Deserialize, Deserializer,
    de::{MapAccess, SeqAccess, Visitor},
};
use serde_json::{Map, Value};

use crate::{
    stub::first_sentence,
    tool::{ToolDef, empty_object_schema},
};

/// Longest server description kept, in characters.
pub const MAX_SERVER_DESCRIPTION_CHARS: usize = 160;

/// One server of a catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogServer {
    /// Server id (sanitised to `[a-zA-Z0-9_-]`, unique within the catalogue).
    pub id: String,
    /// One-line description (may be empty).
    pub description: String,
    /// Its tools.
    pub tools: Vec<ToolDef>,
}

/// A whole catalogue.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    /// Servers, in file order.
    pub servers: Vec<CatalogServer>,
}

/// Why a catalogue could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The file could not be read.
    #[error("reading catalog {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not JSON or not in a known shape.
    #[error("catalog {path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
}

impl Catalog {
    /// Reads a catalogue file; `default_server` names the server of a plain tool list.
    pub fn load(path: &Path, default_server: &str) -> Result<Catalog, CatalogError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Io {
            path: origin.clone(),
            source,
        })?;
        Catalog::parse(&text, &origin, default_server)
    }

    /// Parses catalogue text (`origin` names it in errors).
    ///
    /// ```
    /// use quiver_proto::catalog::Catalog;
    /// let text = r#"[{"name": "echo", "description": "Echo it.", "inputSchema": null}]"#;
    /// let catalog = Catalog::parse(text, "inline", "demo").unwrap();
    /// assert_eq!(catalog.servers[0].id, "demo");
    /// assert_eq!(catalog.servers[0].tools[0].input_schema, serde_json::json!({"type": "object"}));
    /// ```
    pub fn parse(text: &str, origin: &str, default_server: &str) -> Result<Catalog, CatalogError> {
        let format_error = |message: String| CatalogError::Format {
            path: origin.to_string(),
            message,
        };
        let document: Document = serde_json::from_str(text)
            .map_err(|e| format_error(format!("not a JSON catalogue: {e}")))?;
        let raw = match document {
            Document::List(entries) if entries.is_empty() => Ok(Vec::new()),
            Document::List(entries) if entries[0].get("tools").is_some() => server_list(&entries),
            Document::List(entries) => {
                tool_list(&entries, "").map(|tools| vec![plain_server(default_server, tools)])
            }
            Document::Map(entries) => match entries.iter().find(|(key, _)| key == "tools") {
                Some((_, Value::Array(tools))) => tool_list(tools, "tools ")
                    .map(|tools| vec![plain_server(default_server, tools)]),
                _ => servers_by_id(&entries),
            },
        }
        .map_err(|e| format_error(e.to_string()))?;

        let mut taken = HashSet::new();
        let servers = raw
            .into_iter()
            .map(|server| CatalogServer {
                id: unique_id(sanitise_server_id(&server.name), &mut taken),
                description: first_sentence(&server.description, MAX_SERVER_DESCRIPTION_CHARS),
                tools: server.tools,
            })
            .collect();
        Ok(Catalog { servers })
    }

    /// Reads one server of a catalogue file, by its id: what one mock
    /// upstream of a large catalogue needs. For a list of servers (the
    /// LiveMCPBench shape) only the server asked for is built and the others
    /// are read for their names (their ids depend on each other), so
    /// hundreds of processes serving one 10,000-tool file each hold their own
    /// tools, not the whole catalogue. `None` when no server has that id;
    /// other shapes are read whole.
    pub fn load_server(
        path: &Path,
        default_server: &str,
        id: &str,
    ) -> Result<Option<CatalogServer>, CatalogError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Io {
            path: origin.clone(),
            source,
        })?;
        let format_error = |message: String| CatalogError::Format {
            path: origin.clone(),
            message,
        };
        /// What ids are made from, ignoring the rest of an entry.
        #[derive(Deserialize)]
        struct Named {
            name: Option<String>,
            tools: Option<serde::de::IgnoredAny>,
        }
        let entries: Option<Vec<&serde_json::value::RawValue>> = serde_json::from_str(&text).ok();
        let listed = entries.as_ref().and_then(|entries| {
            let named: Vec<Named> = entries
                .iter()
                .map(|entry| serde_json::from_str(entry.get()).ok())
                .collect::<Option<_>>()?;
            named
                .iter()
                .all(|n| n.name.is_some() && n.tools.is_some())
                .then_some(named)
        });
        let (Some(entries), Some(named)) = (entries, listed) else {
            let catalog = Catalog::parse(&text, &origin, default_server)?;
            return Ok(catalog.servers.into_iter().find(|s| s.id == id));
        };
        let mut taken = HashSet::new();
        let Some(index) = named.iter().position(|n| {
            unique_id(
                sanitise_server_id(n.name.as_deref().unwrap_or_default()),
                &mut taken,
            ) == id
        }) else {
            return Ok(None);
        };
        let entry: Value = serde_json::from_str(entries[index].get())
            .map_err(|e| format_error(format!("not a JSON catalogue: {e}")))?;
        let raw = server_list(std::slice::from_ref(&entry))
            .map_err(|e| format_error(e.to_string()))?
            .pop();
        Ok(raw.map(|server| CatalogServer {
            id: id.to_string(),
            description: first_sentence(&server.description, MAX_SERVER_DESCRIPTION_CHARS),
            tools: server.tools,
        }))
    }

    /// Total number of tools.
    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }
}

/// A server before its id is sanitised and made unique.
struct RawServer {
    name: String,
    description: String,
    tools: Vec<ToolDef>,
}

fn plain_server(name: &str, tools: Vec<ToolDef>) -> RawServer {
    RawServer {
        name: name.to_string(),
        description: String::new(),
        tools,
    }
}

/// What is wrong with a part of a catalogue.
#[derive(Debug, thiserror::Error)]
enum ShapeProblem {
    /// A server entry of a list.
    #[error("expected an object with `name` and `tools` (a list of servers, as livemcpbench)")]
    NotServer,
    /// A group of tools.
    #[error("expected an object with a `tools` list")]
    NotToolGroup,
    /// A server's `tools`.
    #[error("expected `tools` to be a list of tools or an object of tool groups")]
    NotTools,
    /// A server of an object of servers.
    #[error("expected an object with a `tools` list (servers by id, as oslook)")]
    NotServerById,
    /// A tool.
    #[error("expected an object with `name`, `description` and `inputSchema`")]
    NotTool,
    /// A tool whose name is not a string.
    #[error(
        "expected an object with `name`, `description` and `inputSchema` (`name` must be a string)"
    )]
    ToolName,
    /// A member that must be a string.
    #[error("`{0}` must be a string")]
    NotString(&'static str),
}

/// A [`ShapeProblem`] and where it is (`entry 2 (`fs`): tools: tool 0: `).
#[derive(Debug, thiserror::Error)]
#[error("{at}{problem}")]
struct ShapeError {
    at: String,
    problem: ShapeProblem,
}

impl ShapeProblem {
    /// This problem, at `at`.
    fn at(self, at: impl Into<String>) -> ShapeError {
        ShapeError {
            at: at.into(),
            problem: self,
        }
    }
}

/// livemcpbench: `[{name, description, tools: {<key>: {tools: [tool…]}} | [tool…]}]`.
fn server_list(entries: &[Value]) -> Result<Vec<RawServer>, ShapeError> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let expected = || ShapeProblem::NotServer.at(format!("entry {i}: "));
            let server = entry.as_object().ok_or_else(expected)?;
            let name = server
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(expected)?;
            let at = format!("entry {i} (`{name}`): ");
            let description = optional_string(server, "description").map_err(|e| e.at(&at))?;
            let tools = match server.get("tools") {
                Some(Value::Array(tools)) => tool_list(tools, &format!("{at}tools: "))?,
                Some(Value::Object(groups)) => {
                    let mut tools = Vec::new();
                    for (key, group) in groups {
                        let group_at = format!("{at}tools.{key}: ");
                        match group.get("tools") {
                            Some(Value::Array(list)) => tools.extend(tool_list(list, &group_at)?),
                            _ => return Err(ShapeProblem::NotToolGroup.at(group_at)),
                        }
                    }
                    tools
                }
                _ => return Err(ShapeProblem::NotTools.at(at)),
            };
            Ok(RawServer {
                name: name.to_string(),
                description,
                tools,
            })
        })
        .collect()
}

/// oslook: `{<server>: {tools: [tool…], server_info: {description}}}`.
fn servers_by_id(entries: &[(String, Value)]) -> Result<Vec<RawServer>, ShapeError> {
    entries
        .iter()
        .map(|(name, server)| {
            let at = format!("server `{name}`: ");
            let expected = || ShapeProblem::NotServerById.at(&at);
            let server = server.as_object().ok_or_else(expected)?;
            let Some(Value::Array(tools)) = server.get("tools") else {
                return Err(expected());
            };
            let tools = tool_list(tools, &at)?;
            let description = match server.get("description") {
                Some(Value::String(text)) => text.clone(),
                _ => server
                    .get("server_info")
                    .and_then(|info| info.get("description"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            };
            Ok(RawServer {
                name: name.clone(),
                description,
                tools,
            })
        })
        .collect()
}

fn tool_list(tools: &[Value], at: &str) -> Result<Vec<ToolDef>, ShapeError> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| tool_def(tool).map_err(|e| e.at(format!("{at}tool {i}: "))))
        .collect()
}

fn tool_def(tool: &Value) -> Result<ToolDef, ShapeProblem> {
    let map = tool.as_object().ok_or(ShapeProblem::NotTool)?;
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => return Err(ShapeProblem::ToolName),
    };
    let title = map.get("title").and_then(Value::as_str).map(str::to_string);
    let description = optional_string(map, "description")?;
    let schema = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| map.get(*k).filter(|v| !v.is_null()))
            .cloned()
    };
    Ok(ToolDef {
        name,
        title,
        description,
        input_schema: schema(["inputSchema", "input_schema"]).unwrap_or_else(empty_object_schema),
        output_schema: schema(["outputSchema", "output_schema"]),
        annotations: map.get("annotations").filter(|v| !v.is_null()).cloned(),
        meta: map.get("_meta").filter(|v| v.is_object()).cloned(),
    })
}

/// A string member; missing or `null` is empty.
fn optional_string(map: &Map<String, Value>, key: &'static str) -> Result<String, ShapeProblem> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(ShapeProblem::NotString(key)),
    }
}

/// A server id made of `[a-zA-Z0-9_-]`: every run of other characters (and of
/// `-`) becomes one `-`, leading and trailing `-` are dropped, case is kept;
/// nothing left reads `server`.
pub fn sanitise_server_id(name: &str) -> String {
    let mut id = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if separator && !id.is_empty() {
                id.push('-');
            }
            separator = false;
            id.push(c);
        } else {
            separator = true;
        }
    }
    if id.is_empty() {
        "server".to_string()
    } else {
        id
    }
}

/// `id`, or `id-2`, `id-3`, … when taken.
fn unique_id(id: String, taken: &mut HashSet<String>) -> String {
    if taken.insert(id.clone()) {
        return id;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{id}-{n}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// The top level of a catalogue, object members kept in file order.
enum Document {
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of servers, a list of tools, or an object of servers by id")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = seq.next_element::<Value>()? {
            entries.push(entry);
        }
        Ok(Document::List(entries))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Value>()? {
            entries.push(entry);
        }
        Ok(Document::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: Value) -> Result<Catalog, CatalogError> {
        Catalog::parse(&value.to_string(), "test.json", "default_server")
    }

    fn message(result: Result<Catalog, CatalogError>) -> String {
        match result {
            Err(CatalogError::Format { message, .. }) => message,
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    #[test]
    fn one_server_of_a_list_is_the_same_as_in_the_whole_catalogue() {
        let dir = std::env::temp_dir().join(format!("quiver-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("servers.json");
        // Two names that sanitise alike: the second's id depends on the first.
        let text = r#"[
            {"name": "Bing CN", "description": "Search. More.", "tools": {"bing": {"tools": [{"name": "a"}]}}},
            {"name": "Bing/CN", "description": "Other.", "tools": [{"name": "b", "description": "B."}]},
            {"name": "Maps", "tools": [{"name": "c"}, {"name": "d"}]}
        ]"#;
        std::fs::write(&path, text).unwrap();
        let whole = Catalog::load(&path, "default").unwrap();
        assert_eq!(whole.servers.len(), 3);
        for server in &whole.servers {
            let one = Catalog::load_server(&path, "default", &server.id).unwrap();
            assert_eq!(one.as_ref(), Some(server), "{}", server.id);
        }
        assert_eq!(
            Catalog::load_server(&path, "default", "nope").unwrap(),
            None
        );
        // Another shape is read whole, with the same answer.
        std::fs::write(&path, r#"[{"name": "echo"}]"#).unwrap();
        let plain = Catalog::load_server(&path, "demo", "demo")
            .unwrap()
            .unwrap();
        assert_eq!(plain.tools[0].name, "echo");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn livemcpbench_shape() {
        let catalog = parse(json!([
            {
                "name": "Bing CN MCP",
                "description": "  一个中文必应搜索工具。可以直接搜索 ",
                "category": "Discovery",
                "config": {},
                "tools": {"bing": {"server_name": "bing", "tools": [
                    {"name": "search", "description": null, "inputSchema": {"type": "object"}, "annotations": null},
                    {"name": "fetch", "description": "Fetch a page.", "inputSchema": null, "outputSchema": {"type": "object"}}
                ]}}
            },
            {"name": "Bing CN MCP", "description": "", "tools": [{"name": "x"}]}
        ]))
        .expect("valid catalogue");
        assert_eq!(catalog.servers.len(), 2);
        let first = &catalog.servers[0];
        assert_eq!(first.id, "Bing-CN-MCP");
        assert_eq!(first.description, "一个中文必应搜索工具。");
        assert_eq!(first.tools.len(), 2);
        assert_eq!(first.tools[0].description, "");
        assert_eq!(first.tools[0].annotations, None);
        assert_eq!(first.tools[1].input_schema, json!({"type": "object"}));
        assert_eq!(
            first.tools[1].output_schema,
            Some(json!({"type": "object"}))
        );
        assert_eq!(catalog.servers[1].id, "Bing-CN-MCP-2");
        assert_eq!(catalog.tool_count(), 3);
    }

    #[test]
    fn oslook_shape_keeps_file_order() {
        let text = r#"{
            "zeta": {"tools": [{"name": "a", "description": "A.", "input_schema": {"type": "object", "properties": {}}}]},
            "alpha server": {"tools": [], "server_info": {"description": "The alpha. Second sentence."}},
            "mid": {"tools": [], "server_info": null}
        }"#;
        let catalog = Catalog::parse(text, "oslook.json", "unused").expect("valid catalogue");
        let ids: Vec<&str> = catalog.servers.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["zeta", "alpha-server", "mid"]);
        assert_eq!(catalog.servers[1].description, "The alpha.");
        assert_eq!(
            catalog.servers[0].tools[0].input_schema,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn plain_lists_make_one_server() {
        let catalog = parse(json!([
            {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}},
            {"name": "add", "input_schema": {"type": "object", "properties": {"a": {"type": "number"}}}}
        ]))
        .expect("valid catalogue");
        assert_eq!(catalog.servers.len(), 1);
        assert_eq!(catalog.servers[0].id, "default_server");
        assert_eq!(
            catalog.servers[0].tools[1].input_schema["properties"]["a"]["type"],
            "number"
        );

        let listed = parse(json!({"tools": [{"name": "echo"}]})).expect("tools/list result");
        assert_eq!(listed.servers[0].id, "default_server");
        assert_eq!(listed.tool_count(), 1);

        assert_eq!(parse(json!([])).expect("empty list"), Catalog::default());
    }

    #[test]
    fn server_ids_are_sanitised_and_unique() {
        assert_eq!(
            sanitise_server_id("MCP Server: Mermaid Validator"),
            "MCP-Server-Mermaid-Validator"
        );
        assert_eq!(sanitise_server_id("鸣潮 MCP Server"), "MCP-Server");
        assert_eq!(
            sanitise_server_id("Context7 MCP - Up-to-date"),
            "Context7-MCP-Up-to-date"
        );
        assert_eq!(sanitise_server_id("--snake_case--"), "snake_case");
        assert_eq!(sanitise_server_id("八字"), "server");
        assert_eq!(sanitise_server_id(""), "server");
        let mut taken = HashSet::new();
        let ids: Vec<String> = ["a", "a", "a-2", "a"]
            .iter()
            .map(|id| unique_id(id.to_string(), &mut taken))
            .collect();
        assert_eq!(ids, ["a", "a-2", "a-2-2", "a-3"]);
    }

    #[test]
    fn errors_say_where_and_what() {
        let not_json = message(Catalog::parse("{nope", "x.json", "d"));
        assert!(not_json.starts_with("not a JSON catalogue"), "{not_json}");
        assert!(message(parse(json!("text"))).contains("expected a list of servers"));
        let entry = message(parse(json!([{"name": "a", "tools": []}, {"tools": []}])));
        assert_eq!(
            entry,
            "entry 1: expected an object with `name` and `tools` (a list of servers, as livemcpbench)"
        );
        let tool = message(parse(
            json!([{"name": "a", "tools": {"g": {"tools": [{"name": "ok"}, {"description": "x"}]}}}]),
        ));
        assert_eq!(
            tool,
            "entry 0 (`a`): tools.g: tool 1: expected an object with `name`, `description` and `inputSchema` \
             (`name` must be a string)"
        );
        let group = message(parse(json!([{"name": "a", "tools": {"g": []}}])));
        assert_eq!(
            group,
            "entry 0 (`a`): tools.g: expected an object with a `tools` list"
        );
        let server = message(parse(json!({"s": {"tools": {}}})));
        assert_eq!(
            server,
            "server `s`: expected an object with a `tools` list (servers by id, as oslook)"
        );
        let description = message(parse(json!([{"name": "t", "description": 5}])));
        assert_eq!(description, "tool 0: `description` must be a string");
        let error = Catalog::parse("[1]", "cat.json", "d").expect_err("not a tool");
        assert_eq!(
            error.to_string(),
            "catalog cat.json: tool 0: expected an object with `name`, `description` and `inputSchema`"
        );
    }

    #[test]
    fn missing_files_are_io_errors() {
        let error = Catalog::load(Path::new("/nonexistent/quiver/catalog.json"), "d")
            .expect_err("no such file");
        assert!(matches!(error, CatalogError::Io { .. }));
        assert!(
            error
                .to_string()
                .starts_with("reading catalog /nonexistent/quiver/catalog.json: ")
        );
    }
}
